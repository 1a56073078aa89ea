"""Jobs on Spark executors with nothing installed: ``kafka-dr pack-executor-env`` packs kafka-dr
and its clients, ``spark.executor_env`` ships the archive, and the executors' own Python (which
imports neither kafka-dr nor confluent-kafka) runs the continuous copy and the comparison from it.

Run as a user types them: the lab's Spark standalone cluster, the commands from the venv's bin
with the venv not on PATH."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from test_replication import flow_config

from kafka_checks import check_replica, read_sent, read_topic, stop_once_replicated, varied_rows
from kafka_dr.kafka import clients
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.kafka.writing import produce_all
from kafka_dr.spark.executor_env import ARCHIVE_ALIAS, default_python

pytestmark = [pytest.mark.lab, pytest.mark.slow]

BIN = Path(sys.executable).parent


def _imports(python: str, module: str, env: dict) -> bool:
    return subprocess.run([python, "-c", f"import {module}"], env=env, capture_output=True, timeout=60).returncode == 0


def test_executors_with_a_bare_python_copy_and_compare_from_the_packed_environment(
    lab, lab_config, spark_cluster, tmp_path, topic_name
):
    # the workers' environment is this process's (the fixture starts them with it): the Python
    # they run by name must be bare
    workers_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    assert not os.environ.get("PYTHONPATH")
    for module in ("kafka_dr", "confluent_kafka", "pyarrow"):
        assert not _imports(default_python(), module, workers_env), f"{default_python()} on the workers has {module}"

    archive = tmp_path / "executor-env.tar.gz"
    user_env = {**workers_env, "KAFKA_DR_NO_COLOR": "1"}
    packed = subprocess.run(
        [str(BIN / "kafka-dr"), "pack-executor-env", "--out", str(archive)],
        env=user_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert packed.returncode == 0, packed.stderr
    assert f"executor_env: {archive}" in packed.stdout

    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic_name, partitions=3)
    # produced now: the comparison's latency check measures from the records' timestamps
    t0_ms = int(time.time() * 1000)
    produce_all(clients.producer(east), topic_name, list(varied_rows("bare", 1500, 3, t0_ms=t0_ms)))
    sent = read_sent(east, topic_name)
    config = flow_config(lab, tmp_path, [topic_name])
    doc = yaml.safe_load(config.read_text())
    doc["spark"] = {
        "master": spark_cluster.running_master(),
        "executor_env": str(archive),
        "conf": {"spark.ui.enabled": "false"},
    }
    config.write_text(yaml.safe_dump(doc, sort_keys=False))

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(BIN / "kafka-dr"), *args, "--config", str(config)],
            env=user_env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )

    # continuous: the Python data source plans on the driver and reads on the executors (an
    # incremental run's plain Spark tasks on bare executors: tests/e2e/test_installed_deployment.py);
    # stopped once the suite reads every record on west (a loaded machine unpacks and starts slowly)
    stop_file, log = tmp_path / "stop", tmp_path / "job.log"
    job = subprocess.Popen(
        [str(BIN / "kafka-dr"), "replicate", "--config", str(config), "--flow", "east_to_west"]
        + ["--mode", "continuous", "--master", doc["spark"]["master"], "--task-seconds", "10"]
        + ["--stop-file", str(stop_file), "--max-duration", "600"],
        env=user_env,
        cwd=tmp_path,
        stdout=open(log, "ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        stop_once_replicated(job, stop_file, log, west, topic_name, len(sent), timeout=300)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
    check_replica("west", read_topic(west, topic_name), sent, source_topic=topic_name)

    # the records waited for the job's start-up on bare executors (a loaded machine stretches it
    # past the default minute): the latency check must pass under the bound the suite saw itself,
    # every record on west this long after the first was produced
    seen_all_s = math.ceil(time.time() - t0_ms / 1000) + 1
    doc["thresholds"] = {"latency_p99_max_seconds": max(60, seen_all_s)}
    config.write_text(yaml.safe_dump(doc, sort_keys=False))
    compared = run("dq", "--flow", "east_to_west", "--json")
    assert compared.returncode == 0, compared.stdout[-2000:] + compared.stderr[-3000:]
    rows = [json.loads(line) for line in compared.stdout.splitlines() if line.startswith("{")]
    assert rows and rows[-1]["success"] and rows[-1]["checked_partitions"] >= 3, compared.stdout[-2000:]

    # the executors unpacked the archive in their own folders and ran from it
    unpacked = list((spark_cluster.folder / "work").glob(f"worker-*/app-*/*/{ARCHIVE_ALIAS}/KAFKA_DR_EXECUTOR_ENV"))
    assert unpacked, "no executor unpacked the environment"

"""An incremental run that finds nothing new decides so with plain Kafka clients and ends
before any JVM starts; one with a small backlog copies it in its driver, without Spark (and with a forked second
process where it has two shares, none where the config keeps the copy in the driver alone); one
told to copy every backlog with Spark (``--driver-copy-max-records 0``) needs Java.

The proof that no JVM starts is from outside: those runs are given an environment in which
Java cannot start (``JAVA_HOME`` names a folder without it, and no ``java`` is on the
``PATH``); the same environment fails a run that must start Spark.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kafka_checks import check_replica, produce_varied, read_topic
from kafka_dr.kafka import clients
from kafka_dr.kafka.topics import ensure_topic

pytestmark = [pytest.mark.lab]

REPO = Path(__file__).resolve().parents[2]


def _config(lab, tmp_path: Path, topic: str) -> Path:
    """The lab's config narrowed to ``topic``, with internal topics of its own (its heartbeats
    and progress are this test's alone), every flow incremental."""
    doc = yaml.safe_load(lab.config_file.read_text())
    doc["internal_prefix"] = f"_kafka_dr_{topic}"
    for f in doc["flows"]:
        f["topics"] = {"allow": [topic]}
        f["mode"] = "incremental"
    path = tmp_path / "kafka-dr.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _replicate(config: Path, java: bool, *more: str) -> subprocess.CompletedProcess:
    """``kafka-dr replicate`` as a user types it (``more`` arguments after it); without Java
    when ``java`` is False."""
    venv_bin = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{venv_bin}:{os.environ['PATH']}"}
    if not java:
        no_java = config.parent / "no-java"
        no_java.mkdir(exist_ok=True)
        path = [d for d in env["PATH"].split(":") if not (Path(d) / "java").exists()]
        env.update(JAVA_HOME=str(no_java), PATH=":".join(path))
        assert shutil.which("java", path=env["PATH"]) is None
    command = ["kafka-dr", "replicate", "--config", str(config), "--flow", "east_to_west", "--mode", "incremental"]
    return subprocess.run([*command, *more, "--json"], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)


def _summary(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])["kafka_dr.summary"]


def test_nothing_new_and_a_small_backlog_start_no_jvm_and_a_run_told_to_use_spark_needs_it(
    lab, lab_config, tmp_path, topic_name
):
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    ensure_topic(clients.admin(east), topic_name, partitions=3)  # partition 2 stays empty
    sent = produce_varied(east, topic_name, "first", 20, partitions=2)
    config = _config(lab, tmp_path, topic_name)

    first = _summary(_replicate(config, True, "--driver-copy-max-records", "0"))  # with Spark
    assert (first["stopped_by"], first["written_by_topic"]) == ("completed", {topic_name: 20}), first
    check_replica("west", read_topic(west, topic_name), sent)
    again = _summary(_replicate(config, java=False))
    assert (again["stopped_by"], again["records_written"], again["batches"]) == ("nothing new", 0, 0), again

    later = produce_varied(east, topic_name, "later", 6, partitions=2)
    refused = _replicate(config, False, "--driver-copy-max-records", "0")  # Spark must start, and cannot
    assert refused.returncode != 0, refused.stdout
    # a small backlog: copied in the driver, no JVM; its two partitions' shares in two processes
    run = _replicate(config, False, "--verbose")
    copied = _summary(run)
    assert (copied["stopped_by"], copied["written_by_topic"]) == ("completed", {topic_name: 6}), copied
    assert "copied in the driver, no Spark, with a second process (pid " in run.stdout + run.stderr
    check_replica("west", read_topic(west, topic_name), sent + later)
    assert _summary(_replicate(config, java=False))["stopped_by"] == "nothing new"

    # the driver alone where the config says so (a host short of memory): no second process
    doc = yaml.safe_load(config.read_text())
    doc.setdefault("spark", {})["driver_copy_processes"] = 1
    alone = config.with_name("alone.yaml")
    alone.write_text(yaml.safe_dump(doc, sort_keys=False))
    last = produce_varied(east, topic_name, "last", 6, partitions=2)
    run = _replicate(alone, False, "--verbose")
    assert (_summary(run)["stopped_by"], _summary(run)["written_by_topic"]) == ("completed", {topic_name: 6})
    assert "copied in the driver, no Spark" in run.stderr + run.stdout
    assert "second process" not in run.stderr + run.stdout
    check_replica("west", read_topic(west, topic_name), sent + later + last)

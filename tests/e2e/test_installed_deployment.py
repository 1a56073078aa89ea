"""A deployment as a platform team makes one: kafka-dr's wheel installed into a Python 3.12
virtualenv of its own together with Airflow 3.1.8 (not the lab's pinned Airflow), Airflow
started from that virtualenv as a service (``kafka-dr airflow up``: api-server, scheduler,
dag-processor, triggerer on PostgreSQL) with its DAGs and status page coming from the installed
package, a replication flow run by its DAG on the lab's Spark cluster whose executors have only
a bare Python 3.12 (the job ships its environment, ``spark.executor_env``), and a dry-run
failover triggered through the REST API that ends green with its plan and its verdict.

Nothing here imports the checkout's kafka-dr into the deployment: every command runs from the
virtualenv's bin, from a folder outside the checkout. The suite reads the clusters itself."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import TEST_LAB
from kafka_checks import check_replica, read_sent, read_topic, varied_rows
from kafka_dr import __version__
from kafka_dr.gameday.airflow_api import AirflowApi
from kafka_dr.kafka import clients
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.kafka.writing import produce_all
from kafka_dr.lab.topology import spark_section
from kafka_dr.spark.executor_env import ARCHIVE_ALIAS
from wheels import build, copy_checkout, python_for, uv_install

pytestmark = [pytest.mark.lab, pytest.mark.airflow, pytest.mark.e2e, pytest.mark.slow]

AIRFLOW = "3.1.8"
PORT = int(os.environ.get("KAFKA_DR_TEST_AIRFLOW_PORT", "28080"))
DB_PORT = int(os.environ.get("KAFKA_DR_TEST_POSTGRES_PORT", "28432"))


@pytest.fixture(scope="module")
def deployment(tmp_path_factory) -> dict:
    """The wheel with its ``[lab]`` extra (the lab's PostgreSQL drivers) and Airflow 3.1.8 in a
    Python 3.12 virtualenv; the environment its commands run in."""
    home = tmp_path_factory.mktemp("deployment")
    wheels = home / "wheels"
    build(copy_checkout(home / "source"), wheels, "--wheel")
    venv = home / "venv"
    subprocess.run([python_for("3.12"), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (home / "airflow.txt").write_text(f"apache-airflow=={AIRFLOW}\n")
    wheel = wheels / f"kafka_dr-{__version__}-py3-none-any.whl"
    proc = subprocess.run(
        uv_install(venv) + [f"{wheel}[lab]", "--override", str(home / "airflow.txt")],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    env = {
        "PATH": f"{venv / 'bin'}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": os.environ.get("HOME", str(home)),
        "JAVA_HOME": os.environ.get("JAVA_HOME", ""),
        "KAFKA_DR_NO_COLOR": "1",
    }
    return {"venv": venv, "home": home, "env": env}


def _run(d: dict, *args: str, timeout: float = 600) -> str:
    proc = subprocess.run(
        [str(d["venv"] / "bin" / args[0]), *args[1:]],
        cwd=d["home"],
        env=d["env"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"{' '.join(args)}: {proc.stdout[-3000:]}{proc.stderr[-3000:]}"
    return proc.stdout


@contextlib.contextmanager
def _airflow(d: dict, config: Path):
    """``kafka-dr airflow up`` from the deployment's virtualenv; yields a signed-in REST client."""
    # where PostgreSQL's OS user may enter (not under /tmp/pytest-of-*)
    folder = TEST_LAB.with_name(TEST_LAB.name + "-deploy")
    subprocess.run([str(d["venv"] / "bin/kafka-dr"), "airflow", "down", "--dir", str(folder)], env=d["env"])
    try:
        up = _run(
            d,
            *("kafka-dr", "airflow", "up", "--dir", str(folder), "--config", str(config)),
            *("--port", str(PORT), "--db-port", str(DB_PORT)),
        )
        read_password = re.search(r"^password:  (cat \S+)", up, re.M).group(1)
        printed = subprocess.run(["bash", "-c", read_password], capture_output=True, text=True, check=True).stdout
        yield AirflowApi(f"http://127.0.0.1:{PORT}", "operator", json.loads(printed)["operator"])
    finally:
        _run(d, "kafka-dr", "airflow", "down", "--dir", str(folder), timeout=180)


def _config(lab, d: dict, spark_master: str, topic: str) -> Path:
    """The lab's config narrowed to ``topic``: east -> west incremental (the run the test
    triggers), west -> east off; Spark on the lab's cluster with the packed environment."""
    archive = d["home"] / "executor-env.tar.gz"
    packed = _run(d, "kafka-dr", "pack-executor-env", "--out", str(archive))
    assert "executor_python: python3.12" in packed, packed
    doc = yaml.safe_load(lab.config_file.read_text())
    for f in doc["flows"]:
        f["topics"] = {"allow": [re.escape(topic)]}
        f.update({"mode": "incremental", "enabled": f["source"] == "east"})
    # every backlog on the executors, however small (else the driver copies it without Spark)
    doc["spark"] = {**spark_section(spark_master), "executor_env": str(archive), "driver_copy_max_records": 0}
    doc["spark"]["conf"]["spark.cores.max"] = "2"  # both workers' executors
    path = d["home"] / "kafka-dr.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_an_installed_deployment_on_python_3_12_replicates_on_bare_executors_and_dry_runs_a_failover(
    lab, lab_config, spark_cluster, deployment, topic_name
):
    d = deployment
    versions = _run(d, "python", "-c", "import sys, airflow; print(sys.version_info[:2], airflow.__version__)")
    assert versions.strip() == f"(3, 12) {AIRFLOW}", versions
    bare = subprocess.run(
        ["python3.12", "-c", "import confluent_kafka"], env=spark_cluster.environ, capture_output=True, timeout=60
    )
    assert bare.returncode != 0, "the Spark workers' python3.12 is not bare"

    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic_name, partitions=3)
    produce_all(clients.producer(east), topic_name, list(varied_rows("deployed", 900, 3, int(time.time() * 1000))))
    sent = read_sent(east, topic_name)
    config = _config(lab, d, spark_cluster.running_master(), topic_name)

    with _airflow(d, config) as api:
        failover = api.get("/api/v2/dags/dr_failover")
        site = d["venv"] / "lib" / "python3.12" / "site-packages"
        assert Path(failover["fileloc"]).is_relative_to(site), failover["fileloc"]  # the installed package's DAGs
        plugins = api.get("/api/v2/plugins").get("plugins", [])
        assert [p for p in plugins if p["name"] == "kafka_dr_status"], plugins

        api.unpause("dr_replicate_east_to_west")
        run = api.trigger("dr_replicate_east_to_west", {})
        done = api.wait_run("dr_replicate_east_to_west", run, timeout=600)
        assert done["state"] == "success", api.task_states("dr_replicate_east_to_west", run)
        check_replica("west", read_topic(west, topic_name), sent, source_topic=topic_name)
        unpacked = list(spark_cluster.folder.glob(f"work/worker-*/app-*/*/{ARCHIVE_ALIAS}/KAFKA_DR_EXECUTOR_ENV"))
        assert unpacked, "no executor ran from the shipped environment"

        # the README's first UI step, through the REST API: both clusters answer, so the dry run
        # shows the whole plan and the refusal as its verdict, and ends green
        run = api.trigger("dr_failover", {"failed_cluster": "east", "surviving_cluster": "west", "dry_run": True})
        done = api.wait_run("dr_failover", run, timeout=300)
        assert done["state"] == "success", api.task_states("dr_failover", run)
        summary = api.xcom("dr_failover", run, "summary")
        assert summary["dry_run"] is True
        assert any("east" in r and "answers" in r for r in summary["would_refuse"]), summary["would_refuse"]
        assert summary["parity"]["verdict"] and "east_to_west" in summary["rpo"]["flows"], summary

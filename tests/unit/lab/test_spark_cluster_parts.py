"""The lab's Spark standalone cluster (kafka_dr.lab.spark_cluster): the daemons' command lines and
environment, which processes count as ours, the master's view of its workers, the state file,
and the lab config's spark section. No Spark is started here (tests/integration/test_spark_cluster.py)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_dr.cli.app import main
from kafka_dr.core.config_load import parse_config, parse_config_text
from kafka_dr.lab.spark_cluster import (
    MASTER_CLASS,
    WORKER_CLASS,
    SparkCluster,
    SparkClusterError,
    SparkLayout,
    daemon_command,
    daemon_env,
    is_ours,
    point_lab_config,
    registered,
)
from kafka_dr.lab.topology import lab_clusters, lab_config, lab_config_yaml

HOME = Path("/venv/site-packages/pyspark")
FOLDER = Path("/lab/spark")
LAYOUT = SparkLayout(port=47077, webui_port=47080, workers=2, cores=1, memory="1g")


def test_the_master_and_a_workers_command_lines():
    assert daemon_command(HOME, FOLDER, LAYOUT, "master") == [
        "/venv/site-packages/pyspark/bin/spark-class",
        MASTER_CLASS,
        *("--host", "127.0.0.1", "--port", "47077", "--webui-port", "47080"),
        *("--properties-file", "/lab/spark/master.properties"),
    ]
    assert daemon_command(HOME, FOLDER, LAYOUT, "worker-2") == [
        "/venv/site-packages/pyspark/bin/spark-class",
        WORKER_CLASS,
        *("--host", "127.0.0.1", "--webui-port", "47082", "--cores", "1", "--memory", "1g"),
        *("--work-dir", "/lab/spark/work/worker-2", "--properties-file", "/lab/spark/worker.properties"),
        "spark://127.0.0.1:47077",
    ]


def test_the_daemons_run_on_loopback_with_sparks_home_and_the_callers_environment():
    env = daemon_env({"PATH": "/bin", "SPARK_LOCAL_IP": "192.0.2.2"}, HOME)
    assert env["PATH"] == "/bin" and env["SPARK_HOME"] == str(HOME) and env["SPARK_LOCAL_IP"] == "127.0.0.1"


def test_a_process_is_ours_by_its_class_and_this_folders_files():
    master = "\0".join(daemon_command(HOME, FOLDER, LAYOUT, "master"))
    worker = "\0".join(daemon_command(HOME, FOLDER, LAYOUT, "worker-1"))
    assert is_ours(master, FOLDER, "master") and is_ours(worker, FOLDER, "worker-1")
    assert not is_ours(master, Path("/other-lab/spark"), "master")
    assert not is_ours(worker, FOLDER, "worker-2") and not is_ours(worker, FOLDER, "master")


def test_the_masters_workers_are_matched_by_their_web_ui():
    doc = {
        "workers": [
            {"webuiaddress": "http://127.0.0.1:47082", "state": "ALIVE", "cores": 1},
            {"webuiaddress": "http://127.0.0.1:9999", "state": "ALIVE"},  # not this layout's
            {"webuiaddress": "http://127.0.0.1:47081", "state": "DEAD", "cores": 1},
        ]
    }
    assert {k: v["state"] for k, v in registered(doc, LAYOUT).items()} == {"worker-2": "ALIVE", "worker-1": "DEAD"}
    restarted = {"webuiaddress": "http://127.0.0.1:47081", "state": "ALIVE"}  # listed beside its lost registration
    for workers in ([*doc["workers"], restarted], [restarted, *doc["workers"]]):
        assert registered({"workers": workers}, LAYOUT)["worker-1"]["state"] == "ALIVE"


def test_a_layout_lists_every_problem():
    bad = SparkLayout(port=47080, webui_port=47080, workers=0, cores=0, memory="2x")
    assert bad.problems() == [
        "--workers 0: must be at least 1",
        "--cores 0: must be at least 1",
        "--port 47080: taken by a web UI (the master's on --webui-port 47080, worker i's on 47080+i)",
        "--memory '2x': expected a size such as 1g or 512m",
    ]
    assert LAYOUT.problems() == [] and LAYOUT.ports() == [47077, 47080, 47081, 47082]


def test_bad_options_change_nothing(tmp_path, capsys):
    assert main(["lab", "--dir", str(tmp_path / "lab"), "spark", "up", "--workers", "0", "--memory", "x"]) == 2
    assert "--workers 0: must be at least 1; --memory 'x'" in capsys.readouterr().err
    assert not (tmp_path / "lab").exists()
    assert main(["lab", "spark", "status", "--dir", str(tmp_path / "lab")]) == 1


@pytest.fixture
def fake_master(tmp_path):
    """A process whose command line reads like this folder's master (it only sleeps)."""
    folder = tmp_path / "spark"
    folder.mkdir()
    args = [MASTER_CLASS, "--properties-file", str(folder / "master.properties")]
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *args])
    time.sleep(0.2)
    yield folder, proc
    proc.kill()
    proc.wait()


#: a recorded layout whose web UI nothing answers on (port 1: nothing listens there)
RECORDED = SparkLayout(port=47077, webui_port=1, workers=2, cores=1, memory="1g")


def _record(cluster: SparkCluster, pids: dict) -> None:
    cluster._save({"layout": RECORDED.__dict__, "pids": pids})


def test_a_recorded_pid_counts_only_while_its_command_line_is_ours(fake_master):
    folder, proc = fake_master
    cluster = SparkCluster(folder)
    assert cluster.layout() is None and cluster.running_master() is None and cluster.status() == []
    _record(cluster, {"master": proc.pid, "worker-1": 1})  # pid 1 is not ours
    assert cluster.running_master() == "spark://127.0.0.1:47077"
    states = {s.name: (s.pid, s.state) for s in cluster.status()}  # the fake master answers no HTTP
    assert states == {"master": (proc.pid, "starting"), "worker-1": (None, "stopped"), "worker-2": (None, "stopped")}


def test_up_refuses_another_layout_while_the_cluster_runs_and_down_stops_it(fake_master):
    folder, proc = fake_master
    cluster = SparkCluster(folder)
    _record(cluster, {"master": proc.pid})
    with pytest.raises(SparkClusterError, match="run `kafka-dr lab spark down` before starting .* 3 worker"):
        cluster.up(SparkLayout(port=47077, webui_port=1, workers=3, cores=1, memory="1g"))
    cluster.down(timeout=5)
    assert proc.wait(5) is not None and cluster.running_master() is None
    assert cluster.layout() == RECORDED  # the layout stays known; no pid does


def test_the_lab_config_points_at_the_cluster_and_back(tmp_path):
    clusters = lab_clusters(2, 19092)
    path = tmp_path / "kafka-dr.yaml"
    assert not point_lab_config(path, "spark://127.0.0.1:7077")
    path.write_text(lab_config_yaml(clusters, {"east": "E", "west": "W"}))
    before = path.read_text()
    assert point_lab_config(path, "spark://127.0.0.1:7077")
    cfg = parse_config_text(path.read_text())
    assert cfg.spark.master == "spark://127.0.0.1:7077" and cfg.spark.conf["spark.driver.host"] == "127.0.0.1"
    assert path.read_text().startswith("# Written by `kafka-dr lab up`")
    assert point_lab_config(path, None) and path.read_text() == before
    assert path.read_text() == lab_config_yaml(clusters, {"east": "E", "west": "W"}, spark_master=None)


def test_the_lab_config_written_while_the_cluster_runs_says_so():
    doc = lab_config(lab_clusters(2, 19092), {}, spark_master="spark://127.0.0.1:7077")
    assert parse_config(doc).spark.master == "spark://127.0.0.1:7077"
    assert parse_config(lab_config(lab_clusters(2, 19092), {})).spark.master == "local[2]"

"""The replication job on a Spark standalone cluster: two workers of one core each, the driver in
client mode, every executor a JVM of its own with its own Python workers.

A continuous run copies records with headers byte for byte. While its task copies, the executor
JVM running it (a worker's CoarseGrainedExecutorBackend) is killed with SIGKILL: Spark runs the
task again on the other executor, whose copier fences the lost one's transactional id, and the
copy completes with nothing lost and nothing twice for read_committed readers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from test_crash_recovery import SteadyProducer, wait_for_growth
from test_replication import flow_config

from kafka_checks import check_replica, produce_varied, read_sent, read_topic, stop_once_replicated
from kafka_dr.gameday import processes
from kafka_dr.kafka import clients
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.lab.drill import replicate_command
from kafka_dr.lab.topology import spark_section

pytestmark = [pytest.mark.lab, pytest.mark.slow]

BIN = Path(sys.executable).parent


def _connected_to(port: int) -> set[int]:
    """Inodes of this host's established TCP sockets whose remote end is ``port``."""
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "01" and int(fields[2].rsplit(":", 1)[1], 16) == port:
                out.add(int(fields[9]))
    return out


def _sockets(pid: int) -> set[int]:
    """Inodes of the sockets process ``pid`` holds (none once it is gone)."""
    found = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            target = os.readlink(fd)
            if target.startswith("socket:["):
                found.add(int(target[8:-1]))
    except OSError:
        pass
    return found


def executors_copying(cluster, source_port: int) -> list[int]:
    """The cluster's executor JVMs with a Python worker connected to the source broker: the
    one running the flow's task (the job starts idle Python workers on every executor)."""
    workers = {s.pid for s in cluster.status() if s.name.startswith("worker-")}
    procs = processes.process_table()
    connected = _connected_to(source_port)
    return [
        jvm.pid
        for jvm in processes.executors(procs)
        if jvm.ppid in workers and any(_sockets(p.pid) & connected for p in processes.descendants(procs, jvm.pid))
    ]


@pytest.mark.drill
def test_a_lost_executor_loses_and_duplicates_nothing(lab, lab_config, spark_cluster, tmp_path, topic_name):
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic_name, partitions=4)
    config = flow_config(lab, tmp_path, [topic_name])
    doc = yaml.safe_load(config.read_text())
    doc["spark"] = spark_section(spark_cluster.running_master())
    config.write_text(yaml.safe_dump(doc, sort_keys=False))
    produce_varied(east, topic_name, "before", 2000, 4)

    stop_file, log = tmp_path / "stop", tmp_path / "job.log"
    # submitted as the DAG does it (the config's spark.conf), spread over both workers
    conf = {**doc["spark"]["conf"], "spark.cores.max": "2"}
    command = replicate_command(config, "east_to_west", "continuous", spark_cluster.running_master(), conf)
    # one long streaming task: until the kill, it runs in one executor's Python worker
    command += ["--task-seconds", "120", "--stop-file", str(stop_file)]
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "PYSPARK_PYTHON": sys.executable}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    job = subprocess.Popen(command, stdout=open(log, "ab"), stderr=subprocess.STDOUT, env=env, start_new_session=True)
    steady = SteadyProducer(east, topic_name, 4)
    try:
        wait_for_growth(west, topic_name, 0, timeout=300)  # generous: a loaded machine starts JVMs slowly
        steady.start()  # records keep coming while the executor dies
        time.sleep(2)
        running = executors_copying(spark_cluster, int(east.bootstrap_servers.rsplit(":", 1)[1]))
        assert len(running) == 1, f"expected one executor running the flow's task, found {running}; see {log}"
        os.kill(running[0], signal.SIGKILL)
        produce_varied(east, topic_name, "after", 1000, 4)
        steady.stop_event.set()
        steady.join(30)
        sent = read_sent(east, topic_name)
        assert len(sent) == 3000 + steady.count
        stop_once_replicated(job, stop_file, log, west, topic_name, len(sent), timeout=180)
    finally:
        steady.stop_event.set()
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)

    text = log.read_text(errors="replace")
    assert "Lost executor" in text, f"Spark did not see the executor die; see {log}"
    per_origin = check_replica("west", read_topic(west, topic_name), sent, source_topic=topic_name)
    assert per_origin == {"east": len(sent)}

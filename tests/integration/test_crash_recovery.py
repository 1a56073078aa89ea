"""kill -9 of the replication job (driver, or one Python executor worker) at random moments
while producers keep writing; after a restart, the target holds every record exactly once
(read_committed). Trials: $KAFKA_DR_KILL_TRIALS (default 2: the driver, then a Python worker and the driver;
`kafka-dr drill kill-job` runs 10). An executor JVM killed on a Spark cluster: test_spark_cluster."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_replication import flow_config

from kafka_checks import check_replica, read_sent, read_topic
from kafka_dr.kafka import clients
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.kafka.writing import produce_all
from kafka_dr.lab.drill import replicate_command

pytestmark = [pytest.mark.lab, pytest.mark.slow]

BIN = Path(sys.executable).parent


def spark_submit(config: Path, flow: str, mode: str, log: Path) -> subprocess.Popen:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "PYSPARK_PYTHON": sys.executable}
    return subprocess.Popen(
        replicate_command(config, flow, mode),
        stdout=open(log, "ab"),
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )


def python_workers(jvm_pid: int) -> list[int]:
    """Spark's Python executor workers of a job: children of the ``pyspark.daemon
    pyspark.worker`` fork server that the job's JVM started (killing the fork server itself
    is not an executor crash, and it runs in a process group of its own)."""
    out = subprocess.run(["ps", "-e", "-ww", "-o", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    procs = [line.split(None, 2) for line in out.splitlines()]
    daemons = {int(p[0]) for p in procs if int(p[1]) == jvm_pid and "pyspark.daemon pyspark.worker" in p[2]}
    return [int(p[0]) for p in procs if int(p[1]) in daemons]


def wait_for_growth(cluster, topic: str, than: int, timeout: float = 240) -> int:
    """Block until the target topic holds more than ``than`` records: the job is copying. A
    continuous job's first task can start 100 s after its launch while the suite loads both cores."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = len(read_topic(cluster, topic))
        if n > than:
            return n
        time.sleep(0.5)
    raise AssertionError(f"{topic} on {cluster.name} did not grow past {than} records in {timeout:.0f}s")


class SteadyProducer(threading.Thread):
    def __init__(self, cluster, topic: str, partitions: int) -> None:
        super().__init__(daemon=True)
        self.cluster, self.topic, self.partitions = cluster, topic, partitions
        self.stop_event = threading.Event()
        self.count = 0

    def run(self) -> None:
        p = clients.producer(self.cluster)
        while not self.stop_event.is_set():
            rows = [
                (
                    b"k%d" % (self.count + i),
                    b"v%d" % (self.count + i) + os.urandom(40),
                    [("seq", b"%d" % (self.count + i))],
                    None,
                    (self.count + i) % self.partitions,
                )
                for i in range(500)
            ]
            produce_all(p, self.topic, rows)
            self.count += len(rows)
            time.sleep(0.1)


def test_kill_9_at_random_moments_loses_and_duplicates_nothing(lab, lab_config, tmp_path, topic_name):
    trials = int(os.environ.get("KAFKA_DR_KILL_TRIALS", "2"))
    rng = random.Random(int(os.environ.get("KAFKA_DR_KILL_SEED", "7")))
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    ensure_topic(clients.admin(east), topic_name, partitions=4)
    config = flow_config(lab, tmp_path, [topic_name])
    log = tmp_path / "spark.log"

    producer = SteadyProducer(east, topic_name, 4)
    producer.start()
    kills = []
    seen = 0
    job = None
    try:
        for trial in range(trials):
            job = spark_submit(config, "east_to_west", "continuous", log)
            seen = wait_for_growth(west, topic_name, seen)  # the job is past start-up and copying
            if trial % 2 == 1:
                workers = python_workers(job.pid)
                assert workers, "no Python worker found to kill"
                for pid in workers:
                    os.kill(pid, signal.SIGKILL)
                kills.append((trial, "executor", len(workers)))
                seen = wait_for_growth(west, topic_name, len(read_topic(west, topic_name)))  # recovered, copying again
            time.sleep(rng.uniform(0, 3))
            assert job.poll() is None, f"trial {trial}: the job died before it was killed; see {log}"
            os.killpg(job.pid, signal.SIGKILL)
            job.wait(30)
            seen = len(read_topic(west, topic_name))
            kills.append((trial, "driver", seen))
    finally:
        producer.stop_event.set()
        producer.join(30)
        if job is not None and job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)

    final = spark_submit(config, "east_to_west", "incremental", log)
    assert final.wait(300) == 0, f"catch-up run failed; see {log}"

    sent = read_sent(east, topic_name)
    assert len(sent) == producer.count
    per_origin = check_replica("west", read_topic(west, topic_name), sent, source_topic=topic_name)
    assert per_origin == {"east": producer.count}, kills

"""A continuous flow's streaming task hands over to the next one in the same Python worker:
the job warms no spare worker for its one task per micro-batch, so the next task never lands
in another worker whose copier would fence the running copy, abort its open transaction and
read the progress again (kafka_dr.spark.warmup.start_workers). Run as a user types it, with
Spark's and the Kafka clients' output on the console, while records keep arriving."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kafka_checks import narrowed_config, read_topic
from kafka_dr.kafka import clients
from kafka_dr.kafka.topics import ensure_topic

pytestmark = [pytest.mark.lab]

REPO = Path(__file__).resolve().parents[2]
#: records/s produced while the job runs, and for how long (several 3 s tasks); the job runs 35 s,
#: so that a start-up slowed by a loaded host still leaves it four tasks or more
RATE, PRODUCE_SECONDS = 200, 10


def _produce_steadily(cluster, topic: str, sent: list[bytes]) -> None:
    producer = clients.producer(cluster)
    end = time.monotonic() + PRODUCE_SECONDS
    n = 0
    while time.monotonic() < end:
        for _ in range(RATE // 10):
            value = b"v%d" % n
            producer.produce(topic, key=b"k%d" % n, value=value, partition=n % 4)
            sent.append(value)
            n += 1
        producer.poll(0)
        time.sleep(0.1)
    assert producer.flush(30) == 0


def test_streaming_tasks_hand_over_in_one_worker_without_fencing(lab, lab_config, tmp_path, topic_name):
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    config = narrowed_config(lab, tmp_path, topic_name)
    ensure_topic(clients.admin(east), topic_name, partitions=4)
    sent: list[bytes] = []
    producing = threading.Thread(target=_produce_steadily, args=(east, topic_name, sent))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    command = [
        "kafka-dr", "replicate", "--config", str(config), "--flow", "east_to_west", "--mode", "continuous",
        "--task-seconds", "3", "--trigger-seconds", "0.5", "--max-duration", "35", "--master", "local[2]",
        "--verbose", "--json",
    ]  # fmt: skip
    producing.start()
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    finally:
        producing.join()
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert out.count("timeline: task started") == 1, "every streaming task ran in the one Python worker"
    assert "fenced by a newer instance" not in out, out[-4000:]
    summary = json.loads(next(x for x in reversed(done.stdout.splitlines()) if x.startswith("{")))["kafka_dr.summary"]
    assert summary["restarts"] == 0 and summary["batches"] >= 4, summary
    copied = [r.value for r in read_topic(west, topic_name)]
    assert len(sent) >= RATE * PRODUCE_SECONDS * 0.8
    assert sorted(copied) == sorted(sent), "every record copied once, none lost at a hand-over"

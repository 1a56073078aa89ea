"""The lab is real: two KRaft Apache Kafka clusters that take admin calls, produce, consume,
stop and start with their data, and go away completely on ``down --wipe``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_dr.kafka import clients
from kafka_dr.kafka.reading import read_partitions
from kafka_dr.kafka.topics import ensure_topic, partition_count
from kafka_dr.lab.lab import Lab, LabError

pytestmark = pytest.mark.lab

KAFKA_DR = str(Path(sys.executable).with_name("kafka-dr"))


def _produce(cluster, topic, records):
    p = clients.producer(cluster)
    for key, value, headers, ts in records:
        p.produce(topic, key=key, value=value, headers=headers, timestamp=ts, partition=0)
    assert p.flush(30) == 0


def test_both_clusters_healthy_with_distinct_ids(lab, lab_config):
    status = {s.name: s for s in lab.status()}
    assert set(status) == {"east", "west"}
    assert all(s.running and s.answering for s in status.values())
    assert status["east"].cluster_id != status["west"].cluster_id
    # the written config pins the ids the brokers report
    assert lab_config.cluster("east").cluster_id == status["east"].cluster_id
    assert lab_config.cluster("west").cluster_id == clients.cluster_id(lab_config.cluster("west"))
    assert [(f.source, f.target) for f in lab_config.flows] == [("east", "west"), ("west", "east")]


def test_admin_produce_consume_on_both_clusters(lab_config, topic_name):
    now = int(time.time() * 1000)
    records = [
        (b"k1", b"v1", [("h", b"\x00\x01"), ("h", b"again")], now - 5000),
        (None, b"null key", [], now - 4000),
        (b"k1", None, [("tomb", b"")], now - 3000),  # tombstone
        (b"\xff\xfe", bytes(range(256)), [("bin", bytes([0, 255]))], now - 2000),
    ]
    for name, cluster in lab_config.clusters.items():
        admin = clients.admin(cluster)
        assert ensure_topic(admin, topic_name, partitions=2) is True
        assert ensure_topic(admin, topic_name, partitions=2) is False  # idempotent
        assert partition_count(admin, topic_name) == 2
        _produce(cluster, topic_name, records)
        c = clients.consumer(cluster, group_id=f"test-{name}")
        try:
            got = read_partitions(c, topic_name, [0, 1])
        finally:
            c.close()
        assert [(r.key, r.value, list(r.headers), r.timestamp_ms) for r in got] == [
            (k, v, h, ts) for k, v, h, ts in records
        ], f"round trip on {name}"
        assert [r.offset for r in got] == [0, 1, 2, 3]


def test_up_twice_is_idempotent(lab):
    before = {s.name: s.pid for s in lab.status()}
    out = subprocess.run([KAFKA_DR, "lab", "--dir", str(lab.root), "up"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert {s.name: s.pid for s in lab.status()} == before
    assert "healthy" in out.stdout and "east" in out.stdout


def test_stop_and_start_one_cluster_keeps_its_data(lab, lab_config, topic_name):
    east = lab_config.cluster("east")
    ensure_topic(clients.admin(east), topic_name, partitions=1)
    _produce(east, topic_name, [(b"k", b"survives a restart", [], int(time.time() * 1000))])

    lab.stop("east")
    status = {s.name: s for s in lab.status()}
    assert not status["east"].running and status["east"].pid is None
    assert status["west"].answering, "stopping east must not touch west"
    cli = subprocess.run(
        [KAFKA_DR, "lab", "--dir", str(lab.root), "status"], capture_output=True, text=True, timeout=60
    )
    assert cli.returncode == 1 and "stopped" in cli.stdout

    lab.start("east")
    assert {s.name: s.answering for s in lab.status()} == {"east": True, "west": True}
    c = clients.consumer(east, group_id="test-restart")
    try:
        got = read_partitions(c, topic_name, [0])
    finally:
        c.close()
    assert [r.value for r in got] == [b"survives a restart"]


def test_unknown_cluster_is_named(lab):
    with pytest.raises(LabError, match="no lab cluster named 'eest'.*east, west"):
        lab.stop("eest")


def test_down_wipe_leaves_nothing_running(tmp_path):
    """A separate one-cluster lab, so the session's lab keeps running."""
    lab = Lab(tmp_path / "lab")
    lab.up(count=1, base_port=int(os.environ.get("KAFKA_DR_TEST_BASE_PORT", "29092")) + 1000)
    pid = lab.status()[0].pid
    assert pid and Path(f"/proc/{pid}").exists()
    out = subprocess.run(
        [KAFKA_DR, "lab", "--dir", str(lab.root), "down", "--wipe"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    assert not lab.root.exists()

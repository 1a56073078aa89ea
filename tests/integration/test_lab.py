"""The lab is real: two KRaft Apache Kafka clusters that take admin calls, produce, consume,
stop and start with their data, and go away completely on ``down --wipe``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import ElectionType, KafkaException, TopicPartition

from kafka_dr.core.config_load import load_config
from kafka_dr.kafka import clients
from kafka_dr.kafka.reading import read_partitions
from kafka_dr.kafka.topics import ensure_topic, partition_count, partition_ranges
from kafka_dr.kafka.writing import produce_all
from kafka_dr.lab.lab import Lab, LabError

pytestmark = pytest.mark.lab

KAFKA_DR = str(Path(sys.executable).with_name("kafka-dr"))


def _produce(cluster, topic, records):
    """Produce ``records`` to partition 0; raises unless each is acknowledged."""
    produce_all(clients.producer(cluster), topic, [(k, v, h, ts, 0) for k, v, h, ts in records], timeout=30)


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
        # the brokers' metadata has a new topic a moment after the controller created it
        deadline = time.monotonic() + 30
        while partition_count(admin, topic_name) is None and time.monotonic() < deadline:
            time.sleep(0.2)
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
        ends = c.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=10, cached=False)
    finally:
        c.close()
    assert [r.value for r in got] == [b"survives a restart"], f"log start and end after the restart: {ends}"


def test_unknown_cluster_is_named(lab):
    with pytest.raises(LabError, match="no lab cluster or broker named 'eest'.*east, west"):
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


def _lab_cli(lab_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([KAFKA_DR, "lab", *args, "--dir", str(lab_dir)], capture_output=True, text=True, timeout=180)


def _cluster_row(status_out: str) -> tuple[str, int, int]:
    """``lab status`` of a three-broker ``east``: its state, under-replicated and offline partitions."""
    m = re.search(r"^east +3 brokers +(\w+) +\d+ +(\d+) +(\d+) ", status_out, re.M)
    assert m, status_out
    return m[1], int(m[2]), int(m[3])


def _wait_status(lab_dir: Path, what: str, ok, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while True:
        out = _lab_cli(lab_dir, "status")
        if ok(out.returncode, *_cluster_row(out.stdout)):
            return out.stdout
        assert time.monotonic() < deadline, f"lab status never showed {what}:\n{out.stdout}"
        time.sleep(1)


def test_three_broker_cluster_rides_out_a_broker_crash(tmp_path):
    """One cluster of three brokers through the command line, as a user drives it: a crashed
    broker leaves its partitions under-replicated while transactions and acks=all writes go
    on; started again, it catches up. A lab of its own, beside the session's."""
    lab_dir = tmp_path / "lab3b"
    base = int(os.environ.get("KAFKA_DR_TEST_BASE_PORT", "29092")) + 1200
    topic = f"t.brokers.{uuid.uuid4().hex[:6]}"
    try:
        up = _lab_cli(lab_dir, "up", "--clusters", "1", "--brokers", "3", "--base-port", str(base))
        assert up.returncode == 0, up.stdout + up.stderr
        status = _lab_cli(lab_dir, "status")
        assert status.returncode == 0 and _cluster_row(status.stdout) == ("healthy", 0, 0), status.stdout
        for n in (1, 2, 3):
            assert re.search(rf"^  east-{n} +127\.0\.0\.1:{base + 10 * (n - 1)} +\d+ +healthy$", status.stdout, re.M)
        east = load_config(lab_dir / "kafka-dr.yaml").cluster("east")
        admin = clients.admin(east)
        ensure_topic(admin, topic, partitions=3)
        partitions = _led_partitions(admin, topic, 3)
        assert {len(p.replicas) for p in partitions.values()} == {3}, "RF 3 by default"
        txn = clients.producer(east, **{"transactional.id": f"lab-brokers-{topic}"})
        txn.init_transactions(30)
        acks_all = clients.producer(east, acks="all")
        _write(txn, acks_all, topic, "before")
        tps = [TopicPartition(topic, p) for p in range(3)]
        held = clients.admin(east)  # one client across the crash and the leader's return, as a DAG task's
        _ranges_become(held, tps, {(topic, p): (0, 5) for p in range(3)})  # 4 records, 1 marker

        victim = f"east-{partitions[0].leader}"  # the leader of partition 0
        assert _lab_cli(lab_dir, "kill", victim).stdout.strip() == f"killed {victim}"
        _wait_status(lab_dir, "under-replicated partitions", lambda rc, state, under, _off: rc == 1 and under > 0)
        _write(txn, acks_all, topic, "during")
        _ranges_become(held, tps, {(topic, p): (0, 10) for p in range(3)})

        assert _lab_cli(lab_dir, "start", victim).stdout.strip() == f"started {victim}"
        _wait_status(lab_dir, "every partition in sync", lambda rc, state, under, off: rc == 0 and under == off == 0)
        _move_leadership_back(clients.admin(east), TopicPartition(topic, 0), int(victim.split("-")[1]))
        # a newer leader epoch than ``held`` cached: its offsets requests are fenced until it reads metadata again
        _ranges_become(held, tps, {(topic, p): (0, 10) for p in range(3)})
        c = clients.consumer(east, group_id="test-brokers")
        try:
            got = read_partitions(c, topic, [0, 1, 2])
        finally:
            c.close()
        assert sorted(r.value for r in got) == sorted(
            f"{phase}-{how}-{i}".encode() for phase in ("before", "during") for how in ("txn", "acks") for i in range(6)
        )
    finally:
        down = _lab_cli(lab_dir, "down", "--wipe")
        assert down.returncode == 0, down.stderr


def _ranges_become(admin, tps: list[TopicPartition], expected: dict, timeout: float = 30) -> None:
    """``partition_ranges`` through ``admin`` reaches ``expected`` (a committed transaction's
    markers reach its partitions, and so their stable ends, a moment after the commit)."""
    deadline = time.monotonic() + timeout
    while (got := partition_ranges(admin, tps, "east")) != expected:
        assert time.monotonic() < deadline, f"offset ranges {got}, expected {expected}"
        time.sleep(0.2)


def _move_leadership_back(admin, tp: TopicPartition, preferred: int, timeout: float = 60) -> None:
    """A preferred-leader election of ``tp`` (what the brokers run on their own every few
    minutes), waited for until its leader is ``preferred`` again."""
    deadline = time.monotonic() + timeout
    while admin.list_topics(tp.topic, timeout=10).topics[tp.topic].partitions[tp.partition].leader != preferred:
        assert time.monotonic() < deadline, f"{tp.topic}[{tp.partition}] never went back to broker {preferred}"
        try:
            admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(timeout=30)
        except KafkaException:
            pass  # not yet electable (the replica still catching up): asked again
        time.sleep(1)


def _led_partitions(admin, topic: str, count: int, timeout: float = 30) -> dict:
    """The topic's partitions once the metadata shows all ``count`` of them with a leader."""
    deadline = time.monotonic() + timeout
    while True:
        partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
        if len(partitions) == count and all(p.leader >= 0 for p in partitions.values()):
            return partitions
        assert time.monotonic() < deadline, f"{topic}: {count} partitions with a leader never showed in the metadata"
        time.sleep(0.2)


def _write(txn, acks_all, topic: str, phase: str) -> None:
    """Six records in one transaction and six with acks=all, two per partition; every one acknowledged."""
    txn.begin_transaction()
    for i in range(6):
        txn.produce(topic, value=f"{phase}-txn-{i}".encode(), partition=i % 3)
    txn.commit_transaction(60)
    failed = []
    for i in range(6):
        acks_all.produce(
            topic, value=f"{phase}-acks-{i}".encode(), partition=i % 3, on_delivery=lambda e, _m: e and failed.append(e)
        )
    assert acks_all.flush(60) == 0 and not failed, failed

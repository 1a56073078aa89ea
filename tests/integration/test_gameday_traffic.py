"""The game day's traffic, readers and proof on the lab, without replication: each cluster
holds exactly what its own app had acknowledged, no aborted record, every key in order, and the
groups skip nothing, across a move to the other cluster and back too (about 20 s with the lab up)."""

from __future__ import annotations

import time
import uuid
from types import SimpleNamespace

import pytest
from confluent_kafka import TopicPartition

from kafka_dr.gameday.model import GamedayNames
from kafka_dr.gameday.proof import Check, group_reads, order, presence, read_cluster, where_lost
from kafka_dr.gameday.readers import Readers
from kafka_dr.gameday.run import _where_lost
from kafka_dr.gameday.traffic import Traffic, ensure_topics
from kafka_dr.kafka import clients

pytestmark = [pytest.mark.lab]


def _wait(what: str, check, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen within {timeout:.0f}s")


def _rewind(cluster_cfg, group: str, topic: str, partitions: int) -> None:
    """Commit offset 0 for ``group`` (no member) on ``topic``: a position that re-reads."""
    c = clients.consumer(cluster_cfg, group)
    try:
        c.commit(offsets=[TopicPartition(topic, p, 0) for p in range(partitions)], asynchronous=False)
    finally:
        c.close()


def test_traffic_and_readers_prove_each_cluster_and_a_moving_group(lab, lab_config, tmp_path):
    names = GamedayNames(prefix=f"gdt{uuid.uuid4().hex[:6]}")
    clusters = {"east": lab_config.cluster("east"), "west": lab_config.cluster("west")}
    for cfg in clusters.values():
        ensure_topics(cfg, names)
    keyed, compacted, group = names.keyed_topic, names.compacted_topic, names.group("east")
    traffic = Traffic(clusters, names).start()
    readers = Readers(names).start_apps(clusters)
    try:
        try:
            _wait("the east group reading", lambda: sum(r.group == group and r.topic == keyed for r in readers.reads()))
            time.sleep(1)
            to_west = readers.move(group, clusters["west"])  # nothing committed there: from the earliest
            assert readers.first_read(group, timeout=20), "the east group read nothing on west"
            time.sleep(1)
            _rewind(clusters["east"], group, keyed, names.partitions(keyed))
            back = readers.move(group, clusters["east"])
            assert readers.first_read(group, timeout=20), "the east group read nothing on east again"
            stopped = traffic.redirect("west", None)  # the operator stops west's producers
            assert traffic.where("west") is None
            time.sleep(1.5)
            resumed = time.time()  # a thread writes again once it switched, before the others did
            traffic.redirect("west", clusters["west"])
            time.sleep(1)
        finally:
            view = traffic.stop()
        every = [p for fates in (view.acked, view.aborted, view.uncertain) for p in fates.values()]
        during = [p.gd_id for p in every if p.app == "west" and stopped < p.produced_at < resumed]
        assert not during, f"west's app wrote while stopped: {during[:5]}"
        for app in clusters:
            own = [p.gd_id for p in view.acked.values() if p.cluster == app and p.topic != compacted]
            assert not readers.wait_read(names.group(app), own, timeout=30), f"group of {app} did not read all"
    finally:
        readers.stop()

    assert view.counts()["uncertain"] == 0, view.errors[:5]
    for app in clusters:
        topics = {p.topic for p in view.acked.values() if p.cluster == app}
        assert topics == set(names.topics), f"{app} acknowledged on {sorted(topics)} only"
        assert any(p.cluster == app for p in view.aborted.values()), f"{app} aborted no transaction"

    reads, moves = readers.reads(), readers.moves()
    for app, cfg in clusters.items():
        here = read_cluster(cfg, names)
        mine = lambda p, app=app: p.cluster == app  # noqa: E731 - without replication a cluster holds its own app's records
        checks = [
            presence(app, here, view, expect=mine, compacted={compacted}),
            order(app, here),
            group_reads(names.group(app), reads, view, moves, expect=mine, compacted={compacted}),
        ]
        assert all(c.ok for c in checks), "\n".join(c.line() for c in checks)
        assert checks[0].counts["present"] == sum(mine(p) for p in view.acked.values())

    # the moving group: nothing skipped; back on east it re-read exactly the keyed records it
    # had read there before the first move, and nothing else
    assert (to_west.source, to_west.target, back.target) == ("east", "west", "east")
    before = {r.gd_id for r in reads if r.group == group and r.topic == keyed and r.at < to_west.at}
    result = group_reads(group, reads, view, moves, expect=lambda p: p.cluster == "east", compacted={compacted})
    by_move = result.details["rereads_by_move"]
    assert [m["rereads"] for m in by_move] == [0, 0, len(before)], by_move
    assert by_move[2]["by_origin"] == {"east": len(before)} and before
    assert all(m.first_read_at is not None and m.first_read_at >= m.at for m in moves)

    # what a record's offset holds tells one never written apart from one written but hidden:
    # a committed record is there either way, an aborted one only read_uncommitted
    txn = names.transactional_topic
    kept = next(p for p in view.acked.values() if p.cluster == "east" and p.topic == txn)
    hidden = next(p for p in view.aborted.values() if p.cluster == "east" and p.offset is not None)
    lines = where_lost(clusters["east"], [kept, hidden], names)
    at = f"@{kept.offset} {kept.gd_id}"
    assert lines[0].endswith(f"read_uncommitted there {at}; read_committed from there {at}"), lines
    assert f"read_uncommitted there @{hidden.offset} {hidden.gd_id};" in lines[1], lines
    assert f"read_committed from there @{hidden.offset} " not in lines[1], lines

    # the game day's report on a lost record adds each broker's log, from the segment files
    # (here a committed record stands in for a lost one: its batch ends with a COMMIT marker)
    deployment = SimpleNamespace(cfg=lab_config, lab=lab, folder=tmp_path)
    pretend = Check("east presence", {"lost": 1}, ("lost",), {"lost": (kept.gd_id,)})
    report = _where_lost(deployment, [pretend], view)
    for broker in lab.data_dirs("east"):
        from_log = [line for line in report if f" in {broker}'s log: " in line]
        assert len(from_log) == 1 and "ended by COMMIT at " in from_log[0], report
        assert (tmp_path / "evidence" / f"{broker}-{txn}-{kept.partition}.txt").stat().st_size > 0

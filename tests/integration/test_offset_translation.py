"""Offset translation and group-offset sync on the real lab.

Every expectation is computed from what west really holds: the record at a translated offset
must be the first record from east's partition whose origin offset is >= the committed
offset (brute force over the whole partition), and nothing of this origin may sit before it.
"""

from __future__ import annotations

import time
import uuid

import pytest
import yaml
from confluent_kafka import TopicPartition
from test_replication import flow_config

from kafka_checks import read_topic
from kafka_dr.core.config_load import load_config
from kafka_dr.core.offsets import APPROXIMATE, EXACT, UNTRANSLATABLE
from kafka_dr.core.provenance import Provenance
from kafka_dr.kafka import clients
from kafka_dr.kafka.group_offsets import last_synced_offsets
from kafka_dr.kafka.offset_translation import Translator, translate_group, translate_offset
from kafka_dr.kafka.progress_store import committed_with_retry
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.kafka.writing import produce_all
from kafka_dr.spark.job import JobOptions, run_flow
from kafka_dr.workflows.offset_sync import sync_group_offsets

pytestmark = [pytest.mark.lab]


def replicate(config, spark) -> None:
    run_flow(JobOptions(config=str(config), flow="east_to_west", mode="incremental"), spark=spark)


def produce(cluster, topic: str, tag: str, n: int, partitions: int, compactable: bool = False) -> None:
    """``n`` records; ``compactable``: every third key is unique, the others alternate between two
    keys, so compaction leaves gaps all along the partition."""

    def key(i):
        return f"{tag}-u{i}" if not compactable or i % 3 == 0 else f"{tag}-dup{i % 2}"

    rows = [(key(i).encode(), f"{tag}-{i}".encode(), [("app", tag.encode())], None, i % partitions) for i in range(n)]
    produce_all(clients.producer(cluster), topic, rows)


def commit(cluster, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit like a consumer would; retried while a fresh cluster's group coordinator loads."""
    from kafka_dr.kafka.progress_store import commit_with_retry

    c = clients.consumer(cluster, group)
    try:
        commit_with_retry(c, [TopicPartition(t, p, x) for (t, p), x in offsets.items()])
    finally:
        c.close()


def committed(cluster, group: str, topic: str, partitions: list[int]) -> dict[int, int | None]:
    c = clients.consumer(cluster, group)
    try:
        got = committed_with_retry(c, [TopicPartition(topic, p) for p in partitions], 30)
    finally:
        c.close()
    return {tp.partition: (tp.offset if tp.offset >= 0 else None) for tp in got}


def active_member(cluster, group: str, topic: str):
    """A consumer of ``group`` subscribed to ``topic`` on ``cluster``, once it has joined: the
    group is active there (close it when done)."""
    member = clients.consumer(cluster, group)
    member.subscribe([topic])
    deadline = time.monotonic() + 60
    while not member.assignment() and time.monotonic() < deadline:
        member.poll(0.5)
    assert member.assignment(), "the member never joined"
    return member


def west_view(west, topic: str) -> dict[int, list[tuple[int, int | None]]]:
    """Per west partition: (target offset, east origin offset or None for anything else)."""
    out: dict[int, list] = {}
    for r in read_topic(west, topic):
        p = Provenance.from_headers(r.headers)
        out.setdefault(r.partition, []).append((r.offset, p.offset if p is not None and p.cluster == "east" else None))
    return out


def expected_target(view, p: int, x: int) -> tuple[int | None, int | None]:
    """(target offset, origin offset) of the first east record with origin offset >= x."""
    return next(((t, o) for t, o in view.get(p, []) if o is not None and o >= x), (None, None))


def west_end(west, topic: str, p: int) -> int:
    c = clients.consumer(west, "kafka-dr-tests")
    try:
        return c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
    finally:
        c.close()


def assert_exact(tr, view, p, x):
    t, o = expected_target(view, p, x)
    assert tr.status == EXACT, tr
    assert tr.target_offset == t, f"{tr}: expected target {t} (origin {o})"


def test_translation_with_interleaved_local_records_and_replica_behind(lab, lab_config, spark, tmp_path, topic_name):
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic_name, partitions=2)
    config = flow_config(lab, tmp_path, [topic_name])
    cfg = load_config(config)
    flow = next(f for f in cfg.flows if f.name == "east_to_west")

    produce(west, topic_name, "west-a", 6, 2)  # local records first: X=0 must skip them
    produce(east, topic_name, "east-a", 80, 2)
    replicate(config, spark)
    produce(west, topic_name, "west-b", 20, 2)  # interleaved local records
    produce(east, topic_name, "east-b", 80, 2)
    replicate(config, spark)
    produce(west, topic_name, "west-c", 10, 2)  # local records after the last replicated one
    view = west_view(west, topic_name)
    assert [o for _, o in view[0] if o is not None] == list(range(80))

    # a group on east, read through Consumer.committed by translate_group
    group = f"app-{uuid.uuid4().hex[:6]}"
    commit(east, group, {(topic_name, 0): 0, (topic_name, 1): 40})
    t0 = time.monotonic()
    got = {t.partition: t for t in translate_group(cfg, flow, group)}
    print(f"translate_group: {time.monotonic() - t0:.2f}s")
    assert set(got) == {0, 1}
    # the west-a records (west 0..2) never reached east, so the group never read them: it
    # resumes before them, and on partition 1 reads east-a's 40 copies again
    assert [(p, t.status, t.target_offset, t.reread) for p, t in sorted(got.items())] == [
        (0, EXACT, 0, {"east": 0, "west": 0}),
        (1, EXACT, 0, {"east": 40, "west": 0}),
    ]

    # single offsets across the interleaving; the record at the answer is the first >= X
    for x in (1, 39, 40, 41, 79):
        tr = translate_offset(cfg, flow, topic_name, 1, x)
        assert_exact(tr, view, 1, x)
        assert dict(view[1])[tr.target_offset] == x
    # caught up: X at the source end -> the target end (after the west-c records)
    tr = translate_offset(cfg, flow, topic_name, 0, 80)
    assert (tr.status, tr.target_offset, tr.behind_records) == (EXACT, west_end(west, topic_name, 0), 0)

    # replica behind: 15 more per partition on east, not replicated
    produce(east, topic_name, "east-c", 30, 2)
    tr = translate_offset(cfg, flow, topic_name, 0, 90)
    assert (tr.status, tr.target_offset, tr.behind_records) == (APPROXIMATE, west_end(west, topic_name, 0), 10), tr
    # searched in parallel, as a group move does, each thread with readers of its own: the same
    # answers as one offset at a time, the replica-behind count (read on the source) included
    with Translator(cfg, flow, probe_threads=4) as tr:
        for x0, x1 in ((1, 79), (40, 41), (90, 88)):
            both = {t.partition: t for t in tr.translate("g", {(topic_name, 0): x0, (topic_name, 1): x1})}
            for p, x in ((0, x0), (1, x1)):
                alone = translate_offset(cfg, flow, topic_name, p, x, group="g")
                figures = ("status", "target_offset", "behind_records", "effective_offset")
                assert [getattr(both[p], f) for f in figures] == [getattr(alone, f) for f in figures], (both[p], alone)
    # beyond the source end: never a guess
    tr = translate_offset(cfg, flow, topic_name, 0, 500)
    assert tr.status == UNTRANSLATABLE and tr.target_offset is None and "beyond" in tr.reason

    # with the group's offsets given (source down): same answers
    again = translate_group(cfg, flow, group, source_offsets={(topic_name, 0): 0, (topic_name, 1): 40})
    assert [(t.partition, t.target_offset, t.status) for t in again] == [
        (0, got[0].target_offset, EXACT),
        (1, got[1].target_offset, EXACT),
    ]


def compacted_on_east(east, west, topic: str) -> list[int]:
    """A one-partition topic on east that the log cleaner has compacted (offsets with gaps all
    along); west's copy is compacted too, but not within a test (default segment.ms), so
    expected answers come from a view that cannot change under them. Returns east's offsets."""
    ensure_topic(
        clients.admin(east),
        topic,
        partitions=1,
        config={
            "cleanup.policy": "compact",
            "segment.ms": "100",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "3600000",
        },
    )
    ensure_topic(clients.admin(west), topic, partitions=1, config={"cleanup.policy": "compact"})
    produce(east, topic, "e", 200, 1, compactable=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait for the cleaner to compact the rolled segments
        produce_all(clients.producer(east), topic, [(b"roll", b"r", [], None, 0)])
        source = read_topic(east, topic)
        if len(source) < 100:
            break
        time.sleep(2)
    offsets = [r.offset for r in source]
    assert offsets != list(range(offsets[0], offsets[0] + len(offsets))), "no gaps: compaction did not run"
    return offsets


def test_translation_on_a_compacted_topic(lab, lab_config, spark, tmp_path, topic_name):
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    offsets = compacted_on_east(east, west, topic_name)
    config = flow_config(lab, tmp_path, [topic_name])
    cfg = load_config(config)
    flow = next(f for f in cfg.flows if f.name == "east_to_west")
    replicate(config, spark)
    view = west_view(west, topic_name)
    present = set(offsets)
    gaps = [x for x in range(offsets[0], offsets[-1]) if x not in present]
    assert gaps
    for x in [0, gaps[0], gaps[len(gaps) // 2], gaps[-1], offsets[-1]]:
        tr = translate_offset(cfg, flow, topic_name, 0, x)
        assert_exact(tr, view, 0, x)


def test_offset_sync_dag_commits_on_the_target_never_backwards_and_not_for_active_groups(
    lab, lab_config, spark, airflow_db, tmp_path, topic_name
):
    from test_dag_runs import _task_states

    from kafka_dr.airflow.offset_sync_dag import build_offset_sync_dag

    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic_name, partitions=2)
    config = flow_config(lab, tmp_path, [topic_name])
    cfg = load_config(config)
    flow = next(f for f in cfg.flows if f.name == "east_to_west")
    produce(east, topic_name, "e1", 40, 2)
    replicate(config, spark)
    produce(east, topic_name, "e2", 40, 2)
    replicate(config, spark)
    produce(west, topic_name, "w", 10, 2)  # west's own records after the copies: the groups' positions keep them ahead
    view = west_view(west, topic_name)

    app, busy = f"app-{uuid.uuid4().hex[:6]}", f"busy-{uuid.uuid4().hex[:6]}"
    commit(east, app, {(topic_name, 0): 7, (topic_name, 1): 25})
    commit(east, busy, {(topic_name, 0): 5})
    member = active_member(west, busy, topic_name)
    try:
        run = build_offset_sync_dag(cfg).test()
        assert str(run.state) == "success", _task_states(run)
        got = committed(west, app, topic_name, [0, 1])
        assert got == {0: expected_target(view, 0, 7)[0], 1: expected_target(view, 1, 25)[0]}
        assert committed(west, busy, topic_name, [0]) == {0: None}, "a group with an active member was touched"
    finally:
        member.close()
    assert last_synced_offsets(cfg, flow, app) == {(topic_name, 0): 7, (topic_name, 1): 25}
    # active/active: the reverse flow does not carry the synced offsets back onto east
    back = next(f for f in cfg.flows if f.name == "west_to_east")
    assert sync_group_offsets(cfg, back, groups=[app]) == []
    assert committed(east, app, topic_name, [0, 1]) == {0: 7, 1: 25}

    # never backwards: west's group is further on p0; east's group went back on p1
    ahead = expected_target(view, 0, 30)[0]
    commit(west, app, {(topic_name, 0): ahead})
    commit(east, app, {(topic_name, 1): 3})
    rows = {r["partition"]: r for r in sync_group_offsets(cfg, flow, groups=[app])}
    assert not rows[0]["committed"] and not rows[1]["committed"] and "backwards" in rows[1]["action"]
    assert committed(west, app, topic_name, [0, 1]) == {0: ahead, 1: expected_target(view, 1, 25)[0]}
    # the group moved forward on east: synced forward; with the member gone, busy is synced too
    commit(east, app, {(topic_name, 1): 38})
    rows = {(r["group"], r["partition"]): r for r in sync_group_offsets(cfg, flow, groups=[app, busy])}
    assert rows[(app, 1)]["committed"] and rows[(busy, 0)]["committed"], rows
    assert committed(west, app, topic_name, [1]) == {1: expected_target(view, 1, 38)[0]}
    assert committed(west, busy, topic_name, [0]) == {0: expected_target(view, 0, 5)[0]}

    # the source gone (east's address refuses connections): what the sync recorded on west is
    # translated against west alone
    doc = yaml.safe_load(config.read_text())
    doc["clusters"]["east"] = {"bootstrap_servers": "127.0.0.1:9"}
    dead = tmp_path / "east-down.yaml"
    dead.write_text(yaml.safe_dump(doc, sort_keys=False))
    cfg_dead = load_config(dead)
    flow_dead = next(f for f in cfg_dead.flows if f.name == "east_to_west")
    synced = last_synced_offsets(cfg_dead, flow_dead, app)
    assert synced == {(topic_name, 0): 7, (topic_name, 1): 38}
    got = translate_group(cfg_dead, flow_dead, app, source_offsets=synced)
    assert [(t.partition, t.status, t.target_offset) for t in got] == [
        (0, EXACT, expected_target(view, 0, 7)[0]),
        (1, EXACT, expected_target(view, 1, 38)[0]),
    ]


def test_timestamp_fallback_without_provenance(lab, lab_config, tmp_path, topic_name):
    """Data on west copied by another tool (same records and timestamps, no provenance, no
    progress of the flow): the translation falls back to timestamps minus the margin."""
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    t0 = int(time.time() * 1000) - 3_600_000
    rows = [(b"k%d" % i, b"v%d" % i, [], t0 + 1000 * i, 0) for i in range(100)]  # one record per second
    for c, extra in ((east, []), (west, [(b"w", b"older", [], t0 - 100_000, 0)] * 5)):
        ensure_topic(clients.admin(c), topic_name, partitions=1)
        produce_all(clients.producer(c), topic_name, extra + rows)  # west: 5 extra records first
    cfg = load_config(flow_config(lab, tmp_path, [topic_name]))
    flow = next(f for f in cfg.flows if f.name == "east_to_west")
    tr = translate_offset(cfg, flow, topic_name, 0, 40, margin_seconds=0)
    assert (tr.status, tr.target_offset) == (APPROXIMATE, 45) and "approximate" in tr.reason
    tr = translate_offset(cfg, flow, topic_name, 0, 40, margin_seconds=10)  # 10 records within the margin
    assert (tr.status, tr.target_offset) == (APPROXIMATE, 35)
    tr = translate_offset(cfg, flow, topic_name, 0, 40)  # config default: 60 s
    assert tr.target_offset == 5 and tr.status == APPROXIMATE

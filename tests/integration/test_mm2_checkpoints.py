"""Re-reads after failover: our offset translation against MirrorMaker 2's checkpoints.

One topic on east, the same data replicated to west twice: by our copier (provenance, same name)
and by MirrorMaker 2 from Maven Central (dedicated mode, checkpoints every second, into
``east.<topic>``). A consumer group commits offsets on east at chosen points, most of them
mid-stream and off MirrorMaker's offset-sync boundaries. For each partition the test computes
the exact next-unread record on west (by provenance for ours, by the record's own id for
MirrorMaker's copy) and how many records the group would re-read (translated offset before
it) or skip (after it) with each translation.

Ours must re-read 0 and skip 0 everywhere. MirrorMaker's figures are recorded (printed, and
written to ``<lab>/mm2-checkpoints.json``) and only sanity-checked: a checkpoint for every
partition, never a skip, a re-read within the partition.
"""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import TopicPartition
from test_offset_translation import commit, expected_target, west_end, west_view
from test_replication import flow_config

from kafka_checks import read_topic
from kafka_dr.bench.mm2 import MirrorMaker2, Mm2Settings, decode_checkpoint, wait_running
from kafka_dr.core.config_load import load_config
from kafka_dr.kafka import clients
from kafka_dr.kafka.copier import RangeCopier
from kafka_dr.kafka.copy_spec import RangeSpec
from kafka_dr.kafka.offset_translation import translate_group
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.kafka.writing import produce_all

pytestmark = [pytest.mark.lab, pytest.mark.slow]

PARTITIONS, PER_PARTITION = 4, 1000
#: committed offsets per partition: start, mid-stream off any 100-record boundary, last record, end
GROUPS = {"a": [0, 137, 999, 1000], "b": [1, 250, 333, 777], "c": [42, 101, 501, 998]}


def _end_sum(cluster, topic: str) -> int:
    c = clients.consumer(cluster, "kafka-dr-tests")
    try:
        return sum(
            c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1] for p in range(PARTITIONS)
        )
    except Exception:  # noqa: BLE001 - not created yet
        return 0
    finally:
        c.close()


def _mm2_checkpoints(west, topic: str) -> dict:
    """Latest checkpoint per (group, topic, partition) in MirrorMaker's checkpoints topic."""
    out = {}
    for r in read_topic(west, topic):
        cp = decode_checkpoint(r.key, r.value)
        out[(cp.group, cp.topic, cp.partition)] = cp
    return out


def _mm2_view(west, topic: str) -> dict[int, list[tuple[int, int]]]:
    """Per partition of MirrorMaker's copy: (target offset, source offset from the record's id)."""
    out: dict[int, list] = {}
    for r in read_topic(west, topic):
        p, off = r.value.decode().split(":")[:2]
        out.setdefault(r.partition, []).append((r.offset, int(off)))
    return out


def _rereads(view_p: list[tuple[int, int | None]], translated: int, exact: int) -> tuple[int, int]:
    """(records re-read, records skipped) when resuming at ``translated`` instead of ``exact``,
    counting only this origin's records."""
    lo, hi = sorted((translated, exact))
    n = sum(1 for t, o in view_p if o is not None and lo <= t < hi)
    return (n, 0) if translated <= exact else (0, n)


def test_rereads_after_failover_ours_vs_mm2_checkpoints(lab, lab_config, tmp_path, topic_name):
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    ensure_topic(clients.admin(east), topic_name, partitions=PARTITIONS)
    rows = [
        (f"k{i}".encode(), f"{p}:{i}:payload".encode(), [("app", b"t")], None, p)
        for i in range(PER_PARTITION)
        for p in range(PARTITIONS)
    ]
    produce_all(clients.producer(east), topic_name, rows)

    # ours: the copy engine a Spark task runs, driven directly (what it writes, records,
    # provenance and progress, is all the translation reads; Spark adds only scheduling)
    config = flow_config(lab, tmp_path, [topic_name])
    cfg = load_config(config)
    flow = next(f for f in cfg.flows if f.name == "east_to_west")
    ensure_topic(clients.admin(west), topic_name, partitions=PARTITIONS)
    copier = RangeCopier(cfg, flow)
    try:
        for p in range(PARTITIONS):
            assert copier.copy(RangeSpec(topic_name, p, 0, PER_PARTITION, topic_name)).written == PER_PARTITION
    finally:
        copier.close()

    # MirrorMaker 2, defaults except checkpoints every second (offset.lag.max stays 100)
    settings = Mm2Settings(tasks=PARTITIONS, checkpoints=True, interval_seconds=1, run_id=f"mm2-{topic_name}")
    groups = {g: f"app-{g}-{uuid.uuid4().hex[:6]}" for g in GROUPS}
    with MirrorMaker2(tmp_path / "mm2", east, west, topic_name.replace(".", r"\."), settings) as mm:
        remote = mm.remote_topic(topic_name)
        wait_running(
            mm, lambda: _end_sum(west, remote) >= PARTITIONS * PER_PARTITION, 300, f"full copy of {topic_name}"
        )
        for g, offsets in GROUPS.items():
            commit(east, groups[g], {(topic_name, p): x for p, x in enumerate(offsets)})
        wanted = {(groups[g], remote, p) for g in GROUPS for p in range(PARTITIONS)}
        seen: dict = {}

        def all_checkpointed() -> bool:
            seen.update(
                _mm2_checkpoints(west, mm.checkpoints_topic) if _end_sum_any(west, mm.checkpoints_topic) else {}
            )
            return wanted <= {k for k, cp in seen.items() if cp.upstream_offset == GROUPS[_g(groups, k[0])][k[2]]}

        wait_running(mm, all_checkpointed, 180, "checkpoints for every committed partition")

    ours_view, mm2_view = west_view(west, topic_name), _mm2_view(west, remote)
    table, report = [], []
    for g, offsets in GROUPS.items():
        ours = {t.partition: t for t in translate_group(cfg, flow, groups[g])}
        for p, x in enumerate(offsets):
            exact_ours = expected_target(ours_view, p, x)[0]
            if exact_ours is None:
                exact_ours = west_end(west, topic_name, p)
            o_reread, o_skip = _rereads(ours_view[p], ours[p].target_offset, exact_ours)
            exact_mm2 = next((t for t, o in mm2_view[p] if o >= x), mm2_view[p][-1][0] + 1)
            cp = seen[(groups[g], remote, p)]
            m_reread, m_skip = _rereads(mm2_view[p], cp.downstream_offset, exact_mm2)
            report.append(
                {
                    "group": g,
                    "partition": p,
                    "committed": x,
                    "ours_target": ours[p].target_offset,
                    "ours_exact": exact_ours,
                    "ours_rereads": o_reread,
                    "ours_skips": o_skip,
                    "mm2_target": cp.downstream_offset,
                    "mm2_exact": exact_mm2,
                    "mm2_rereads": m_reread,
                    "mm2_skips": m_skip,
                }
            )
            table.append(
                f"{g:<6}{p:>4}{x:>10}{ours[p].target_offset:>8}{o_reread:>8}{o_skip:>6}{cp.downstream_offset:>8}{m_reread:>8}{m_skip:>6}"
            )
    print("\ngroup  part committed  ours@  reread  skip   mm2@  reread  skip")
    print("\n".join(table))
    totals = {k: sum(r[k] for r in report) for k in ("ours_rereads", "ours_skips", "mm2_rereads", "mm2_skips")}
    print(f"totals over {len(report)} partitions: {totals}")
    (lab.root / "mm2-checkpoints.json").write_text(json.dumps({"rows": report, "totals": totals}, indent=1))

    assert totals["ours_rereads"] == 0 and totals["ours_skips"] == 0, report
    # MirrorMaker 2: sanity only
    assert totals["mm2_skips"] == 0, report
    assert all(0 <= r["mm2_rereads"] < PER_PARTITION for r in report), report


def _g(groups: dict, name: str) -> str:
    return next(g for g, n in groups.items() if n == name)


def _end_sum_any(cluster, topic: str) -> bool:
    c = clients.consumer(cluster, "kafka-dr-tests")
    try:
        md = c.list_topics(topic=topic, timeout=10).topics.get(topic)
        return md is not None and md.error is None and bool(md.partitions)
    finally:
        c.close()

"""What a failback hands to the recovered cluster once the copy has caught up: the consumer
groups' positions (step 4, :func:`move_groups_back`) and, after a reseed, the seed's progress
to the normal flows (:func:`hand_over_seed`)."""

from __future__ import annotations

import re
import time

from confluent_kafka import TopicPartition

from kafka_dr.core import offsets as core_offsets
from kafka_dr.core.config import FlowConfig
from kafka_dr.core.failback import RESEED, decode_seed_map, resync_position, seeded_position
from kafka_dr.core.loop import router_for
from kafka_dr.core.progress import encode_metadata
from kafka_dr.core.provenance import origin_cluster
from kafka_dr.kafka import clients
from kafka_dr.kafka.consumer_groups import group_state
from kafka_dr.kafka.offset_translation import MOVE_PROBE_THREADS, Translator
from kafka_dr.kafka.partition_probe import PartitionProbe
from kafka_dr.kafka.progress_store import commit_with_retry, committed_with_retry, read_committed_progress
from kafka_dr.kafka.range_reads import read_ranges
from kafka_dr.kafka.reading import read_partitions
from kafka_dr.kafka.topics import partition_count, partition_ranges
from kafka_dr.workflows.failback_flows import FailbackRun

# --- consumer groups --------------------------------------------------------------------


def _survivor_groups(run: FailbackRun) -> list[str]:
    cfg = run.cfg
    admin = clients.admin(cfg.cluster(run.survivor), run.resolve)
    res = admin.list_consumer_groups(request_timeout=30).result(timeout=30)
    allow, deny = core_offsets.configured_groups(
        cfg.consumer_groups.allow, cfg.consumer_groups.deny, cfg.internal_prefix
    )
    rx = re.compile(run.groups or ".*")
    return sorted(
        g.group_id
        for g in res.valid
        if rx.fullmatch(g.group_id) and core_offsets.group_selected(g.group_id, allow, deny)
    )


def _group_offsets(run: FailbackRun, cluster: str, group: str, flow: FlowConfig) -> dict[tuple[str, int], int]:
    cfg = run.cfg
    c = clients.consumer(cfg.cluster(cluster), group, run.resolve)
    try:
        md = c.list_topics(timeout=15).topics
        tps = [
            TopicPartition(t, p)
            for t, m in md.items()
            if m.error is None and flow.topics.selects(t) and not cfg.names.is_internal(t)
            for p in m.partitions
        ]
        got = committed_with_retry(c, tps, 60) if tps else []
    finally:
        c.close()
    return {(tp.topic, tp.partition): tp.offset for tp in got if tp.error is None and tp.offset >= 0}


def _seed_runs(run: FailbackRun) -> dict[tuple[str, int], list]:
    cfg, recovered = run.cfg, run.recovered
    topic = cfg.names.seed_map_topic
    if partition_count(clients.admin(cfg.cluster(recovered), run.resolve), topic) is None:
        return {}
    c = clients.consumer(cfg.cluster(recovered), cfg.names.reader_group("failback-reader"), run.resolve)
    try:
        records = read_partitions(c, topic, [0], timeout=60)
    finally:
        c.close()
    runs: dict[tuple[str, int], dict] = {}
    for r in records:
        got = decode_seed_map(r.key, r.value)
        if got is not None:
            runs.setdefault((got[0], got[1]), {})[got[2].source_start] = got[2]
    return {k: list(v.values()) for k, v in runs.items()}


def _resync_positions(
    run: FailbackRun, flow: FlowConfig, group: str, offsets: dict, ends: dict
) -> dict[tuple[str, int], tuple[int, str, int | None]]:
    """Per partition: the translated position, moved down to the first record of the recovered
    cluster the group had not read on the survivor; why; and the translated position itself
    (where the group had read up to; ``None`` when untranslatable)."""
    cfg, recovered, survivor = run.cfg, run.recovered, run.survivor
    positions: dict[tuple[str, int], tuple[int, str, int | None]] = {}
    with Translator(cfg, flow, run.resolve, source_available=True, probe_threads=MOVE_PROBE_THREADS) as tr:
        translated = {(t.topic, t.partition): t for t in tr.translate(group, offsets)}
    probe_consumer = clients.consumer(cfg.cluster(survivor), cfg.names.reader_group("failback-reader"), run.resolve)
    try:
        s_ranges = partition_ranges(
            clients.admin(cfg.cluster(survivor), run.resolve), [TopicPartition(t, p) for t, p in offsets], survivor
        )
        for (t, p), x in offsets.items():
            tr_ = translated[(t, p)]
            # the first record of the recovered cluster the group had not read on the survivor
            probe = PartitionProbe(probe_consumer, survivor, t, p, s_ranges[(t, p)][1], recovered, t, p)
            hit = probe.first_from(x)
            pos = resync_position(
                tr_.target_offset if tr_.status != core_offsets.UNTRANSLATABLE else None,
                hit.origin_offset if hit else None,
                ends[(t, p)][1],
            )
            why = f"{tr_.status}: {tr_.reason}" + (
                f"; first unread {recovered} record at {hit.origin_offset}" if hit else ""
            )
            positions[(t, p)] = (pos, why, tr_.target_offset if tr_.status != core_offsets.UNTRANSLATABLE else None)
    finally:
        probe_consumer.close()
    return positions


def _rereads(
    run: FailbackRun, spans: dict[tuple[str, int], tuple[int, int | None]]
) -> dict[tuple[str, int], dict[str, int]]:
    """Per partition, the records on the recovered cluster between the group's new position and
    the position it had read up to, by origin cluster (a reseed's seed map does not say: left out)."""
    ranges = {k: (pos, read_to) for k, (pos, read_to) in spans.items() if read_to is not None and read_to > pos}
    out: dict[tuple[str, int], dict[str, int]] = {k: {} for k, (_, read_to) in spans.items() if read_to is not None}
    if not ranges:
        return out
    c = clients.consumer(run.cfg.cluster(run.recovered), run.cfg.names.reader_group("failback-reader"), run.resolve)
    try:
        for k, msg in read_ranges(c, run.recovered, ranges):
            origin = origin_cluster(msg.headers()) or run.recovered
            out[k][origin] = out[k].get(origin, 0) + 1
    finally:
        c.close()
    return out


def move_groups_back(run: FailbackRun) -> list[dict]:
    """Position every selected group of the survivor on the recovered cluster so that no
    record it has not read lies below its position; commit only while it has no active member
    there. The failback is authoritative: the group's old position on the recovered cluster
    (from before the outage) is replaced, backwards if need be, and the report says so."""
    cfg, recovered, dry_run = run.cfg, run.recovered, run.dry_run
    flow = run.copied_flow()
    tgt = cfg.cluster(recovered)
    t_admin = clients.admin(tgt, run.resolve)
    runs = _seed_runs(run) if run.mode == RESEED else {}
    report: list[dict] = []
    for group in _survivor_groups(run):
        offsets = _group_offsets(run, run.survivor, group, flow)
        if not offsets:
            continue
        ends = partition_ranges(t_admin, [TopicPartition(t, p) for t, p in offsets], recovered)
        if run.mode == RESEED:
            positions = {
                k: (seeded_position(runs.get(k, []), x, ends[k][1]), "seed map", None) for k, x in offsets.items()
            }
        else:
            positions = _resync_positions(run, flow, group, offsets, ends)
        rereads = _rereads(run, {k: (pos, read_to) for k, (pos, _, read_to) in positions.items()})
        state = group_state(t_admin, group, recovered)
        inactive = state.upper() in core_offsets.INACTIVE_GROUP_STATES
        current = _group_offsets(run, recovered, group, flow)
        rows = []
        for (t, p), (pos, why, _) in sorted(positions.items()):
            if dry_run:
                action = "would commit"
            else:
                action = "committed" if inactive else f"group is {state} on {recovered}: not touched"
            rows.append(
                {
                    "group": group,
                    "topic": t,
                    "partition": p,
                    "survivor_offset": offsets[(t, p)],
                    "target_offset": pos,
                    "previous_target_offset": current.get((t, p)),
                    "backwards": current.get((t, p), -1) > pos,
                    "how": why,
                    # what the group reads again on the recovered cluster: it had read it on the survivor
                    "reread": rereads.get((t, p)),
                    "committed": bool(inactive and not dry_run),
                    "action": action,
                }
            )
        if inactive and not dry_run:
            c = clients.consumer(tgt, group, run.resolve)
            try:
                commit_with_retry(c, [TopicPartition(r["topic"], r["partition"], r["target_offset"]) for r in rows])
            finally:
                c.close()
        report += rows
    return report


# --- the seed's progress ----------------------------------------------------------------


def _commit_progress(run: FailbackRun, flow: FlowConfig, positions: dict[tuple[str, int], int]) -> None:
    """Set ``flow``'s committed progress (on its target) to ``positions`` ({(target topic, p): next source offset})."""
    if not positions:
        return
    c = clients.consumer(run.cfg.cluster(flow.target), run.cfg.names.progress_group(flow.name), run.resolve)
    now = int(time.time() * 1000)
    try:
        commit_with_retry(c, [TopicPartition(t, p, o, encode_metadata(t, now)) for (t, p), o in positions.items()])
    finally:
        c.close()


def hand_over_seed(run: FailbackRun) -> dict:
    """After a reseed: the normal survivor -> recovered flow continues where the seed stopped,
    and the normal recovered -> survivor flow starts at the recovered cluster's current end
    (everything on it is already on the survivor)."""
    cfg, recovered, survivor = run.cfg, run.recovered, run.survivor
    seed = run.seed_flow()
    router = router_for(cfg, seed)  # the topics the seed copied, the heartbeat topic included
    out: dict = {}
    s_md = clients.admin(cfg.cluster(survivor), run.resolve).list_topics(timeout=15).topics
    keys = [(t, p) for t, m in s_md.items() if m.error is None and router.selects(t) for p in m.partitions]
    seed_progress = read_committed_progress(cfg, seed, keys, run.resolve)
    for f in run.flows(survivor, recovered):
        _commit_progress(run, f, {k: v["next_offset"] for k, v in seed_progress.items()})
        out[f.name] = f"continues from the seed's progress ({len(seed_progress)} partitions)"
    r_ends = {}
    if keys:
        r_admin = clients.admin(cfg.cluster(recovered), run.resolve)
        r_ends = partition_ranges(r_admin, [TopicPartition(t, p) for t, p in keys], recovered)
    for f in run.flows(recovered, survivor):
        _commit_progress(run, f, {k: end for k, (_, end) in r_ends.items()})
        out[f.name] = f"starts at {recovered}'s end ({len(r_ends)} partitions)"
    return out

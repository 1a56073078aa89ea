"""Failback from the survivor to a recovered cluster, step by step; each step idempotent.

``dr_failback`` runs these steps as tasks and ``kafka-dr failback`` runs them in a row (the
same code). The pure decisions are in :mod:`kafka_dr.core.failback`.

1. :func:`check_ready`: both clusters answer, the recovered one is recorded as failed, the
   mode fits what the recovered cluster holds (``reseed`` needs it empty, or a seed of ours
   to resume).
2. :func:`copy_until_caught_up`: ``resync`` runs the normal flows between the two (and, with
   no flow back, a transient one) until a round copies nothing; ``reseed`` runs the seeding
   pipeline (provenance rewritten, seed map kept) until a round copies nothing.
3. :func:`gate`: the clusters must hold the same records per topic-partition (count and an
   order-independent checksum over key, value, own headers, timestamp and origin); a failed
   gate stops the failback and names each difference.
4. :func:`move_groups_back`: consumer groups that read on the survivor are positioned on the
   recovered cluster where no unread record lies below them.
5. :func:`restart_flows`: hands the seed's progress to the normal flows (``reseed``), clears
   the failed mark, records the recovered cluster as active and schema primary. The normal
   replication DAGs then run again in both directions.

The flows touching a cluster marked failed are skipped by the replication DAGs, so nothing
else copies between the two while the failback runs.
"""

from __future__ import annotations

import logging
import re
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from confluent_kafka import TopicPartition

from kafka_dr.core import offsets as core_offsets
from kafka_dr.core.config import DrConfig, FlowConfig, LoopPolicy, TopicSelection
from kafka_dr.core.failback import (
    MODES,
    RESEED,
    RESYNC,
    FailbackRefused,
    decode_seed_map,
    in_window,
    narrowed,
    reseed_transform,
    resync_position,
    seeded_position,
    transient_flow,
)
from kafka_dr.core.dq import record_digest
from kafka_dr.core.progress import encode_metadata
from kafka_dr.core.provenance import ORIGIN
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.copier import RangeCopier, RangeSpec, commit_with_retry, committed_with_retry, read_committed_progress
from kafka_dr.kafka.state_store import reachable, read_state, write_state

log = logging.getLogger(__name__)

MAX_ROUNDS = 20
LATENCY_NOT_CHECKED_MS = 10 * 365 * 86400 * 1000.0  #: the gate's latency bound: ten years


def seed_flow_name(survivor: str, recovered: str) -> str:
    return f"reseed_{survivor}_to_{recovered}"


def back_flow_name(survivor: str, recovered: str) -> str:
    return f"failback_{survivor}_to_{recovered}"


# --- which flows ------------------------------------------------------------------------


def _flows(cfg: DrConfig, src: str, dst: str) -> list[FlowConfig]:
    return [f for f in cfg.flows if f.source == src and f.target == dst]


def _selection(cfg: DrConfig, recovered: str, survivor: str, topics: str | None) -> TopicSelection:
    """The topics the failback copies survivor -> recovered: those of the recovered cluster's
    own outgoing flows (what it held before the outage), narrowed by the operator's regex."""
    out = _flows(cfg, recovered, survivor) or _flows(cfg, survivor, recovered)
    if not out:
        raise FailbackRefused(f"no flow between {recovered!r} and {survivor!r} in the config: nothing to fail back")
    allow = tuple(a for f in out for a in f.topics.allow)
    deny = tuple(d for f in out for d in f.topics.deny)
    return narrowed(TopicSelection(allow=allow, deny=deny), topics)


def back_flow(cfg: DrConfig, recovered: str, survivor: str, topics: str | None) -> FlowConfig:
    """The flow that brings the survivor's outage writes back: the configured reverse flow, or
    (active/passive) a transient provenance flow that skips records of the recovered cluster."""
    configured = _flows(cfg, survivor, recovered)
    if configured:
        return configured[0]
    out = _flows(cfg, recovered, survivor)
    if out and out[0].loop_policy is not LoopPolicy.PROVENANCE:
        raise FailbackRefused(f"flow {out[0].name} uses loop policy {out[0].loop_policy.value}; a failback without a configured "
                              f"{survivor} -> {recovered} flow needs provenance (same topic names)")
    return transient_flow(back_flow_name(survivor, recovered), survivor, recovered, _selection(cfg, recovered, survivor, topics))


def seed_flow(cfg: DrConfig, recovered: str, survivor: str, topics: str | None) -> FlowConfig:
    sel = _selection(cfg, recovered, survivor, topics)
    for f in cfg.flows:
        if recovered in (f.source, f.target) and survivor in (f.source, f.target) and f.loop_policy is not LoopPolicy.PROVENANCE:
            raise FailbackRefused(f"reseed rewrites provenance headers of same-named topics; flow {f.name} uses loop policy "
                                  f"{f.loop_policy.value}: recreate the cluster with resync from a restored copy instead")
    if cfg.schema_mirror is not None:
        registry = cfg.cluster(survivor).schema_registry.topic
        sel = replace(sel, allow=(*sel.allow, re.escape(registry)))
    return transient_flow(seed_flow_name(survivor, recovered), survivor, recovered, sel)


# --- step 1 -----------------------------------------------------------------------------


def check_ready(cfg: DrConfig, recovered: str, survivor: str, mode: str, force: bool = False,
                resolve: SecretResolver | None = None, topics: str | None = None, groups: str | None = None,
                since_ms: int | None = None, until_ms: int | None = None) -> dict:
    """The first step: every input is checked here, before any step changes anything."""
    from kafka_dr.core.failover import cluster_pair_problem
    from kafka_dr.core.inputs import failback_problems, require_valid

    problem = cluster_pair_problem(list(cfg.clusters), ("recovered", recovered), ("surviving", survivor))
    if problem:
        raise FailbackRefused(problem)
    require_valid(failback_problems(cfg, recovered, survivor, groups, topics, since_ms, until_ms))
    if mode not in MODES:
        raise FailbackRefused(f"unknown mode {mode!r} (choose {' or '.join(MODES)})")
    for name in (survivor, recovered):
        if not reachable(cfg, name, resolve):
            raise FailbackRefused(f"cluster {name!r} ({cfg.cluster(name).bootstrap_servers}) does not answer; "
                                  f"a failback needs both clusters up")
    state = read_state(cfg, resolve)
    if recovered not in state.failed_clusters and not force:
        raise FailbackRefused(f"cluster {recovered!r} is not recorded as failed (state version {state.version}, failed: "
                              f"{', '.join(state.failed_clusters) or 'none'}); nothing to fail back, or trigger with force")
    out = {"recovered": recovered, "survivor": survivor, "mode": mode, "state_version": state.version}
    if mode == RESEED:
        flow = seed_flow(cfg, recovered, survivor, topics)
        out["data_on_recovered"] = held = _records_held(cfg, recovered, flow, resolve)
        started = _has_progress(cfg, flow, resolve)
        if held and not started and not force:
            raise FailbackRefused(f"reseed expects {recovered!r} to be new and empty, but it holds {held} record(s) in the "
                                  f"selected topics; use mode resync for a cluster that came back with its data")
        out["resuming_seed"] = started
    else:
        back = back_flow(cfg, recovered, survivor, topics)
        out["back_flow"] = back.name
    return out


def _records_held(cfg: DrConfig, cluster: str, flow: FlowConfig, resolve) -> int:
    c = clients.consumer(cfg.cluster(cluster), cfg.names.reader_group("failback-reader"), resolve)
    try:
        md = c.list_topics(timeout=15).topics
        total = 0
        for t, meta in md.items():
            if meta.error is None and flow.topics.selects(t) and not cfg.names.is_internal(t):
                for p in meta.partitions:
                    low, high = c.get_watermark_offsets(TopicPartition(t, p), timeout=15)
                    total += max(0, high - low)
        return total
    finally:
        c.close()


def _has_progress(cfg: DrConfig, flow: FlowConfig, resolve) -> bool:
    c = clients.consumer(cfg.cluster(flow.source), cfg.names.reader_group("failback-reader"), resolve)
    try:
        tps = [TopicPartition(t, p) for t, m in c.list_topics(timeout=15).topics.items()
               if m.error is None and flow.topics.selects(t) for p in m.partitions]
    finally:
        c.close()
    return bool(read_committed_progress(cfg, flow, [(tp.topic, tp.partition) for tp in tps], resolve)) if tps else False


# --- step 2 -----------------------------------------------------------------------------


def copy_round(cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None, transform=None, keep_timestamp=None,
               seed_map: str | None = None, threads: int = 4) -> dict:
    """One pass of ``flow`` over every selected partition up to its current end, with the
    replication engine's copier (transactional, progress on the target): the same exactly-once
    rules as the Spark job, run here because a failback copy is a bounded one-off."""
    from kafka_dr.kafka.planner import FlowPlanner
    from kafka_dr.kafka.topics import ensure_topic

    if seed_map:
        ensure_topic(clients.admin(cfg.cluster(flow.target), resolve), seed_map, 1, {"cleanup.policy": "compact"})
    planner = FlowPlanner(cfg, flow, resolve)
    start, end = planner.earliest(), planner.latest()
    specs = [RangeSpec(t, int(p), start[t][p], e, planner.target_topic(t)) for t, parts in end.items() for p, e in parts.items()]
    # a copier per partition (its consumer is not shared between threads); librdkafka
    # releases the GIL while it waits, so partitions copy in parallel
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(specs) or 1))) as pool:
        results = list(pool.map(lambda s: _copy_one(cfg, flow, resolve, transform, keep_timestamp, seed_map, s), specs))
    return {"flow": flow.name, "partitions": len(results), "written": sum(r.written for r in results),
            "filtered": sum(r.filtered for r in results), "lag": sum(r.lag for r in results),
            "by_topic": _by_topic(results)}


def _copy_one(cfg, flow, resolve, transform, keep_timestamp, seed_map, spec: RangeSpec):
    copier = RangeCopier(cfg, flow, resolve, transform=transform, keep_timestamp=keep_timestamp, seed_map_topic=seed_map)
    try:
        return copier.copy(spec)
    finally:
        copier.close()


def _by_topic(results) -> dict:
    out: dict[str, int] = {}
    for r in results:
        out[r.topic] = out.get(r.topic, 0) + r.written
    return out


def _pending(cfg: DrConfig, flow: FlowConfig, resolve) -> dict[str, int]:
    """Per source topic, records of ``flow``'s source beyond its committed progress (what a
    round would read; the loop policy may still filter some)."""
    from kafka_dr.kafka.planner import FlowPlanner

    planner = FlowPlanner(cfg, flow, resolve, create_targets=False)  # a dry run creates nothing
    start, end = planner.earliest(), planner.latest()
    keys = [(planner.target_topic(t), int(p)) for t, parts in end.items() for p in parts]
    done = read_committed_progress(cfg, flow, keys, resolve)
    out: dict[str, int] = {}
    for t, parts in end.items():
        for p, e in parts.items():
            s = done.get((planner.target_topic(t), int(p)), {}).get("next_offset", start[t][p])
            out[t] = out.get(t, 0) + max(0, e - max(s, start[t][p]))
    return out


def copy_until_caught_up(cfg: DrConfig, recovered: str, survivor: str, mode: str, dry_run: bool = True, topics: str | None = None,
                         since_ms: int | None = None, until_ms: int | None = None, resolve: SecretResolver | None = None,
                         max_rounds: int = MAX_ROUNDS) -> dict:
    """Copy in rounds until a round finds nothing new in any direction (the ordering guard:
    producers move back only after this), then report what went where."""
    if mode == RESEED:
        flow = seed_flow(cfg, recovered, survivor, topics)
        registry = {cfg.cluster(survivor).schema_registry.topic} if cfg.schema_mirror is not None else set()
        plans = [(flow, dict(transform=reseed_transform(survivor, recovered, frozenset(registry)), seed_map=cfg.names.seed_map_topic))]
    else:
        window = None
        if since_ms is not None or until_ms is not None:
            window = lambda ts: in_window(ts, since_ms, until_ms)  # noqa: E731
        back = back_flow(cfg, recovered, survivor, topics)
        plans = [(f, {}) for f in _flows(cfg, recovered, survivor)]
        plans.append((back, {"keep_timestamp": window} if back.name == back_flow_name(survivor, recovered) else {}))
    if dry_run:
        return {"mode": mode, "dry_run": True, "would_copy": {f.name: _pending(cfg, f, resolve) for f, _ in plans}}
    totals = {f.name: 0 for f, _ in plans}
    rounds = 0
    for rounds in range(1, max_rounds + 1):
        written = 0
        for f, kw in plans:
            r = copy_round(cfg, f, resolve, **kw)
            totals[f.name] += r["written"]
            written += r["written"]
        if written == 0:
            break
    else:
        raise RuntimeError(f"failback {survivor} -> {recovered}: still copying after {max_rounds} rounds ({totals}); "
                           f"the survivor's producers write faster than the failback copies")
    report = {"mode": mode, "rounds": rounds, "written": totals}
    if mode == RESEED:
        # the normal flows take over now (they stay skipped until restart_flows clears the
        # failed mark), so the data-quality gate can compare them at their watermarks
        report["handover"] = hand_over_seed(cfg, recovered, survivor, topics, resolve)
    if mode == RESYNC:
        # the recovered cluster's records that had not reached the survivor before the outage
        # arrive there now, after the outage writes
        report["arrived_out_of_order_on_survivor"] = sum(totals[f.name] for f in _flows(cfg, recovered, survivor))
    return report


# --- step 3: the gate -------------------------------------------------------------------


def _identity(rec, here: str) -> tuple[int, bytes]:
    """What must be equal on both clusters for one logical record: the data-quality digest
    (key, value, own headers, timestamp) and the origin (local records are ``here``'s)."""
    origin = next((v for k, v in rec.headers or () if k == ORIGIN), None)
    return record_digest(rec.key, rec.value, rec.headers, rec.timestamp_ms), origin if origin is not None else here.encode()


def _partition_digests(cfg: DrConfig, cluster: str, topic: str, partition: int, resolve, keep: bool):
    """(count, order-independent checksum, per-digest offsets if ``keep``) of one partition."""
    from kafka_dr.kafka.reading import read_partitions

    c = clients.consumer(cfg.cluster(cluster), cfg.names.reader_group("failback-gate"), resolve)
    try:
        records = read_partitions(c, topic, [partition], timeout=120)
    finally:
        c.close()
    total, checksum, where = 0, 0, {}
    for r in records:
        d = _identity(r, cluster)
        total += 1
        checksum = (checksum + d[0] + zlib.crc32(d[1])) % (1 << 64)
        if keep:
            where.setdefault(d, []).append(r.offset)
    return total, checksum, where


def gate(cfg: DrConfig, recovered: str, survivor: str, mode: str, topics: str | None = None,
         resolve: SecretResolver | None = None) -> dict:
    """Every selected topic-partition must hold the same records on both clusters. Raises
    :class:`GateFailed` naming each difference (which side, which offsets)."""
    flow = seed_flow(cfg, recovered, survivor, topics) if mode == RESEED else back_flow(cfg, recovered, survivor, topics)
    a = clients.admin(cfg.cluster(survivor), resolve)
    md = a.list_topics(timeout=15).topics
    partitions = [(t, p) for t, m in sorted(md.items()) if m.error is None and flow.topics.selects(t)
                  and not cfg.names.is_internal(t) and t != cfg.cluster(survivor).schema_registry.topic
                  for p in sorted(m.partitions)]
    problems: list[str] = []
    checked = 0
    for t, p in partitions:
        s_count, s_sum, _ = _partition_digests(cfg, survivor, t, p, resolve, keep=False)
        r_count, r_sum, _ = _partition_digests(cfg, recovered, t, p, resolve, keep=False)
        checked += s_count
        if (s_count, s_sum) == (r_count, r_sum):
            continue
        _, _, s_where = _partition_digests(cfg, survivor, t, p, resolve, keep=True)
        _, _, r_where = _partition_digests(cfg, recovered, t, p, resolve, keep=True)
        for d in set(s_where) | set(r_where):
            so, ro = s_where.get(d, []), r_where.get(d, [])
            if len(so) > len(ro):
                problems.append(f"{t}[{p}]: {survivor}@{so[len(ro):][:5]} missing on {recovered}")
            elif len(ro) > len(so):
                problems.append(f"{t}[{p}]: {recovered}@{ro[len(so):][:5]} not on {survivor} (extra or duplicated)")
    if problems:
        raise GateFailed(f"failback gate: {recovered} and {survivor} differ in {len(problems)} place(s): " + "; ".join(problems[:20]),
                         problems)
    out = {"partitions": len(partitions), "records_checked": checked, "differences": 0}
    out["data_quality"] = data_quality_gate(cfg, recovered, survivor, mode, sorted({t for t, _ in partitions}) if topics and topics != ".*" else None,
                                            resolve)
    return out


def data_quality_gate(cfg: DrConfig, recovered: str, survivor: str, mode: str, topics: list[str] | None,
                      resolve: SecretResolver | None = None) -> dict:
    """The data-quality comparison (Spark + GX) of the configured flows between the two, at
    their watermarks. After a reseed only survivor -> recovered is compared: the recovered
    cluster's own records sit at new offsets, which the survivor's provenance cannot name."""
    from kafka_dr.core.dq import DataQualityFailed
    from kafka_dr.dq import run_data_quality

    flows = [f.name for f in cfg.flows if f.enabled and {f.source, f.target} == {recovered, survivor}
             and (mode == RESYNC or f.source == survivor)]
    if not flows:
        return {"skipped": f"no configured flow {survivor} -> {recovered} to compare"}
    # correctness only: what the outage delayed has a large replication latency by nature
    result = run_data_quality(cfg, flows=flows, topics=topics, resolve=resolve, latency_max_ms=LATENCY_NOT_CHECKED_MS)
    if not result.success:
        raise DataQualityFailed(result)
    return {"run_id": result.run_id, "checked_partitions": result.checked_partitions, "docs_path": result.docs_path}


class GateFailed(RuntimeError):
    def __init__(self, message: str, problems: list[str]) -> None:
        super().__init__(message)
        self.problems = problems


# --- step 4 -----------------------------------------------------------------------------


def _survivor_groups(cfg: DrConfig, survivor: str, pattern: str, resolve) -> list[str]:
    admin = clients.admin(cfg.cluster(survivor), resolve)
    res = admin.list_consumer_groups(request_timeout=30).result(timeout=30)
    allow, deny = core_offsets.configured_groups(cfg.consumer_groups.allow, cfg.consumer_groups.deny, cfg.internal_prefix)
    rx = re.compile(pattern or ".*")
    return sorted(g.group_id for g in res.valid if rx.fullmatch(g.group_id) and core_offsets.group_selected(g.group_id, allow, deny))


def _group_offsets(cfg: DrConfig, cluster: str, group: str, flow: FlowConfig, resolve) -> dict[tuple[str, int], int]:
    c = clients.consumer(cfg.cluster(cluster), group, resolve)
    try:
        md = c.list_topics(timeout=15).topics
        tps = [TopicPartition(t, p) for t, m in md.items() if m.error is None and flow.topics.selects(t)
               and not cfg.names.is_internal(t) for p in m.partitions]
        got = committed_with_retry(c, tps, 60) if tps else []
    finally:
        c.close()
    return {(tp.topic, tp.partition): tp.offset for tp in got if tp.error is None and tp.offset >= 0}


def _seed_runs(cfg: DrConfig, recovered: str, resolve) -> dict[tuple[str, int], list]:
    from kafka_dr.kafka.reading import read_partitions
    from kafka_dr.kafka.topics import partition_count

    topic = cfg.names.seed_map_topic
    if partition_count(clients.admin(cfg.cluster(recovered), resolve), topic) is None:
        return {}
    c = clients.consumer(cfg.cluster(recovered), cfg.names.reader_group("failback-reader"), resolve)
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


def move_groups_back(cfg: DrConfig, recovered: str, survivor: str, mode: str, groups: str = ".*", dry_run: bool = True,
                     topics: str | None = None, resolve: SecretResolver | None = None) -> list[dict]:
    """Position every selected group of the survivor on the recovered cluster so that no
    record it has not read lies below its position; commit only while it has no active member
    there. The failback is authoritative: the group's old position on the recovered cluster
    (from before the outage) is replaced, backwards if need be, and the report says so."""
    from kafka_dr.kafka.offset_translation import Translator, _PartitionProbe, _group_state, _ranges

    flow = seed_flow(cfg, recovered, survivor, topics) if mode == RESEED else back_flow(cfg, recovered, survivor, topics)
    tgt = cfg.cluster(recovered)
    t_admin = clients.admin(tgt, resolve)
    runs = _seed_runs(cfg, recovered, resolve) if mode == RESEED else {}
    report: list[dict] = []
    for group in _survivor_groups(cfg, survivor, groups, resolve):
        offsets = _group_offsets(cfg, survivor, group, flow, resolve)
        if not offsets:
            continue
        ends = _ranges(t_admin, [TopicPartition(t, p) for t, p in offsets], recovered)
        positions: dict[tuple[str, int], tuple[int, str]] = {}
        if mode == RESEED:
            for k, x in offsets.items():
                positions[k] = (seeded_position(runs.get(k, []), x, ends[k][1]), "seed map")
        else:
            with Translator(cfg, flow, resolve, source_available=True) as tr:
                translated = {(t.topic, t.partition): t for t in tr.translate(group, offsets)}
            probe_consumer = clients.consumer(cfg.cluster(survivor), cfg.names.reader_group("failback-reader"), resolve)
            try:
                s_ranges = _ranges(clients.admin(cfg.cluster(survivor), resolve), [TopicPartition(t, p) for t, p in offsets], survivor)
                for (t, p), x in offsets.items():
                    tr_ = translated[(t, p)]
                    # the first record of the recovered cluster the group had not read on the survivor
                    probe = _PartitionProbe(probe_consumer, survivor, t, p, s_ranges[(t, p)][1], recovered, t, p)
                    hit = probe.first_from(x)
                    pos = resync_position(tr_.target_offset if tr_.status != core_offsets.UNTRANSLATABLE else None,
                                          hit.origin_offset if hit else None, ends[(t, p)][1])
                    positions[(t, p)] = (pos, f"{tr_.status}: {tr_.reason}" + (f"; first unread {recovered} record at {hit.origin_offset}" if hit else ""))
            finally:
                probe_consumer.close()
        state = _group_state(t_admin, group, recovered)
        inactive = state.upper() in core_offsets.INACTIVE_GROUP_STATES
        current = _group_offsets(cfg, recovered, group, flow, resolve)
        rows = []
        for (t, p), (pos, why) in sorted(positions.items()):
            rows.append({"group": group, "topic": t, "partition": p, "survivor_offset": offsets[(t, p)], "target_offset": pos,
                         "previous_target_offset": current.get((t, p)), "backwards": current.get((t, p), -1) > pos, "how": why,
                         "committed": bool(inactive and not dry_run),
                         "action": "would commit" if dry_run else ("committed" if inactive else f"group is {state} on {recovered}: not touched")})
        if inactive and not dry_run:
            c = clients.consumer(tgt, group, resolve)
            try:
                commit_with_retry(c, [TopicPartition(r["topic"], r["partition"], r["target_offset"]) for r in rows])
            finally:
                c.close()
        report += rows
    return report


# --- step 5 -----------------------------------------------------------------------------


def _commit_progress(cfg: DrConfig, flow: FlowConfig, positions: dict[tuple[str, int], int], resolve) -> None:
    """Set ``flow``'s committed progress (on its target) to ``positions`` ({(target topic, p): next source offset})."""
    if not positions:
        return
    c = clients.consumer(cfg.cluster(flow.target), cfg.names.progress_group(flow.name), resolve)
    now = int(time.time() * 1000)
    try:
        commit_with_retry(c, [TopicPartition(t, p, o, encode_metadata(t, now)) for (t, p), o in positions.items()])
    finally:
        c.close()


def hand_over_seed(cfg: DrConfig, recovered: str, survivor: str, topics: str | None, resolve) -> dict:
    """After a reseed: the normal survivor -> recovered flow continues where the seed stopped,
    and the normal recovered -> survivor flow starts at the recovered cluster's current end
    (everything on it is already on the survivor)."""
    from kafka_dr.kafka.offset_translation import _ranges

    from kafka_dr.core.loop import router_for

    seed = seed_flow(cfg, recovered, survivor, topics)
    router = router_for(cfg, seed)  # the topics the seed copied, the heartbeat topic included
    out: dict = {}
    s_md = clients.admin(cfg.cluster(survivor), resolve).list_topics(timeout=15).topics
    keys = [(t, p) for t, m in s_md.items() if m.error is None and router.selects(t) for p in m.partitions]
    seed_progress = read_committed_progress(cfg, seed, keys, resolve)
    for f in _flows(cfg, survivor, recovered):
        _commit_progress(cfg, f, {k: v["next_offset"] for k, v in seed_progress.items()}, resolve)
        out[f.name] = f"continues from the seed's progress ({len(seed_progress)} partitions)"
    r_ends = _ranges(clients.admin(cfg.cluster(recovered), resolve), [TopicPartition(t, p) for t, p in keys], recovered) if keys else {}
    for f in _flows(cfg, recovered, survivor):
        _commit_progress(cfg, f, {k: end for k, (_, end) in r_ends.items()}, resolve)
        out[f.name] = f"starts at {recovered}'s end ({len(r_ends)} partitions)"
    return out


def restart_flows(cfg: DrConfig, recovered: str, survivor: str, mode: str, dry_run: bool = True, topics: str | None = None,
                  resolve: SecretResolver | None = None) -> dict:
    state = read_state(cfg, resolve)
    done = recovered not in state.failed_clusters and state.active_cluster == recovered
    out: dict = {"flows": [f.name for f in cfg.flows if {f.source, f.target} == {recovered, survivor}]}
    if done:
        return {**out, "state": "already recorded", "version": state.version}
    if dry_run:
        return {**out, "state": "would record", "active_cluster": recovered, "version": state.version + 1}
    event = {"kind": "failback", "mode": mode, "recovered": recovered, "survivor": survivor, "at_ms": int(time.time() * 1000)}
    primary = cfg.schema_mirror.primary if cfg.schema_mirror is not None else recovered
    new = replace(state, version=state.version + 1, active_cluster=recovered, schema_primary=primary,
                  failed_clusters=tuple(c for c in state.failed_clusters if c != recovered), last_event=event)
    out.update(state=write_state(cfg, new, resolve), active_cluster=recovered, version=new.version)
    return out


def run_failback(cfg: DrConfig, recovered: str, survivor: str, mode: str, groups: str = ".*", topics: str | None = None,
                 dry_run: bool = True, force: bool = False, since_ms: int | None = None, until_ms: int | None = None,
                 resolve: SecretResolver | None = None) -> dict:
    """Every step in order; the CLI twin of the DAG. Returns the summary."""
    summary: dict = {"recovered": recovered, "survivor": survivor, "mode": mode, "dry_run": dry_run}
    summary["check"] = check_ready(cfg, recovered, survivor, mode, force, resolve, topics, groups, since_ms, until_ms)
    summary["copy"] = copy_until_caught_up(cfg, recovered, survivor, mode, dry_run, topics, since_ms, until_ms, resolve)
    summary["gate"] = {"skipped": "dry run"} if dry_run else gate(cfg, recovered, survivor, mode, topics, resolve)
    summary["consumer_groups"] = move_groups_back(cfg, recovered, survivor, mode, groups, dry_run, topics, resolve)
    summary["restart"] = restart_flows(cfg, recovered, survivor, mode, dry_run, topics, resolve)
    return summary


def format_summary(s: dict) -> str:
    lines = [f"failback {s['survivor']} -> {s['recovered']} ({s['mode']}){' (DRY RUN: nothing changed)' if s.get('dry_run') else ''}"]
    copy = s.get("copy", {})
    if "would_copy" in copy:
        lines += [f"  {name}: would read {n} record(s) of {t}" for name, by_topic in copy["would_copy"].items()
                  for t, n in sorted(by_topic.items()) if n]
    else:
        lines += [f"  {name}: copied {n} record(s)" for name, n in copy.get("written", {}).items()]
        if "arrived_out_of_order_on_survivor" in copy:
            lines.append(f"  {copy['arrived_out_of_order_on_survivor']} record(s) of {s['recovered']} that were never replicated "
                         f"before the outage reached {s['survivor']} after its outage writes (out of order there)")
    g = s.get("gate", {})
    if "records_checked" in g:
        lines.append(f"  gate: {g['partitions']} partition(s), {g['records_checked']} record(s) equal on both clusters")
    for r in s.get("consumer_groups", []):
        lines.append(f"  group {r['group']} {r['topic']}[{r['partition']}]: {r['action']} at {r['target_offset']}"
                     + (" (moved backwards)" if r.get("backwards") else ""))
    active = s.get("restart", {}).get("active_cluster", s["recovered"])
    lines.append(f"  active cluster would be: {active}" if s.get("dry_run") else f"  active cluster: {active}")
    return "\n".join(lines)

"""Step 3 of a failback, the gate: the two clusters must hold the same records per
topic-partition (count and an order-independent checksum; on a compacted topic the same latest
record per key), up to the copied flow's committed progress on the survivor and, in
active/active, the flow back's on the recovered cluster (applications may write to either
while the failback runs), and the data-quality comparison (Spark + GX) of the flows between
them must pass (unless the operator turned it off for this failback). A failed gate stops the
failback and names each difference."""

from __future__ import annotations

from collections import Counter

from kafka_dr.core.dq import DataQualityFailed, is_compacted
from kafka_dr.core.failback import RESYNC
from kafka_dr.core.loop import router_for
from kafka_dr.core.partition_compare import latest_by_key, latest_differences, split_in_flight
from kafka_dr.dq import run_data_quality
from kafka_dr.kafka import clients
from kafka_dr.kafka.progress_store import read_committed_progress
from kafka_dr.kafka.reading import read_partitions
from kafka_dr.kafka.topic_admin import describe_topic_configs
from kafka_dr.workflows.failback_flows import FailbackRun

#: (the copied flow's progress on the survivor, the flow back's on the recovered cluster)
Bounds = tuple[int | None, int | None]
LATENCY_NOT_CHECKED_MS = 10 * 365 * 86400 * 1000.0  #: the gate's latency bound: ten years
SKIPPED_BY_OPERATOR = "turned off for this failback: the next dr_data_quality run judges what it copied"


class GateFailed(RuntimeError):
    def __init__(self, message: str, problems: list[str]) -> None:
        super().__init__(message)
        self.problems = problems


def _read(run: FailbackRun, cluster: str, topic: str, partition: int):
    """Every record of one partition, in offset order (the survivor's in-flight ones: see
    :func:`~kafka_dr.core.partition_compare.split_in_flight`)."""
    c = clients.consumer(run.cfg.cluster(cluster), run.cfg.names.reader_group("failback-gate"), run.resolve)
    try:
        return read_partitions(c, topic, [partition], timeout=120)
    finally:
        c.close()


def _both_sides(run: FailbackRun, t: str, p: int, upto: Bounds) -> tuple[list, list, list]:
    """(survivor's records compared, recovered's compared, every record in flight either way)."""
    s_recs, s_flight = split_in_flight(_read(run, run.survivor, t, p), run.survivor, upto[0])
    r_recs, r_flight = split_in_flight(
        _read(run, run.recovered, t, p), run.recovered, upto[1], skip=[d for _, d in s_flight], own_only=True
    )
    # the survivor's copies of what is in flight from the recovered cluster, one per identity
    late = Counter(d for _, d in r_flight) - Counter(d for _, d in s_flight)
    s_kept = []
    for r, d in s_recs:
        if late[d] > 0:
            late[d] -= 1
        else:
            s_kept.append((r, d))
    return s_kept, r_recs, s_flight + r_flight


def _record_differences(run: FailbackRun, t: str, p: int, upto: Bounds) -> tuple[int, list[str]]:
    """(records compared, differences) of a delete-policy partition: the same multiset."""
    recovered, survivor = run.recovered, run.survivor
    s_recs, r_recs, _ = _both_sides(run, t, p, upto)
    s_where: dict = {}
    r_where: dict = {}
    for recs, where in ((s_recs, s_where), (r_recs, r_where)):
        for r, d in recs:
            where.setdefault(d, []).append(r.offset)
    problems = []
    for d in set(s_where) | set(r_where):
        so, ro = s_where.get(d, []), r_where.get(d, [])
        if len(so) > len(ro):
            problems.append(f"{t}[{p}]: {survivor}@{so[len(ro) :][:5]} missing on {recovered}")
        elif len(ro) > len(so):
            problems.append(f"{t}[{p}]: {recovered}@{ro[len(so) :][:5]} not on {survivor} (extra or duplicated)")
    return len(s_recs), sorted(problems)


def _latest_differences(run: FailbackRun, t: str, p: int, upto: Bounds) -> tuple[int, list[str]]:
    """(keys compared, differences) of a compacted partition: the same latest record per key,
    keys with a record in flight left out."""
    s_recs, r_recs, in_flight = _both_sides(run, t, p, upto)
    moving = {r.key for r, _ in in_flight}  # a newer value is on its way
    s_latest = latest_by_key((r for r, _ in s_recs), run.survivor, moving)
    r_latest = latest_by_key((r for r, _ in r_recs), run.recovered, moving)
    return len(s_latest), latest_differences(f"{t}[{p}]", run.survivor, run.recovered, s_latest, r_latest)


def _progress_back(run: FailbackRun, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int | None]:
    """Per partition, the committed progress of the enabled flow recovered -> survivor (none:
    not active/active, and the recovered cluster's records are all compared)."""
    back = [f for f in run.cfg.flows if f.enabled and f.source == run.recovered and f.target == run.survivor]
    if not back:
        return {}
    router = router_for(run.cfg, back[0])
    targets = {(t, p): (router.target_topic(t), p) for t, p in partitions if router.target_topic(t) is not None}
    got = read_committed_progress(run.cfg, back[0], sorted(set(targets.values())), run.resolve)
    # no progress yet: nothing of the recovered cluster's own is known copied, all in flight
    return {k: (got.get(tp) or {}).get("next_offset", 0) for k, tp in targets.items()}


def gate(run: FailbackRun) -> dict:
    """Every selected topic-partition must hold the same records on both clusters. Raises
    :class:`GateFailed` naming each difference (which side, which offsets)."""
    cfg, recovered, survivor = run.cfg, run.recovered, run.survivor
    flow = run.copied_flow()
    a = clients.admin(cfg.cluster(survivor), run.resolve)
    md = a.list_topics(timeout=15).topics
    partitions = [
        (t, p)
        for t, m in sorted(md.items())
        if m.error is None
        and flow.topics.selects(t)
        and not cfg.names.is_internal(t)
        and t != cfg.cluster(survivor).schema_registry.topic
        for p in sorted(m.partitions)
    ]
    configs = describe_topic_configs(a, sorted({t for t, _ in partitions}), explicit_only=False, missing_ok=True)
    compacted = {t for t, c in configs.items() if is_compacted(c.get("cleanup.policy"))}
    progress = read_committed_progress(cfg, flow, partitions, run.resolve)
    back = _progress_back(run, partitions)
    problems: list[str] = []
    checked = 0
    for t, p in partitions:
        compare = _latest_differences if t in compacted else _record_differences
        n, found = compare(run, t, p, ((progress.get((t, p)) or {}).get("next_offset"), back.get((t, p))))
        checked += n
        problems += found
    if problems:
        raise GateFailed(
            f"failback gate: {recovered} and {survivor} differ in {len(problems)} place(s): "
            + "; ".join(problems[:20]),
            problems,
        )
    out = {"partitions": len(partitions), "records_checked": checked, "differences": 0}
    if not run.data_quality:
        out["data_quality"] = {"skipped": SKIPPED_BY_OPERATOR}
        return out
    narrowed = run.topics and run.topics != ".*"
    out["data_quality"] = data_quality_gate(run, sorted({t for t, _ in partitions}) if narrowed else None)
    return out


def data_quality_gate(run: FailbackRun, topics: list[str] | None) -> dict:
    """The data-quality comparison (Spark + GX) of the configured flows between the two, at
    their watermarks, over ``topics`` (``None``: all of theirs). After a reseed only
    survivor -> recovered is compared: the recovered cluster's own records sit at new offsets,
    which the survivor's provenance cannot name."""
    cfg, recovered, survivor = run.cfg, run.recovered, run.survivor
    flows = [
        f.name
        for f in cfg.flows
        if f.enabled and {f.source, f.target} == {recovered, survivor} and (run.mode == RESYNC or f.source == survivor)
    ]
    if not flows:
        return {"skipped": f"no configured flow {survivor} -> {recovered} to compare"}
    # correctness only: what the outage delayed has a large replication latency by nature. In
    # full: the gate vouches for everything the recovered cluster holds, not only what is new
    result = run_data_quality(
        cfg, flows=flows, topics=topics, resolve=run.resolve, latency_max_ms=LATENCY_NOT_CHECKED_MS, full=True
    )
    if not result.success:
        raise DataQualityFailed(result)
    return {"run_id": result.run_id, "checked_partitions": result.checked_partitions, "docs_path": result.docs_path}

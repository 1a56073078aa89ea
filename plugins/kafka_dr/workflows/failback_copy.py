"""Step 2 of a failback: copy in rounds until caught up, with the replication engine's copier
run outside Spark (a failback copy is a bounded one-off).

Caught up: a round copied nothing, or copied everything pending at its start within
:data:`CAUGHT_UP_SECONDS`. Producers may still write to the survivor (they move back only
after the run); what they write after the last round is left to the normal flows, which run
again once the failback ends, and the gate leaves it out as in flight."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.failback import RESEED, RESYNC, in_window, reseed_transform
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.copier import RangeCopier
from kafka_dr.kafka.copy_spec import RangeSpec, Reseed
from kafka_dr.kafka.copy_tuning import CopyTuning
from kafka_dr.kafka.orphaned_offsets import floor_progress_at_copies
from kafka_dr.kafka.planner import FlowPlanner
from kafka_dr.kafka.progress_store import read_committed_progress
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.workflows.failback_flows import FailbackRun
from kafka_dr.workflows.failback_handover import hand_over_seed

MAX_ROUNDS = 20
#: a round that copied all its backlog within this leaves less than this much of the survivor's writes behind
CAUGHT_UP_SECONDS = 15.0


def copy_round(
    cfg: DrConfig,
    flow: FlowConfig,
    resolve: SecretResolver | None = None,
    transform=None,
    keep_timestamp=None,
    seed_map: str | None = None,
    threads: int = 4,
) -> dict:
    """One pass of ``flow`` over every selected partition up to its current end, with the
    replication engine's copier (transactional, progress on the target): the same exactly-once
    rules as the Spark job, run here because a failback copy is a bounded one-off."""
    if seed_map:
        ensure_topic(clients.admin(cfg.cluster(flow.target), resolve), seed_map, 1, {"cleanup.policy": "compact"})
    planner = FlowPlanner(cfg, flow, resolve)
    start, end = planner.earliest(), planner.latest()
    specs = [
        RangeSpec(t, int(p), start[t][p], e, planner.target_topic(t))
        for t, parts in end.items()
        for p, e in parts.items()
    ]
    # a copier per partition (its consumer is not shared between threads); librdkafka
    # releases the GIL while it waits, so partitions copy in parallel
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(specs) or 1))) as pool:
        results = list(pool.map(lambda s: _copy_one(cfg, flow, resolve, transform, keep_timestamp, seed_map, s), specs))
    return {
        "flow": flow.name,
        "partitions": len(results),
        "written": sum(r.written for r in results),
        "filtered": sum(r.filtered for r in results),
        "lag": sum(r.lag for r in results),
        "by_topic": _by_topic(results),
    }


def _copy_one(cfg, flow, resolve, transform, keep_timestamp, seed_map, spec: RangeSpec):
    copier = RangeCopier(
        cfg, flow, resolve, tuning=CopyTuning.backlog(), reseed=Reseed(transform, keep_timestamp, seed_map)
    )
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


def _floor_progress(cfg: DrConfig, flow: FlowConfig, resolve) -> None:
    """Before the first round: the flow's progress is not behind its copies on the target. The
    recovered cluster's brokers have just come back from an outage, and the copy trusts the
    progress they replay (:func:`~kafka_dr.kafka.orphaned_offsets.floor_progress_at_copies`)."""
    planner = FlowPlanner(cfg, flow, resolve, create_targets=False)
    pairs = [(t, planner.target_topic(t), int(p)) for t, parts in planner.latest().items() for p in parts]
    if pairs:
        floor_progress_at_copies(cfg, flow, pairs, resolve)


def _plans(run: FailbackRun) -> list[tuple[FlowConfig, dict]]:
    """The flows a round copies, each with its copier options."""
    cfg, recovered, survivor = run.cfg, run.recovered, run.survivor
    if run.mode == RESEED:
        registry = {cfg.cluster(survivor).schema_registry.topic} if cfg.schema_mirror is not None else set()
        transform = reseed_transform(survivor, recovered, frozenset(registry))
        return [(run.seed_flow(), dict(transform=transform, seed_map=cfg.names.seed_map_topic))]
    window = None
    if run.since_ms is not None or run.until_ms is not None:
        window = lambda ts: in_window(ts, run.since_ms, run.until_ms)  # noqa: E731
    back = run.back_flow()
    plans = [(f, {}) for f in run.flows(recovered, survivor)]
    plans.append(
        (back, {"keep_timestamp": window} if back.name == cfg.names.failback_flow(survivor, recovered) else {})
    )
    return plans


def copy_until_caught_up(run: FailbackRun, max_rounds: int = MAX_ROUNDS) -> dict:
    """Copy in rounds until caught up in every direction (the ordering guard: producers move
    back only after this), then report what went where."""
    plans = _plans(run)
    if run.dry_run:
        return {
            "mode": run.mode,
            "dry_run": True,
            "would_copy": {f.name: _pending(run.cfg, f, run.resolve) for f, _ in plans},
        }
    if run.mode == RESYNC:
        for f, _ in plans:
            _floor_progress(run.cfg, f, run.resolve)
    totals = {f.name: 0 for f, _ in plans}
    rounds = 0
    took = 0.0
    for rounds in range(1, max_rounds + 1):  # noqa: B007 - the last round is reported
        written, began = 0, time.monotonic()
        for f, kw in plans:
            r = copy_round(run.cfg, f, run.resolve, **kw)
            totals[f.name] += r["written"]
            written += r["written"]
        took = time.monotonic() - began
        if written == 0 or took <= CAUGHT_UP_SECONDS:
            break
    else:
        raise RuntimeError(
            f"failback {run.survivor} -> {run.recovered}: still copying after {max_rounds} rounds ({totals}); "
            f"the survivor's producers write faster than the failback copies"
        )
    report = {"mode": run.mode, "rounds": rounds, "written": totals, "last_round_seconds": round(took, 1)}
    if run.mode == RESEED:
        # the normal flows take over now (they stay skipped until restart_flows clears the
        # failed mark), so the data-quality gate can compare them at their watermarks
        report["handover"] = hand_over_seed(run)
    if run.mode == RESYNC:
        # the recovered cluster's records that had not reached the survivor before the outage
        # arrive there now, after the outage writes
        report["arrived_out_of_order_on_survivor"] = sum(totals[f.name] for f in run.flows(run.recovered, run.survivor))
    return report

"""The last step of a failback, between the operator stopping the producers on the survivor and
starting them on the recovered cluster: wait until every record the survivor holds is on the
recovered cluster.

Why it is a step of its own: a failback ends with the flows caught up to within seconds while
the producers still write to the survivor. Producers that move back before the rest arrives
write newer values that the older ones, arriving later, follow in the log: consumers see a
key's values out of order, and on a compacted topic the cleaner keeps the older value and
deletes the newer one on the recovered cluster, before the flow to the survivor reads it.

The survivor's end offsets are taken when the drain starts (the producers are stopped by
then). A configured survivor -> recovered flow copies them (the drain only waits for its
committed progress); without one (active/passive) the drain copies them itself with the
failback's transient flow, as the failback did.

Then the drain moves the consumer groups onto the recovered cluster again, from their positions
on the survivor at that moment (:func:`~kafka_dr.workflows.failback_handover.move_groups_back`,
only groups with no active member there): consumers that move home with the producers re-read
only what they read on the survivor after it, plus what each row's ``reread`` counts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kafka_dr.core.config import FlowConfig
from kafka_dr.core.failback import FailbackRefused
from kafka_dr.core.failover import cluster_pair_problem
from kafka_dr.kafka.planner import FlowPlanner
from kafka_dr.kafka.source_tails import count_tails, source_readers
from kafka_dr.kafka.state_store import reachable, read_state
from kafka_dr.workflows.failback_copy import copy_round
from kafka_dr.workflows.failback_flows import FailbackRun
from kafka_dr.workflows.failback_handover import move_groups_back

#: how often the drain reads the flows' committed progress
POLL_SECONDS = 2.0
DEFAULT_TIMEOUT_SECONDS = 600.0

Ends = dict[tuple[str, int], int]  #: (source topic, partition) -> an offset


class DrainTimedOut(RuntimeError):
    """The survivor's records did not all reach the recovered cluster in time."""


@dataclass(frozen=True)
class DrainPlan:
    flow: FlowConfig
    copies_itself: bool  #: no configured flow copies survivor -> recovered: the drain does
    ends: Ends  #: the survivor's last stable offsets when the drain started


def _check(run: FailbackRun) -> None:
    cfg = run.cfg
    problem = cluster_pair_problem(list(cfg.clusters), ("recovered", run.recovered), ("surviving", run.survivor))
    if problem:
        raise FailbackRefused(problem)
    for name in (run.survivor, run.recovered):
        if not reachable(cfg, name, run.resolve):
            raise FailbackRefused(
                f"cluster {name!r} ({cfg.cluster(name).bootstrap_servers}) does not answer; "
                f"a drain needs both clusters up"
            )
    state = read_state(cfg, run.resolve)
    if run.recovered in state.failed_clusters:
        raise FailbackRefused(
            f"cluster {run.recovered!r} is still recorded as failed (state version {state.version}): "
            f"run dr_failback first; the drain is its last step"
        )


def plan(run: FailbackRun) -> list[DrainPlan]:
    """What to wait for: per survivor -> recovered flow, the survivor's end offsets now."""
    _check(run)
    configured = run.flows(run.survivor, run.recovered)
    flows = [(f, False) for f in configured] or [(run.back_flow(), True)]
    out = []
    for flow, copies_itself in flows:
        planner = FlowPlanner(run.cfg, flow, run.resolve, create_targets=False)
        ends = {(t, int(p)): e for t, parts in planner.latest().items() for p, e in parts.items()}
        out.append(DrainPlan(flow, copies_itself, ends))
    return out


def behind(run: FailbackRun, p: DrainPlan, admin, reader) -> Ends:
    """Per partition, the records up to ``p.ends`` that the flow copies (its loop policy; not
    transaction markers, aborted or filtered records) and has not committed on the recovered
    cluster yet; ``admin`` and ``reader`` are on the flow's source (:func:`source_readers`)."""
    tails = count_tails(run.cfg, p.flow, admin, reader, run.resolve, keys=list(p.ends), ends=p.ends)
    return {k: tail.records for k, tail in tails.items() if tail.records}


def drain(run: FailbackRun, timeout: float = DEFAULT_TIMEOUT_SECONDS, poll: float = POLL_SECONDS) -> dict:
    """Wait (or copy) until the survivor's records, as of now, are all on the recovered
    cluster; raises :class:`DrainTimedOut` naming the partitions still behind."""
    began = time.monotonic()
    plans = plan(run)
    deadline = began + timeout
    copied, at_start = 0, None
    readers = {p.flow.name: source_readers(run.cfg, p.flow, "drain-reader", run.resolve) for p in plans}
    try:
        while True:
            left = {p.flow.name: behind(run, p, *readers[p.flow.name]) for p in plans}
            if at_start is None:
                at_start = sum(n for ends in left.values() for n in ends.values())
            if not any(left.values()):
                break
            if time.monotonic() >= deadline:
                raise DrainTimedOut(_timed_out(run, left, timeout))
            for p in plans:
                if p.copies_itself and left[p.flow.name]:
                    copied += copy_round(run.cfg, p.flow, run.resolve)["written"]
            time.sleep(poll)
    finally:
        for _, reader in readers.values():
            reader.close()
    # the consumers move home with the producers: their positions on the survivor now, not
    # as the failback found them, so they re-read only what they read there after this
    groups = move_groups_back(run)
    return {
        "recovered": run.recovered,
        "survivor": run.survivor,
        "flows": [p.flow.name for p in plans],
        "partitions": sum(len(p.ends) for p in plans),
        "behind_at_start": at_start,
        "copied_by_drain": copied,
        "consumer_groups": groups,
        "seconds": round(time.monotonic() - began, 1),
    }


def _timed_out(run: FailbackRun, left: dict[str, Ends], timeout: float) -> str:
    parts = sorted(f"{t}[{p}] {n} behind" for ends in left.values() for (t, p), n in ends.items())
    more = f" and {len(parts) - 5} more" if len(parts) > 5 else ""
    flows = ", ".join(name for name, ends in left.items() if ends)
    return (
        f"drain {run.survivor} -> {run.recovered}: not caught up after {timeout:.0f}s: {', '.join(parts[:5])}{more} "
        f"(flow {flows}); is its replication running? keep the producers stopped and run the drain again"
    )


def format_summary(s: dict) -> str:
    flows = ", ".join(s["flows"])
    return (
        f"drained {s['survivor']} -> {s['recovered']}: every record {s['survivor']} held when the drain started is on "
        f"{s['recovered']} ({s['behind_at_start']} record(s) were behind in {s['partitions']} partition(s) of flow "
        f"{flows}; {s['seconds']}s); start the producers on {s['recovered']}"
        + "".join(
            f"\n  group {r['group']} {r['topic']}[{r['partition']}]: {r['action']} at {r['target_offset']}"
            + (f"; re-reads {sum(r['reread'].values())} record(s)" if r.get("reread") else "")
            for r in s.get("consumer_groups", [])
        )
    )

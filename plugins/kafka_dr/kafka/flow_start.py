"""Where a flow's next copy starts, and whether there is anything to copy, read with plain
Kafka clients: the replication source plans each run from it on the Spark driver, and an
incremental run that finds nothing new ends before any Spark session or JVM starts.

A partition starts at its committed progress; one without progress at the source's earliest
offset, unless the target already holds copies, which the lost-progress rules decide
(:func:`kafka_dr.core.progress.lost_progress_starts`). A pending progress commit that no
transaction owns (a killed predecessor's) is cleared first, as every run does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.planner import FlowPlanner, Offsets

log = logging.getLogger(__name__)


def start_offsets(planner: FlowPlanner, resolve: SecretResolver | None, allow_reset: bool) -> Offsets:
    """Per selected source partition (heartbeats included), the offset the next copy starts at."""
    from kafka_dr.core.progress import lost_progress_starts
    from kafka_dr.kafka.orphaned_offsets import START_UNSTABLE_SECONDS, clear_flow_orphans
    from kafka_dr.kafka.progress_store import ProgressUnstable, last_copied_offset, read_committed_progress

    cfg, flow = planner.cfg, planner.flow
    offsets = planner.earliest()
    wanted = [(planner.target_topic(t), int(p)) for t, parts in offsets.items() for p in parts]
    try:
        by_target = read_committed_progress(cfg, flow, wanted, resolve, timeout=START_UNSTABLE_SECONDS)
    except ProgressUnstable:
        # a killed predecessor's open transaction, or an orphaned pending commit
        # (kafka_dr.kafka.orphaned_offsets): clear ours, read again
        pairs = [(t, planner.target_topic(t), int(p)) for t, parts in offsets.items() for p in parts]
        clear_flow_orphans(cfg, flow, pairs, resolve)
        by_target = read_committed_progress(cfg, flow, wanted, resolve)
    missing = {}
    for topic, parts in offsets.items():
        target = planner.target_topic(topic)
        for p in parts:
            done = by_target.get((target, int(p)))
            if done is not None:
                parts[p] = max(parts[p], done["next_offset"])
            else:
                last = last_copied_offset(cfg, flow, topic, target, int(p), resolve)
                missing[(topic, int(p))] = None if last is None else (target, last)
    for (topic, p), start in lost_progress_starts(flow.name, flow.target, missing, allow_reset).items():
        offsets[topic][str(p)] = max(offsets[topic][str(p)], start)
    return offsets


@dataclass(frozen=True)
class Backlog:
    """What a run would copy: the selected partitions and the offsets between each one's start
    and the source's end (records, plus any transaction markers among them)."""

    partitions: int
    offsets: int


def backlog(
    cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None, allow_reset: bool = False
) -> Backlog | None:
    """The flow's backlog now; None when the question gets no answer (a cluster not answering,
    lost progress to judge): the run then decides and reports it as it always does. Missing
    target topics are created on the way, as a run creates them."""
    try:
        planner = FlowPlanner(cfg, flow, resolve)
        start = start_offsets(planner, resolve, allow_reset)
        ends = planner.latest()
    except Exception as e:  # noqa: BLE001 - the run meets it again and handles it
        log.info("flow %s: what is new is the run's to find (%s)", flow.name, e)
        return None
    left = sum(
        max(0, end - start.get(topic, {}).get(p, 0)) for topic, parts in ends.items() for p, end in parts.items()
    )
    return Backlog(sum(len(parts) for parts in ends.values()), left)


def nothing_to_copy(
    cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None, allow_reset: bool = False
) -> int | None:
    """The number of selected partitions when every one is copied up to the source's end (a run
    would plan no batch); None when something is left to copy or the question gets no answer."""
    b = backlog(cfg, flow, resolve, allow_reset)
    return b.partitions if b is not None and b.offsets == 0 else None

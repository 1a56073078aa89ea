"""Failback from the survivor to a recovered cluster, step by step; each step idempotent.

``dr_failback`` runs these steps as tasks and ``kafka-dr failback`` runs them in a row (the
same code), each taking the run's inputs (:class:`~kafka_dr.workflows.failback_flows.FailbackRun`).
The pure decisions are in :mod:`kafka_dr.core.failback`.

1. :func:`check_ready`: both clusters answer, the recovered one is recorded as failed, the
   mode fits what the recovered cluster holds (``reseed`` needs it empty, or a seed of ours
   to resume).
2. :func:`~kafka_dr.workflows.failback_copy.copy_until_caught_up`: ``resync`` runs the
   normal flows between the two (and, with no flow back, a transient one) until a round
   copies nothing; ``reseed`` runs the seeding pipeline (provenance rewritten, seed map kept)
   until a round copies nothing, then hands the seed's progress to the normal flows.
3. :func:`~kafka_dr.workflows.failback_gate.gate`: the clusters must hold the same records
   per topic-partition (count and an order-independent checksum over key, value, own
   headers, timestamp and origin); a failed gate stops the failback and names each difference.
4. :func:`~kafka_dr.workflows.failback_handover.move_groups_back`: consumer groups that read
   on the survivor are positioned on the recovered cluster where no unread record lies below
   them.
5. :func:`restart_flows`: clears the failed mark, records the recovered cluster as active and
   schema primary. The normal replication DAGs then run again in both directions.

The flows touching a cluster marked failed are skipped by the replication DAGs, so nothing
else copies between the two while the failback runs.
"""

from __future__ import annotations

import time
from dataclasses import replace

from confluent_kafka import TopicPartition

from kafka_dr.core.config import FlowConfig
from kafka_dr.core.failback import MODES, RESEED, FailbackRefused
from kafka_dr.core.failover import cluster_pair_problem
from kafka_dr.core.inputs import failback_problems, require_valid
from kafka_dr.kafka import clients
from kafka_dr.kafka.progress_store import read_committed_progress
from kafka_dr.kafka.state_store import reachable, read_state, write_state
from kafka_dr.kafka.watermarks import watermarks
from kafka_dr.workflows.failback_copy import copy_until_caught_up
from kafka_dr.workflows.failback_flows import FailbackRun
from kafka_dr.workflows.failback_gate import gate
from kafka_dr.workflows.failback_handover import move_groups_back

# --- step 1 -----------------------------------------------------------------------------


def check_ready(run: FailbackRun) -> dict:
    """The first step: every input is checked here, before any step changes anything."""
    cfg, recovered, survivor, mode = run.cfg, run.recovered, run.survivor, run.mode
    problem = cluster_pair_problem(list(cfg.clusters), ("recovered", recovered), ("surviving", survivor))
    if problem:
        raise FailbackRefused(problem)
    require_valid(failback_problems(cfg, recovered, survivor, run.groups, run.topics, run.since_ms, run.until_ms))
    if mode not in MODES:
        raise FailbackRefused(f"unknown mode {mode!r} (choose {' or '.join(MODES)})")
    for name in (survivor, recovered):
        if not reachable(cfg, name, run.resolve):
            raise FailbackRefused(
                f"cluster {name!r} ({cfg.cluster(name).bootstrap_servers}) does not answer; "
                f"a failback needs both clusters up"
            )
    state = read_state(cfg, run.resolve)
    if recovered not in state.failed_clusters and not run.force:
        raise FailbackRefused(
            f"cluster {recovered!r} is not recorded as failed (state version {state.version}, failed: "
            f"{', '.join(state.failed_clusters) or 'none'}); nothing to fail back, or trigger with force"
        )
    out = {"recovered": recovered, "survivor": survivor, "mode": mode, "state_version": state.version}
    if mode == RESEED:
        flow = run.seed_flow()
        out["data_on_recovered"] = held = _records_held(run, recovered, flow)
        started = _has_progress(run, flow)
        if held and not started and not run.force:
            raise FailbackRefused(
                f"reseed expects {recovered!r} to be new and empty, but it holds {held} record(s) in the "
                f"selected topics; use mode resync for a cluster that came back with its data"
            )
        out["resuming_seed"] = started
    else:
        out["back_flow"] = run.back_flow().name
    return out


def _records_held(run: FailbackRun, cluster: str, flow: FlowConfig) -> int:
    cfg = run.cfg
    c = clients.consumer(cfg.cluster(cluster), cfg.names.reader_group("failback-reader"), run.resolve)
    try:
        md = c.list_topics(timeout=15).topics
        total = 0
        for t, meta in md.items():
            if meta.error is None and flow.topics.selects(t) and not cfg.names.is_internal(t):
                for p in meta.partitions:
                    low, high = watermarks(c, TopicPartition(t, p), 15)
                    total += max(0, high - low)
        return total
    finally:
        c.close()


def _has_progress(run: FailbackRun, flow: FlowConfig) -> bool:
    cfg = run.cfg
    c = clients.consumer(cfg.cluster(flow.source), cfg.names.reader_group("failback-reader"), run.resolve)
    try:
        tps = [
            TopicPartition(t, p)
            for t, m in c.list_topics(timeout=15).topics.items()
            if m.error is None and flow.topics.selects(t)
            for p in m.partitions
        ]
    finally:
        c.close()
    if not tps:
        return False
    return bool(read_committed_progress(cfg, flow, [(tp.topic, tp.partition) for tp in tps], run.resolve))


# --- step 5 -----------------------------------------------------------------------------


def restart_flows(run: FailbackRun) -> dict:
    cfg, recovered, survivor = run.cfg, run.recovered, run.survivor
    state = read_state(cfg, run.resolve)
    done = recovered not in state.failed_clusters and state.active_cluster == recovered
    out: dict = {"flows": [f.name for f in cfg.flows if {f.source, f.target} == {recovered, survivor}]}
    if done:
        return {**out, "state": "already recorded", "version": state.version}
    if run.dry_run:
        return {**out, "state": "would record", "active_cluster": recovered, "version": state.version + 1}
    event = {
        "kind": "failback",
        "mode": run.mode,
        "recovered": recovered,
        "survivor": survivor,
        "at_ms": int(time.time() * 1000),
    }
    primary = cfg.schema_mirror.primary if cfg.schema_mirror is not None else recovered
    new = replace(
        state,
        version=state.version + 1,
        active_cluster=recovered,
        schema_primary=primary,
        failed_clusters=tuple(c for c in state.failed_clusters if c != recovered),
        last_event=event,
    )
    out.update(state=write_state(cfg, new, run.resolve), active_cluster=recovered, version=new.version)
    return out


# --- the whole run ----------------------------------------------------------------------


def run_failback(run: FailbackRun) -> dict:
    """Every step in order; the CLI twin of the DAG. Returns the summary."""
    summary: dict = {"recovered": run.recovered, "survivor": run.survivor, "mode": run.mode, "dry_run": run.dry_run}
    summary["check"] = check_ready(run)
    summary["copy"] = copy_until_caught_up(run)
    summary["gate"] = {"skipped": "dry run"} if run.dry_run else gate(run)
    summary["consumer_groups"] = move_groups_back(run)
    summary["restart"] = restart_flows(run)
    return summary


def format_summary(s: dict) -> str:
    dry = " (DRY RUN: nothing changed)" if s.get("dry_run") else ""
    lines = [f"failback {s['survivor']} -> {s['recovered']} ({s['mode']}){dry}"]
    copy = s.get("copy", {})
    if "would_copy" in copy:
        lines += [
            f"  {name}: would read {n} record(s) of {t}"
            for name, by_topic in copy["would_copy"].items()
            for t, n in sorted(by_topic.items())
            if n
        ]
    else:
        lines += [f"  {name}: copied {n} record(s)" for name, n in copy.get("written", {}).items()]
        if "arrived_out_of_order_on_survivor" in copy:
            lines.append(
                f"  {copy['arrived_out_of_order_on_survivor']} record(s) of {s['recovered']} that were never "
                f"replicated before the outage reached {s['survivor']} after its outage writes (out of order there)"
            )
    g = s.get("gate", {})
    if "records_checked" in g:
        lines.append(f"  gate: {g['partitions']} partition(s), {g['records_checked']} record(s) equal on both clusters")
    if "skipped" in g.get("data_quality", {}):
        lines.append(f"  gate: data quality not compared: {g['data_quality']['skipped']}")
    for r in s.get("consumer_groups", []):
        lines.append(
            f"  group {r['group']} {r['topic']}[{r['partition']}]: {r['action']} at {r['target_offset']}"
            + (" (moved backwards)" if r.get("backwards") else "")
            + (f"; re-reads {sum(r['reread'].values())} record(s)" if r.get("reread") else "")
        )
    active = s.get("restart", {}).get("active_cluster", s["recovered"])
    lines.append(f"  active cluster would be: {active}" if s.get("dry_run") else f"  active cluster: {active}")
    return "\n".join(lines)

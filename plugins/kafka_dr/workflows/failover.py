"""Failover from a failed cluster to a survivor, step by step; each step idempotent.

The ``dr_failover`` DAG runs these steps as tasks and ``kafka-dr failover`` runs them in a
row (the same code), each taking the run's inputs (:class:`FailoverRun`). With ``dry_run``
every step computes and reports what it would do and writes nothing.

1. :func:`confirm_down`: the failed cluster must not answer (unless ``force``); then
   :func:`check_parity`: the survivor's readiness for the applications (ACLs, quotas, users,
   topics, groups, registry; :mod:`kafka_dr.workflows.parity`); ``not ready`` is refused
   unless ``force``.
2. :func:`stop_flows`: the flows reading from it are stopped (the failed cluster is recorded
   in the product state; replication DAGs skip flows whose source is failed).
3. :func:`move_consumer_groups`: each group's last known position on the failed cluster is
   translated exactly onto the survivor and committed there (only for groups with no active
   members on the survivor, never backwards).
4. :func:`rpo_report`: per topic-partition, what the survivor is known to miss.
5. :func:`record_active`: the survivor becomes the active cluster and the schema-registry
   primary in the product state.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from dataclasses import dataclass, replace

from kafka_dr.core.config import DrConfig
from kafka_dr.core.failover import cluster_pair_problem, last_known_ends, rpo_entry, rpo_seconds
from kafka_dr.kafka.clients import ClusterUnreachable, SecretResolver
from kafka_dr.kafka.liveness import nothing_listens
from kafka_dr.kafka.state_store import reachable, read_state, write_state


class FailoverRefused(RuntimeError):
    """A precondition of the failover does not hold; nothing was changed."""


@dataclass(frozen=True)
class FailoverRun:
    """What one failover was asked to do; every step takes it.

    :param failed: the cluster that is down.
    :param survivor: where consumers resume; it becomes the active cluster.
    :param groups: a regex selecting the consumer groups that move.
    :param force: fail over even though ``failed`` still answers.
    :param failed_answers: what :func:`confirm_down` found (``None``: not yet asked); the steps
        after it take its word instead of probing a dead cluster again, which costs a
        connection timeout each time (per consumer group, in the translation).
    """

    cfg: DrConfig
    failed: str
    survivor: str
    groups: str = ".*"
    dry_run: bool = True
    force: bool = False
    resolve: SecretResolver | None = None
    failed_answers: bool | None = None


def check_clusters(run: FailoverRun) -> None:
    problem = cluster_pair_problem(list(run.cfg.clusters), ("failed", run.failed), ("surviving", run.survivor))
    if problem:
        raise FailoverRefused(problem)


def confirm_down(run: FailoverRun) -> dict:
    """The first step: every input is checked here, before any step changes anything."""
    from kafka_dr.core.inputs import regex_problem, require_valid

    cfg, failed, survivor, force, resolve = run.cfg, run.failed, run.survivor, run.force, run.resolve
    check_clusters(run)
    require_valid([p for p in (regex_problem("--groups", run.groups),) if p])
    if not reachable(cfg, survivor, resolve):
        # not a refusal: a retry may find it answering
        raise ClusterUnreachable(
            f"the surviving cluster {survivor!r} ({cfg.cluster(survivor).bootstrap_servers}) does not answer either"
        )
    up = failed_answers(run)
    refusal = None
    if up and not force:
        refusal = f"{failed} still answers (force to override)"
        if not run.dry_run:
            raise FailoverRefused(
                f"cluster {failed!r} ({cfg.cluster(failed).bootstrap_servers}) still answers; failing over from a "
                f"live cluster splits writes between two actives. Stop its producers first, or trigger again with force"
            )
    # a dry run goes on: the rest of the plan is what an operator decides on before forcing
    return {"failed": failed, "failed_answers": up, "forced": bool(up and force), "would_refuse": refusal}


def failed_answers(run: FailoverRun) -> bool:
    """Whether the failed cluster answers: all of its brokers refusing connections is a clear
    "down" at once; else the client decides (bounded by its timeout)."""
    cfg, failed = run.cfg, run.failed
    return not nothing_listens(cfg.cluster(failed).bootstrap_servers) and reachable(cfg, failed, run.resolve)


def check_parity(run: FailoverRun) -> dict:
    """The parity report of ``failed -> survivor``; raises :class:`FailoverRefused` for
    ``not ready`` unless forced (a dry run reports that it would). Runs beside
    :func:`confirm_down` when the run does not know yet whether the failed cluster answers."""
    from kafka_dr.workflows.parity import parity_report

    check_clusters(run)  # beside confirm_down, its inputs are not checked yet
    answers = run.failed_answers if run.failed_answers is not None else failed_answers(run)
    report = parity_report(run.cfg, run.failed, run.survivor, run.resolve, record=False, source_answers=answers)
    blocking = [d for d in report["differences"] if d["severity"] == "not ready"]
    refuse = report["verdict"] == "not ready" and not run.force
    if refuse and not run.dry_run:
        more = f" (and {len(blocking) - 1} more)" if len(blocking) > 1 else ""
        raise FailoverRefused(
            f"{run.survivor} is not ready for the applications of {run.failed}: {blocking[0]['area']}: "
            f"{blocking[0]['what']}{more}; fix it (kafka-dr parity --from {run.failed} --to {run.survivor}) "
            f"or trigger again with force"
        )
    return {**report, "would_refuse": refuse}


def stop_flows(run: FailoverRun) -> dict:
    cfg, failed, dry_run, resolve = run.cfg, run.failed, run.dry_run, run.resolve
    flows = [f.name for f in cfg.flows if f.source == failed]
    state = read_state(cfg, resolve, skip=(failed,))
    if failed in state.failed_clusters:
        return {"stopped_flows": flows, "state": "already recorded", "version": state.version}
    if dry_run:
        return {"stopped_flows": flows, "state": "would record", "version": state.version}
    new = replace(state, version=state.version + 1, failed_clusters=tuple(sorted({*state.failed_clusters, failed})))
    return {"stopped_flows": flows, "state": write_state(cfg, new, resolve, skip=(failed,)), "version": new.version}


def move_consumer_groups(run: FailoverRun) -> list[dict]:
    """Translate and commit every matching group's offsets of the flows ``failed -> survivor``."""
    from kafka_dr.workflows.group_failover import move_groups

    pattern = re.compile(run.groups or ".*")
    out: list[dict] = []
    for flow in run.cfg.flows:
        if flow.source == run.failed and flow.target == run.survivor:
            out += move_groups(run.cfg, flow, pattern, run.dry_run, run.resolve, run.failed_answers)
    return out


def rpo_report(run: FailoverRun, now_ms: int | None = None, failed_answers: bool | None = None) -> dict:
    """Per partition of each flow ``failed -> survivor`` (its current topic selection, no
    heartbeats): the records the flow copies that the survivor lacks. Counted on the failed
    cluster when it answers (``exact``); otherwise a lower bound from the offset sync's last
    count and the job's last reported ends (``approximate``, see ``core.failover``)."""
    import logging

    from kafka_dr.core.failover import latest_tails, selected_partitions
    from kafka_dr.core.loop import router_for
    from kafka_dr.kafka import clients
    from kafka_dr.kafka.heartbeats import measure
    from kafka_dr.kafka.progress_store import read_committed_progress
    from kafka_dr.kafka.reading import read_partitions
    from kafka_dr.kafka.source_tails import count_now

    cfg, failed, survivor, resolve = run.cfg, run.failed, run.survivor, run.resolve
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    target = cfg.cluster(survivor)
    rows: list[dict] = []
    synced: list[tuple] = []
    c = clients.consumer(target, cfg.names.reader_group("failover-reader"), resolve)
    try:
        md = c.list_topics(timeout=10).topics
        topic = cfg.names.metrics_topic
        if topic in md:
            rows = [json.loads(r.value) for r in read_partitions(c, topic, [0], timeout=60) if r.value]
        stopic = cfg.names.offset_sync_topic
        if stopic in md:
            synced = [(r.key, r.value) for r in read_partitions(c, stopic, sorted(md[stopic].partitions), timeout=60)]
    finally:
        c.close()
    if failed_answers is None:
        failed_answers = run.failed_answers
    live = reachable(cfg, failed, resolve) if failed_answers is None else failed_answers
    report = {"failed": failed, "survivor": survivor, "flows": {}}
    for flow in cfg.flows:
        if flow.source != failed or flow.target != survivor:
            continue
        router = router_for(cfg, flow)
        entries = None
        if live:
            try:
                entries = [
                    rpo_entry(flow.name, t, p, tail.copied_up_to, tail.end, counted=tail.records).to_dict()
                    for (t, p), tail in sorted(count_now(cfg, flow, resolve).items())
                ]
            except Exception as e:  # noqa: BLE001 - it answered a moment ago: fall back to what is recorded
                logging.getLogger(__name__).warning(
                    "flow %s: counting on %s failed (%s); reporting what the survivor knows", flow.name, failed, e
                )
        if entries is None:
            ends, tails = last_known_ends(rows, flow.name), latest_tails(synced, flow.name)
            keys = selected_partitions(
                set(ends) | set(tails),
                lambda t: t != cfg.names.heartbeat_topic and router.target_topic(t) is not None,  # noqa: B023 - called here
            )
            progress = (
                read_committed_progress(cfg, flow, [(router.target_topic(t), p) for t, p in keys], resolve)
                if keys
                else {}
            )
            entries = [
                rpo_entry(
                    flow.name,
                    t,
                    p,
                    progress.get((router.target_topic(t), p), {}).get("next_offset"),
                    ends.get((t, p)),
                    tail=tails.get((t, p)),
                ).to_dict()
                for t, p in keys
            ]
        hb = measure(cfg, flow, resolve, now_ms=now, ask_source=False)
        report["flows"][flow.name] = {
            "partitions": entries,
            "missing_records_at_least": sum(e["missing_at_least"] or 0 for e in entries),
            "status": "exact" if all(e["status"] == "exact" for e in entries) else "approximate",
            "unaccounted_offsets": sum(e["unaccounted_offsets"] for e in entries),
            "rpo_seconds_at_most": rpo_seconds(now, hb.newest_emitted_ms),
        }
    return report


def record_active(run: FailoverRun, summary: dict) -> dict:
    cfg, failed, survivor, resolve = run.cfg, run.failed, run.survivor, run.resolve
    state = read_state(cfg, resolve, skip=(failed,))
    if state.active_cluster == survivor and state.schema_primary == survivor and failed in state.failed_clusters:
        return {"active_cluster": survivor, "state": "already recorded", "version": state.version}
    event = {
        "kind": "failover",
        "failed": failed,
        "survivor": survivor,
        "at_ms": int(time.time() * 1000),
        "missing_records_at_least": summary.get("missing_records_at_least"),
    }
    new = state.after_failover(failed, survivor, event)
    if run.dry_run:
        return {"active_cluster": survivor, "state": "would record", "version": new.version}
    return {"active_cluster": survivor, "state": write_state(cfg, new, resolve, skip=(failed,)), "version": new.version}


def run_failover(run: FailoverRun) -> dict:
    """Every step in order; the CLI twin of the DAG. Returns the summary."""
    summary: dict = {"failed": run.failed, "survivor": run.survivor, "dry_run": run.dry_run}
    summary["confirm_down"] = confirm_down(run)
    run = dataclasses.replace(run, failed_answers=summary["confirm_down"]["failed_answers"])
    summary["parity"] = check_parity(run)
    summary["stop_flows"] = stop_flows(run)
    summary["consumer_groups"] = move_consumer_groups(run)
    rpo = rpo_report(run)
    summary["rpo"] = rpo
    summary["missing_records_at_least"] = sum(f["missing_records_at_least"] for f in rpo["flows"].values())
    summary["record_active"] = record_active(run, summary)
    summary["would_refuse"] = would_refuse(summary)
    return summary


def would_refuse(summary: dict) -> list[str]:
    """Why a dry run's failover would be refused without force (empty: it would go ahead)."""
    down = (summary.get("confirm_down") or {}).get("would_refuse")
    parity = summary.get("parity") or {}
    not_ready = parity.get("would_refuse") and f"{summary['survivor']} is not ready (parity; force to override)"
    return [r for r in (down, not_ready) if r]


def _by_origin(row: dict) -> str:
    """A moved row's since-sync bound split by origin, when it has more than one."""
    bounds = row.get("reread_since_sync_at_most_by_origin") or {}
    if len(bounds) < 2:
        return ": what was copied from there on"
    return ": " + ", ".join(f"{n} of {origin}" for origin, n in bounds.items())


def format_summary(summary: dict) -> str:
    dry = " (DRY RUN: nothing changed)" if summary.get("dry_run") else ""
    lines = [f"failover {summary['failed']} -> {summary['survivor']}{dry}"]
    refusals = would_refuse(summary)
    if summary.get("dry_run"):
        lines.append(f"  verdict: {'would be refused: ' + '; '.join(refusals) if refusals else 'would go ahead'}")
    parity = summary.get("parity")
    if parity:
        age = parity.get("recorded_age_s")
        when = f", as recorded {age:.0f} s ago" if age is not None else ""
        refused = "; would be refused without force" if parity.get("would_refuse") else ""
        lines.append(f"  parity: {parity['verdict']} ({len(parity['differences'])} difference(s){when}){refused}")
        lines.extend(f"    {d['severity']}: {d['area']}: {d['what']}" for d in parity["differences"])
    for g in summary.get("consumer_groups", []):
        lines.append(
            f"  group {g.get('group')} {g.get('topic')}[{g.get('partition')}]: {g.get('action')} "
            f"-> offset {g.get('target_offset')} ({g.get('status')}{': ' + g['reason'] if g.get('reason') else ''})"
        )
        if g.get("synced_age_s") is not None:
            bound = g.get("reread_since_sync_at_most")
            at_most = "" if bound is None else f" (at most {bound} record(s){_by_origin(g)})"
            lines.append(
                f"    its position there was synced {g['synced_age_s']:.0f} s before this run: what the group "
                f"read on {summary['failed']} after that is read again{at_most}"
            )
        again = g.get("reread") or {}
        if any(n != 0 for n in again.values()):
            lines.append(
                "    re-reads from there: "
                + ", ".join(
                    f"{'an unknown number of' if n is None else n} record(s) of {origin}"
                    for origin, n in sorted(again.items())
                )
            )
    for name, f in summary.get("rpo", {}).get("flows", {}).items():
        secs = f.get("rpo_seconds_at_most")
        window = f"RPO window at most {'unknown' if secs is None else f'{secs:.0f}s'}"
        if f.get("status") == "exact":
            counted = f"(counted on {summary['failed']})"
            lines.append(f"  {name}: {f['missing_records_at_least']} record(s) not replicated {counted}; {window}")
            continue
        unknown = f.get("unaccounted_offsets") or 0
        lines.append(
            f"  {name}: at least {f['missing_records_at_least']} record(s) not replicated"
            + (
                f", and {unknown} source offset(s) after the last count whose content is not known (records, "
                f"transaction markers or filtered copies)"
                if unknown
                else ""
            )
            + f"; {window}"
        )
    active = summary.get("record_active", {}).get("active_cluster")
    lines.append(f"  active cluster would be: {active}" if summary.get("dry_run") else f"  active cluster: {active}")
    return "\n".join(lines)

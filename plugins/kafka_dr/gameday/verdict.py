"""The game day's verdict, from what the clusters hold and what was seen (pure but for the
final reads, which the caller does): one row per fault and every figure for the JSON line."""

from __future__ import annotations

import calendar
import re
import time
from collections import Counter
from dataclasses import dataclass, field

from kafka_dr.gameday.disaster import DisasterLog
from kafka_dr.gameday.faults import Injected
from kafka_dr.gameday.memory import Growth
from kafka_dr.gameday.model import NAMES, LedgerView, Move, Read, Stored
from kafka_dr.gameday.proof import Check, flowing_again, group_reads, order, presence, rpo_observed, stall_end
from kafka_dr.gameday.report import FaultRow
from kafka_dr.gameday.rereads import (
    compare_rereads,
    consumption_before,
    reported_rereads,
    reported_since_sync,
    reported_since_sync_by_origin,
)

FLOW_ENDS = {"east_to_west": ("east", "west"), "west_to_east": ("west", "east")}
#: Faults after which an alert is due: the others heal inside the heartbeat threshold.
ALERTING = {"target-network-cut", "east-down-failover-failback"}
#: The targets the game day measures: replication flowing again within 30 s of any single fault,
#: and the RTO (a failover's trigger to the moved app's first read) within 20 s.
FLOWING_TARGET_S = 30.0
RTO_TARGET_S = 20.0
#: a synced group position is at most one sync interval and one sync round old (a round reads
#: the commits made before it began and commits their translations when it ends; the game
#: day's rounds, docs/operations.md)
SYNC_ROUND_S = 10.0
MEMORY_GROWTH_MAX = 1.25


@dataclass
class Alert:
    at: float
    what: str  #: ``dag.task`` of a failure, or the operator event (failover, failback)
    #: when the check that alerted looked at the clusters, when that differs from ``at``: a
    #: data-quality run judges the copies made before it started, and may end minutes later
    looked_at: float | None = None

    @property
    def about(self) -> float:
        """The moment the alert speaks of: it belongs to the fault whose window holds it."""
        return self.at if self.looked_at is None else self.looked_at


#: a data-quality run's id carries its start: ``dq-20261128T002049Z-775aa5``
_DQ_RUN = re.compile(r"\bdq-(\d{8}T\d{6}Z)-[0-9a-f]+")


def dq_run_started(error: str) -> float | None:
    """The start (epoch seconds) of the data-quality run an alert's error names, if any."""
    found = _DQ_RUN.search(error or "")
    if not found:
        return None
    return calendar.timegm(time.strptime(found.group(1), "%Y%m%dT%H%M%SZ"))


@dataclass
class Verdict:
    rows: list[FaultRow]
    checks: list[Check]
    figures: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks) and not self.figures.get("failures")


def alerts_from(webhook_payloads: list[dict], received_at: list[float]) -> list[Alert]:
    out = []
    for payload, at in zip(webhook_payloads, received_at, strict=False):
        what = payload.get("event") or f"{payload.get('dag_id')}.{payload.get('task_id')}"
        out.append(Alert(at, what, dq_run_started(payload.get("error", ""))))
    return out


def fault_rows(
    injected: list[Injected], t0: float, end: float, view: LedgerView, reads: list[Read], alerts: list[Alert]
) -> list[FaultRow]:
    """One row per fault: the first alert in its window, and the slowest of its flows to carry a
    record produced after the fault ended and to end its longest pause in arrivals."""
    rows = []
    for i, f in enumerate(injected):
        window_end = injected[i + 1].began if i + 1 < len(injected) else end
        row = FaultRow(f.fault, f.began - t0, None if f.ended is None else f.ended - t0, notes=list(f.notes))
        mine = [a for a in alerts if f.began <= a.about < window_end]
        if mine:
            row.detected_by, row.alert_after_s = mine[0].what, mine[0].at - f.began
        else:
            row.detected_by = "no alert"
        healed = f.ended or f.began
        times = []
        for flow in f.flows:
            source, target = FLOW_ENDS[flow]
            ft = flowing_again(healed, source, target, view, reads)
            resumed = stall_end(f.began, window_end, source, target, reads)
            times.append(None if ft is None else max(ft.seconds, (resumed or healed) - healed))
        if times and None not in times:
            row.flowing_again_after_s = max(times)
        elif times:
            row.notes.append("replication did not flow again in the fault's window")
        rows.append(row)
    return rows


def loss_by_fault(
    rows: list[FaultRow], injected: list[Injected], stored: dict[str, list[Stored]], view: LedgerView
) -> None:
    """Count each record lost or duplicated on any cluster against the fault whose window it
    was produced in (compacted topics left out: a superseded value may be gone there)."""
    compacted = NAMES.compacted_topic
    for records in stored.values():
        counts = Counter(s.gd_id for s in records)
        for p in view.acked.values():
            if p.topic == compacted or counts[p.gd_id] == 1:
                continue
            idx = max((i for i, f in enumerate(injected) if f.began <= p.produced_at), default=None)
            if idx is None:
                continue
            if counts[p.gd_id] == 0:
                rows[idx].lost += 1
            else:
                rows[idx].duplicated += counts[p.gd_id] - 1


def checks_for(
    stored: dict[str, list[Stored]],
    view: LedgerView,
    reads: list[Read],
    moves: list[Move],
    disaster: DisasterLog | None,
    sync_window_s: float | None = None,
    sync_interval_s: float | None = None,
) -> list[Check]:
    """Every check of the day. ``sync_window_s``: how stale a synced group position can be (the
    sync interval and one round); what the moving group read in that long before it left a
    cluster bounds its re-reads beyond the reported ones (``None``: no bound); what it read in
    ``sync_interval_s`` alone is reported beside it."""
    compacted = {NAMES.compacted_topic}
    out: list[Check] = []
    for cluster, records in stored.items():
        out.append(presence(cluster, records, view, compacted=compacted))
        out.append(order(cluster, records))
    for app in NAMES.apps:
        out.append(group_reads(NAMES.group(app), reads, view, moves, compacted=compacted))
    if disaster is not None:
        group = NAMES.group("east")
        moved = group_reads(group, reads, view, moves, compacted=compacted).details.get("rereads_by_move", [])
        mine = [m for m in moves if m.group == group]
        # the drain moves the groups again, from their positions on west as it ends: the last
        # move before the app went home (the failback's, where the drain moved none)
        drained = [r for r in disaster.drain_summary.get("consumer_groups", []) if r.get("group") == group]
        for label, summary, index in (
            ("failover", disaster.failover_summary, 1),
            ("failback", disaster.drain_summary if drained else disaster.failback_summary, 2),
        ):
            observed = moved[index]["by_origin"] if index < len(moved) else {}
            move = mine[index - 1] if index - 1 < len(mine) else None
            worth = interval_worth = None
            if sync_window_s is not None and move is not None:
                worth = consumption_before(reads, group, move.source, move.at, sync_window_s)
            if sync_interval_s is not None and move is not None:
                interval_worth = consumption_before(reads, group, move.source, move.at, sync_interval_s)
            entries = summary.get("consumer_groups", [])
            reported = reported_rereads(group, entries)
            at_most = reported_rereads(group, entries, topics=compacted)
            bound = reported_since_sync(group, entries)
            by_origin = reported_since_sync_by_origin(group, entries)
            out.append(
                compare_rereads(
                    f"{group} {label}",
                    observed,
                    reported,
                    worth,
                    at_most,
                    bound,
                    by_origin,
                    interval_worth=interval_worth,
                )
            )
        out.append(rpo_observed("east", "west", disaster.west_at_failover, view, disaster.east_down_at, compacted))
    return out


def targets(rows: list[FaultRow], rto_s: float | None, alert_within_s: float) -> dict:
    """Each target, met or not, with what decided it (reported; the verdict is the proof's)."""
    singles = [r for r in rows if r.fault != "east-down-failover-failback"]
    slow = [r.fault for r in singles if (r.flowing_again_after_s or 0.0) > FLOWING_TARGET_S]
    heard = [r.fault for r in rows if r.alert_after_s is not None and r.alert_after_s <= alert_within_s]
    unheard = [r.fault for r in rows if r.fault in ALERTING and r.fault not in heard]
    noisy = [f"{r.fault}: {r.detected_by}" for r in rows if r.fault not in ALERTING and r.alert_after_s is not None]
    return {
        "flowing_again_within_30s": not slow,
        "flowing_again_slow": slow,
        "rto_within_20s": rto_s is not None and rto_s <= RTO_TARGET_S,
        "alerted_within_heartbeat_threshold": not unheard,
        "not_alerted_in_time": unheard,
        "no_alert_for_faults_that_healed_alone": not noisy,
        "alerted_though_healed_alone": noisy,
    }


def memory_figures(growths: list[Growth]) -> dict:
    return {
        g.role: {"early_mib": round(g.early_mib), "late_mib": round(g.late_mib), "ratio": round(g.ratio, 2)}
        for g in growths
    }


def disaster_figures(d: DisasterLog | None, rpo: Check | None) -> dict:
    if d is None:
        return {}
    return {
        "failover_state": d.failover_state,
        "failover_seconds": round(d.failover_done_at - d.failover_triggered_at, 1),
        "failback_state": d.failback_state,
        "failback_seconds": round(d.failback_done_at - d.failback_triggered_at, 1),
        "failback_gate": d.failback_summary.get("gate"),
        "drain_state": d.drain_state,
        "drain_seconds": round(d.drain_done_at - d.drain_triggered_at, 1),
        "rto_seconds": None if d.rto_s is None else round(d.rto_s, 1),
        "rpo_reported_records_at_least": d.failover_summary.get("missing_records_at_least"),
        "rpo_observed_records": None if rpo is None else rpo.counts.get("missing"),
        "rpo_observed_seconds": None if rpo is None else rpo.counts.get("rpo_seconds"),
    }

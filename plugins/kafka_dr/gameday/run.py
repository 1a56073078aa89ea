"""``kafka-dr gameday``: deploy everything, leave the scheduler in charge, inject faults on a
script, then prove from the clusters that nothing was lost, duplicated or skipped.

Exit status 0 only when every check passes, every operator run succeeded and the last
data-quality run is green. Everything the run produced stays in its folder (see
:mod:`kafka_dr.gameday.deploy`); the last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from kafka_dr.gameday import evidence, faults, processes
from kafka_dr.gameday.deploy import EAST, WEST, Deployment, Ports
from kafka_dr.gameday.disaster import DisasterLog, run_disaster
from kafka_dr.gameday.memory import MemorySampler
from kafka_dr.gameday.model import NAMES
from kafka_dr.gameday.proof import flowing_since, read_cluster, where_lost
from kafka_dr.gameday.readers import Readers
from kafka_dr.gameday.records import write_app_records
from kafka_dr.gameday.report import json_line, table
from kafka_dr.gameday.script import DISASTER, FULL, Pace, Step, script
from kafka_dr.gameday.traffic import Traffic, TrafficSettings, ensure_topics
from kafka_dr.gameday.verdict import (
    ALERTING,
    FLOW_ENDS,
    SYNC_ROUND_S,
    alerts_from,
    checks_for,
    disaster_figures,
    fault_rows,
    loss_by_fault,
    memory_figures,
    targets,
)
from kafka_dr.lab.jars import ensure_jars

FAULTS: dict[str, Callable[[Deployment], faults.Injected]] = {
    "spark-executor": faults.spark_executor,
    "spark-worker": faults.spark_worker,
    "spark-driver": faults.spark_driver,
    "target-leader": lambda d: faults.target_leader(d, NAMES.keyed_topic),
    "source-leader": lambda d: faults.source_leader(d, NAMES.keyed_topic),
    "target-rolling-restart": faults.target_rolling_restart,
    "target-network-cut": faults.target_network_cut,
    "airflow-scheduler": faults.airflow_scheduler,
}
FLOWING_TIMEOUT_S = 900.0
READY_TIMEOUT_S = 600.0  #: offset sync run once, then dr_parity green both ways
SETTLE_TIMEOUT_S = 900.0


class Say:
    """Print a line with the seconds since start, and keep it in the game day's log."""

    def __init__(self, log: Path) -> None:
        self.t0 = time.monotonic()
        log.parent.mkdir(parents=True, exist_ok=True)
        self.log = open(log, "a", buffering=1)  # noqa: SIM115 - open for the whole run

    def __call__(self, text: str) -> None:
        line = f"[{time.monotonic() - self.t0:7.1f}s] {text}"
        print(line, flush=True)
        self.log.write(line + "\n")


def memory_roles(d: Deployment) -> dict[str, list[int]]:
    table_ = processes.process_table()
    brokers = [b.pid for b in d.lab.status() if b.pid]
    spark = [s.pid for s in d.spark.status() if s.pid]
    state = d.airflow.load().get("processes", {})
    return {
        "kafka brokers": brokers,
        "spark master and workers": spark,
        "spark executors": [p.pid for p in processes.executors(table_)],
        "spark drivers": [p.pid for f in FLOWS for p in processes.replication_drivers(table_, f)],
        "airflow": [e["pid"] for e in state.values() if e.get("pid")],
    }


FLOWS = ("east_to_west", "west_to_east")


def _until(t: float) -> None:
    time.sleep(max(0.0, t - time.time()))


def _wait_ready(d: Deployment, timeout: float = READY_TIMEOUT_S) -> str:
    """As an operator starts a game day only on a deployment that is ready for failover:
    ``dr_parity`` passing both ways, with reports recorded that say so. Its scheduled run at
    unpause may come before replication flows and the offset sync has run; until it passes so,
    the offset sync is run and then ``dr_parity`` again."""
    started = time.monotonic()
    deadline = started + timeout
    run_id = _scheduled_run(d, "dr_parity")
    last = "no parity run yet"
    while time.monotonic() < deadline:
        try:
            if run_id is not None:
                run = d.api.wait_run("dr_parity", run_id, max(10.0, deadline - time.monotonic()))
                last = f"dr_parity {run['state']}"
                # green is not enough: a direction it could not judge (a cluster not answering) is
                # a note, and leaves an older recorded report standing, which the failover reads
                unready = _unready_direction(d) if run["state"] == "success" else None
                if run["state"] == "success" and unready is None:
                    return f"{last} {time.monotonic() - started:.0f}s after replication flowed"
                if unready is not None:
                    last = f"dr_parity success, but the recorded report {unready}"
            synced = d.api.wait_run("dr_offset_sync", d.api.trigger("dr_offset_sync", {}), 300)
            run_id = d.api.trigger("dr_parity", {}) if synced["state"] == "success" else None
            if run_id is None:
                last = f"dr_offset_sync {synced['state']}"
        except Exception as e:  # noqa: BLE001 - a fault meanwhile (a cluster cut off): ask again
            run_id, last = None, f"asking failed: {e}"
        if run_id is None:
            time.sleep(10)
    return f"not within {timeout:.0f}s ({last}): the faults start anyway"


def _unready_direction(d: Deployment) -> str | None:
    """The first enabled flow's direction whose recorded parity report says consumers cannot
    move (or none is recorded), else None."""
    from kafka_dr.core.parity import DEGRADED, READY
    from kafka_dr.kafka.parity_store import recorded_reports

    for f in d.cfg.flows:
        if f.enabled:
            report = recorded_reports(d.cfg, f.target).get(f.source)
            verdict = report["verdict"] if report else "none"
            if verdict not in (READY, DEGRADED):
                return f"{f.source} -> {f.target}: {verdict}"
    return None


def _scheduled_run(d: Deployment, dag_id: str, timeout: float = 60.0) -> str | None:
    """The run the scheduler creates when a scheduled DAG is unpaused (None if none came)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = d.api.runs(dag_id, limit=1)
        if runs:
            return runs[0]["dag_run_id"]
        time.sleep(2)
    return None


def _flowing_by(t: float, ends, traffic: Traffic, readers: Readers, timeout: float, began: float | None = None):
    """When every ``(source, target)`` in ``ends`` carried a record produced at or after ``t``
    and copies went on arriving (:func:`~kafka_dr.gameday.proof.flowing_since`; ``began``: when
    the fault began, default ``t``); None if not within ``timeout``."""
    began = t if began is None else began
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        view, reads, now = traffic.view(), readers.reads(), time.time()
        at = [flowing_since(t, began, now, s, r, view, reads) for s, r in ends]
        if None not in at:
            return max(at)
        time.sleep(2)
    return None


def _wait_flowing(t: float, traffic: Traffic, readers: Readers, timeout: float) -> float:
    flowing = _flowing_by(t, ((EAST, WEST), (WEST, EAST)), traffic, readers, timeout)
    if flowing is None:
        raise TimeoutError(f"replication did not flow both ways within {timeout:.0f}s of the DAGs' start")
    return flowing


def _await_recovery(fault: faults.Injected, traffic: Traffic, readers: Readers, timeout: float) -> str:
    """Wait until every flow the fault can interrupt carries a record produced after it ended
    (the next fault waits for it: each one's recovery is its own)."""
    healed = fault.ended or fault.began
    flowing = _flowing_by(healed, [FLOW_ENDS[f] for f in fault.flows], traffic, readers, timeout, fault.began)
    if flowing is None:
        return f"not flowing again within {timeout:.0f}s after it ended"
    return f"flowing again {flowing - healed:.0f}s after it ended"


def _settle(d: Deployment, view, timeout: float, say) -> dict:
    """Read both clusters until each holds every acknowledged record (or the timeout)."""
    deadline = time.monotonic() + timeout
    wanted = {p.gd_id for p in view.acked.values() if p.topic != NAMES.compacted_topic}
    while True:
        stored = {c: read_cluster(d.cfg.cluster(c), NAMES) for c in (EAST, WEST)}
        missing = {c: len(wanted - {s.gd_id for s in recs}) for c, recs in stored.items()}
        if not any(missing.values()) or time.monotonic() >= deadline:
            say(f"settled: records still missing per cluster {missing}")
            return stored
        time.sleep(3)


def next_start(scheduled: float, injected: list[faults.Injected], pace: Pace) -> float:
    """When the next fault starts: as scheduled, or ``pace.recovery_s`` after the last one ended
    when that one ran late (a broker's restart, a long cut), so that each fault's recovery is
    measured on its own. When data quality runs on its schedule, after a fault that is due an
    alert, not before its late copies have left data quality's latency window: a scheduled run
    that flags them alerts for that fault, and its alert must fall in that fault's window, not
    the next one's. Without scheduled runs nothing judges those copies until the failback's gate."""
    if not injected:
        return scheduled
    last = injected[-1]
    late_alert = last.fault in ALERTING and pace.scheduled_data_quality
    settle = max(pace.recovery_s, pace.latency_window_s) if late_alert else pace.recovery_s
    return max(scheduled, (last.ended or last.began) + settle)


def run_gameday(
    folder: Path,
    minutes: float,
    brokers: int = 3,
    spark_workers: int = 2,
    base_port: int = 24092,
    steps: list[Step] | None = None,
    pace: Pace = FULL,
) -> int:
    folder = Path(folder).resolve()
    say = Say(folder / "gameday.log")
    steps = steps if steps is not None else script(minutes)
    d = Deployment(
        folder, brokers, spark_workers, Ports(base_port), say, pace.latency_window_s, pace.scheduled_data_quality
    )
    traffic = readers = sampler = None
    try:
        d.up()
        clusters = {app: d.cfg.cluster(app) for app in NAMES.apps}
        for c in clusters.values():
            ensure_topics(c, NAMES)
        # every DAG at once, as an operator enables a deployment: the periodic ones' first runs
        # overlap replication's start-up instead of following it
        say(f"airflow: unpaused {', '.join(d.enable_dags())}")
        traffic = Traffic(clusters, NAMES, TrafficSettings(rate=pace.traffic_rate)).start()
        readers = Readers(NAMES).start_apps(clusters)
        sampler = MemorySampler(lambda: memory_roles(d)).start()
        t0 = time.time()
        flowing = _wait_flowing(t0, traffic, readers, FLOWING_TIMEOUT_S)
        say(f"replication flowing both ways {flowing - t0:.0f}s after its DAGs were unpaused")
        # the faults start once the deployment is ready for failover, as an operator's game day does
        say(f"ready: {_wait_ready(d)}")
        t0 = time.time()
        injected: list[faults.Injected] = []
        disaster: DisasterLog | None = None
        for step in steps:
            _until(next_start(t0 + step.at_s, injected, pace))
            say(f"fault: {step.fault}")
            if step.fault == DISASTER:
                disaster = run_disaster(d, traffic, readers, pace, say)
                injected.append(faults.Injected(DISASTER, disaster.east_down_at, disaster.east_back_at))
            else:
                injected.append(FAULTS[step.fault](d))
            say(f"fault: {step.fault} done: {'; '.join(injected[-1].notes)}")
            if step.fault != DISASTER:
                say(f"fault: {step.fault}: {_await_recovery(injected[-1], traffic, readers, pace.recovery_timeout_s)}")
        time.sleep(pace.tail_s)  # the last fault's recovery is measured too
        view = traffic.stop()
        end = time.time()
        say(f"traffic stopped: {view.counts()}")
        stored = _settle(d, view, SETTLE_TIMEOUT_S, say)
        settled_at = time.time()  # every copy is made by now, the faults' late ones included
        for app in NAMES.apps:
            wanted = [p.gd_id for p in view.acked.values() if p.topic != NAMES.compacted_topic]
            left = readers.wait_read(NAMES.group(app), wanted, timeout=300)
            say(f"group {NAMES.group(app)}: {len(left)} records never read")
        # data quality at the end judges the deployment as it runs again: the faults' late copies
        # (their lateness is in the fault table) have left its latency window first
        _until(settled_at + pace.latency_window_s)
        dq = d.api.wait_run("dr_data_quality", d.api.trigger("dr_data_quality", {}), 900)
        say(f"dr_data_quality at the end: {dq['state']}")
        sampler.stop()
        write_app_records(folder, view, readers.reads(), readers.moves())
        code, figures = _verdict(d, injected, disaster, t0, end, view, readers, stored, dq["state"], sampler, say)
        (folder / "gameday.json").write_text(figures + "\n")
    finally:
        for part in (traffic, readers, sampler):
            if part is not None:
                try:
                    part.stop()
                except Exception as e:  # noqa: BLE001 - tear down the rest anyway
                    say(f"stopping: {e}")
        d.down()
        say(f"logs: {folder}")
    print(figures)  # the last line: every figure, once everything is down
    return code


def _where_lost(d, checks, view) -> list[str]:
    """Where the presence checks' example lost records went, on the cluster that acknowledged
    each: what their offsets hold to a client, and to each broker's log (one record per
    partition; the brokers' full dumps are kept in the game day's ``evidence`` folder)."""
    ids = sorted({i for c in checks if c.name.endswith(" presence") for i in c.examples.get("lost", ())})
    lost = [view.acked[i] for i in ids if i in view.acked]
    try:
        lines = [f"lost {line}" for c in (EAST, WEST) for line in where_lost(d.cfg.cluster(c), lost, NAMES)]
        jars, seen, kept = ensure_jars(), set(), d.folder / "evidence"
        for p in lost:
            if p.offset is None or (p.cluster, p.topic, p.partition) in seen:
                continue
            seen.add((p.cluster, p.topic, p.partition))
            for broker, data in d.lab.data_dirs(p.cluster).items():
                dump = evidence.dump_partition(jars, data / f"{p.topic}-{p.partition}")
                kept.mkdir(exist_ok=True)
                (kept / f"{broker}-{p.topic}-{p.partition}.txt").write_text(dump)
                lines.append(f"lost {p.gd_id} in {broker}'s log: {evidence.around(dump, p.offset)}")
        return lines
    except Exception as e:  # noqa: BLE001 - a diagnosis must not hide the verdict
        return [f"lost records: their offsets could not be read: {e}"]


def _verdict(d, injected, disaster, t0, end, view, readers, stored, dq_state, sampler, say) -> tuple[int, str]:
    """The exit status and the JSON line; the table and the checks are printed here."""
    reads, moves = readers.reads(), readers.moves()
    alerts = alerts_from(d.webhook.received, d.webhook.received_at)
    rows = fault_rows(injected, t0, end, view, reads, alerts)
    loss_by_fault(rows, injected, stored, view)
    interval = d.cfg.consumer_groups.sync_interval_seconds
    checks = checks_for(
        stored, view, reads, moves, disaster, sync_window_s=interval + SYNC_ROUND_S, sync_interval_s=interval
    )
    rpo = next((c for c in checks if c.name.startswith("RPO")), None)
    failures = [c.name for c in checks if not c.ok]
    if dq_state != "success":
        failures.append(f"dr_data_quality ended {dq_state}")
    if disaster is not None:
        failures += [
            f"{n} ended {s}"
            for n, s in (
                ("dr_failover", disaster.failover_state),
                ("dr_failback", disaster.failback_state),
                ("dr_drain", disaster.drain_state),
            )
            if s != "success"
        ]
    print(table(rows))
    for c in checks:
        print(c.line())
    for line in _where_lost(d, checks, view):
        print(line)
    met = targets(rows, disaster.rto_s if disaster else None, d.cfg.thresholds.heartbeat_max_age_seconds)
    for name, value in met.items():
        if isinstance(value, bool):
            print(f"target {name.replace('_', ' ')}: {'met' if value else 'missed'}")
    figures = {
        "records": view.counts(),
        "alerts": [{"at_s": round(a.at - t0, 1), "what": a.what} for a in alerts],
        "emails": len(d.smtp.messages),
        "data_quality_at_end": dq_state,
        "memory": memory_figures(sampler.growths(120.0)),
        "targets": met,
        "checks": [c.to_dict() for c in checks],
        "failures": failures,
        **disaster_figures(disaster, rpo),
    }
    say("game day " + ("PASSED" if not failures else f"FAILED: {'; '.join(failures)}"))
    return (0 if not failures else 1), json_line(rows, figures)

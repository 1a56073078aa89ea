"""The game day's disaster: east stops entirely; the operator fails over to west through
Airflow's REST API, moves the apps (producers and consumers) to west; east comes back; the
operator fails back (resync) the same way, stops the app on west (producers and consumers),
drains (``dr_drain``: everything west holds reaches east, and the group moves home from where
it stopped) and starts the app at home.

Every figure the verdict needs is kept: when each step happened, the failover's and the
failback's summaries (their RPO and re-read reports), what west held the moment the failover
finished (the observed RPO), and each group's first read after its move (the RTO).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from kafka_dr.core.status import OPERATION_DAGS
from kafka_dr.gameday.deploy import EAST, WEST, Deployment
from kafka_dr.gameday.faults import BROKER_START_TIMEOUT_S
from kafka_dr.gameday.model import NAMES, Move, Stored
from kafka_dr.gameday.proof import read_cluster
from kafka_dr.gameday.readers import Readers
from kafka_dr.gameday.script import Pace
from kafka_dr.gameday.traffic import Traffic

RUN_TIMEOUT_S = 900.0


@dataclass
class DisasterLog:
    east_down_at: float = 0.0
    failover_triggered_at: float = 0.0
    failover_done_at: float = 0.0
    failover_state: str = ""
    failover_summary: dict = field(default_factory=dict)
    west_at_failover: list[Stored] = field(default_factory=list)
    moves_out: list[Move] = field(default_factory=list)
    rto_s: float | None = None
    east_back_at: float = 0.0
    failback_triggered_at: float = 0.0
    failback_done_at: float = 0.0
    failback_state: str = ""
    failback_summary: dict = field(default_factory=dict)
    drain_triggered_at: float = 0.0
    drain_done_at: float = 0.0
    drain_state: str = ""
    drain_summary: dict = field(default_factory=dict)
    moves_home: list[Move] = field(default_factory=list)


def _summary(d: Deployment, dag_id: str, run_id: str) -> dict:
    try:
        value = d.api.xcom(dag_id, run_id, OPERATION_DAGS[dag_id])
    except Exception as e:  # noqa: BLE001 - the verdict reports a missing summary
        return {"error": str(e)}
    return value if isinstance(value, dict) else {"value": value}


def _operator_run(d: Deployment, dag_id: str, conf: dict, then=lambda: None) -> tuple[float, float, str, dict]:
    """Trigger ``dag_id`` as the UI's form does and wait for it; ``then`` runs the moment it is
    done, before its summary is fetched. (triggered, done, state, summary)."""
    triggered = time.time()
    run_id = d.api.trigger(dag_id, conf)
    run = d.api.wait_run(dag_id, run_id, RUN_TIMEOUT_S)
    done = time.time()
    if run["state"] == "success":
        then()
    return triggered, done, run["state"], _summary(d, dag_id, run_id)


def run_disaster(d: Deployment, traffic: Traffic, readers: Readers, pace: Pace, say=print) -> DisasterLog:
    log = DisasterLog()
    groups = NAMES.group(EAST)  # the group of the app that moves; west's own group stays
    east, west = d.cfg.cluster(EAST), d.cfg.cluster(WEST)

    say("disaster: east's brokers killed")
    log.east_down_at = time.time()
    d.lab.kill(EAST)
    time.sleep(pace.failover_after_s)

    say("disaster: dr_failover east -> west triggered through the REST API")
    conf = {"failed_cluster": EAST, "surviving_cluster": WEST, "consumer_groups": groups, "dry_run": False}

    def move_the_app() -> None:
        # east is dead: its app died with it, and its replacement starts on west, its consumer
        # at once: it waits for nothing of the old app (whose producers' last records take up to
        # their retire flush to fail)
        log.moves_out.append(readers.move(NAMES.group(EAST), west, abandon=True))
        traffic.redirect(EAST, west)

    log.failover_triggered_at, log.failover_done_at, log.failover_state, log.failover_summary = _operator_run(
        d, "dr_failover", conf, then=move_the_app
    )
    say(f"disaster: dr_failover {log.failover_state} after {log.failover_done_at - log.failover_triggered_at:.0f}s")
    if not log.moves_out:
        move_the_app()
    first = readers.first_read(NAMES.group(EAST), timeout=300)
    log.rto_s = None if first is None else first - log.failover_triggered_at
    say(f"disaster: east's app on west; RTO (trigger -> first read) {'none' if first is None else f'{log.rto_s:.1f}s'}")
    # east-origin records cannot reach west any more (east is down, its flows stopped): what
    # west holds of them now is what it held at the failover
    log.west_at_failover = read_cluster(west, NAMES)
    time.sleep(pace.on_west_s)

    say("disaster: east started again")
    d.lab.start(EAST, BROKER_START_TIMEOUT_S)
    log.east_back_at = time.time()
    say("disaster: dr_failback (resync) east <- west triggered through the REST API")
    conf = {
        "recovered_cluster": EAST,
        "surviving_cluster": WEST,
        "mode": "resync",
        "consumer_groups": groups,
        "data_quality": pace.failback_data_quality,
        "dry_run": False,
    }
    log.failback_triggered_at, log.failback_done_at, log.failback_state, log.failback_summary = _operator_run(
        d, "dr_failback", conf
    )
    say(f"disaster: dr_failback {log.failback_state} after {log.failback_done_at - log.failback_triggered_at:.0f}s")
    # the app stops on west, its consumers too (their last positions committed there), so the
    # drain moves its group home from exactly where it stopped
    traffic.redirect(EAST, None)
    readers.park(NAMES.group(EAST))
    say("disaster: east's app stopped on west; dr_drain east <- west triggered through the REST API")
    pair = {"recovered_cluster": EAST, "surviving_cluster": WEST}
    log.drain_triggered_at, log.drain_done_at, log.drain_state, log.drain_summary = _operator_run(d, "dr_drain", pair)
    say(f"disaster: dr_drain {log.drain_state} after {log.drain_done_at - log.drain_triggered_at:.0f}s")
    traffic.redirect(EAST, east)
    log.moves_home.append(readers.move(NAMES.group(EAST), east))
    readers.first_read(NAMES.group(EAST), timeout=300)
    return log

"""The game day's fault script: which faults, in which order, and when (pure).

Faults come one at a time so each one's effect (alert, time until replication flows again)
is its own. The disaster comes last: east stopped, failover to west, east back, failback.
A short game day runs each kind once; a longer one spreads the same script over its minutes
and repeats the single faults while time allows.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Single faults, each healed by the product (or by the operator's restart of a process)
#: without a human touching kafka-dr. ``flows``: the flows whose copying the fault interrupts.
SINGLE_FAULTS = (
    "spark-executor",
    "spark-worker",
    "spark-driver",
    "target-leader",
    "source-leader",
    "target-rolling-restart",
    "target-network-cut",
    "airflow-scheduler",
)
DISASTER = "east-down-failover-failback"

#: Shortest gap between two faults: long enough to see replication flowing again.
MIN_GAP_S = 75.0
#: Time the disaster takes (stop, failover, consumers on west, east back, failback, move back).
DISASTER_S = 300.0
WARM_UP_S = 60.0


@dataclass(frozen=True)
class Step:
    at_s: float  #: seconds after the traffic started
    fault: str


def script(minutes: float, faults: tuple[str, ...] = SINGLE_FAULTS) -> list[Step]:
    """The faults of a game day of ``minutes``: every kind once, then repeats while there is
    room, then the disaster. Raises ValueError when ``minutes`` cannot hold one round."""
    total = minutes * 60.0
    room = total - WARM_UP_S - DISASTER_S
    rounds = int(room // (MIN_GAP_S * len(faults)))
    if rounds < 1:
        need = (WARM_UP_S + DISASTER_S + MIN_GAP_S * len(faults)) / 60.0
        raise ValueError(f"--minutes {minutes:g}: a game day needs at least {need:.0f} minutes for one round of faults")
    gap = room / (rounds * len(faults))
    steps = [Step(WARM_UP_S + gap * i, f) for i, f in enumerate(faults * rounds)]
    steps.append(Step(WARM_UP_S + room, DISASTER))
    return steps


def minimum_minutes(faults: tuple[str, ...] = SINGLE_FAULTS) -> float:
    return (WARM_UP_S + DISASTER_S + MIN_GAP_S * len(faults)) / 60.0


@dataclass(frozen=True)
class Pace:
    """How long a game day gives each phase that is not a fault."""

    #: least time from one fault's end to the next fault: its flowing-again window
    recovery_s: float = 60.0
    #: records/s per app: steady traffic that leaves the 2-core lab host room for the rest
    traffic_rate: float = 50.0
    #: the next fault waits this long at most for the last one's flows to flow again, so that
    #: each fault's recovery is measured on its own
    recovery_timeout_s: float = 300.0
    #: from east's death to the operator's failover trigger
    failover_after_s: float = 10.0
    #: how long the moved app runs on west before east comes back
    on_west_s: float = 60.0
    #: after the last fault, before the traffic stops: its recovery is measured too
    tail_s: float = 30.0
    #: data quality's latency window; the run at the end waits it out after the last copy
    latency_window_s: int = 120
    #: the failback's gate runs the data-quality comparison too (else records only: the game
    #: day's own proof and its data-quality run at the end judge the copies)
    failback_data_quality: bool = True
    #: dr_data_quality on its schedule too (every ten minutes), not only at the end
    scheduled_data_quality: bool = True


FULL = Pace()
#: The test suite's game day: every phase as short as its measurement allows on 2 cores (each
#: fault waits for the last one's flows, then 8 s), lighter traffic; the faults start once the
#: deployment is ready, as in the full one: before that the periodic DAGs' first runs (a
#: dozen task processes at once, dr_parity's the longest) load both cores, and a fault among
#: them would measure them. The failback's gate runs as an operator runs it (records and data
#: quality).
#: Data quality runs in that gate and at the end only: a scheduled run (a Spark job over
#: everything retained) lands at a random point of its minutes, doubling the load under
#: whichever fault it meets, so that fault's recovery measured the schedule's phase.
SHORT = Pace(
    recovery_s=8.0,
    traffic_rate=30.0,
    recovery_timeout_s=180.0,
    failover_after_s=2.0,
    on_west_s=10.0,
    tail_s=5.0,
    latency_window_s=30,
    scheduled_data_quality=False,
)

#: One fault of each kind (a Spark process, a broker, the network, the scheduler), then the
#: disaster: the short game day the test suite runs.
SHORT_FAULTS = ("spark-executor", "target-leader", "target-network-cut", "airflow-scheduler")


def short_script(pace: Pace = SHORT) -> list[Step]:
    steps = [Step(pace.recovery_s * i, f) for i, f in enumerate(SHORT_FAULTS)]
    return [*steps, Step(pace.recovery_s * len(SHORT_FAULTS), DISASTER)]

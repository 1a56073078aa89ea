"""The game day's pure parts: its fault script, config, process matching, memory verdict,
report and per-fault rows, on plain values."""

from __future__ import annotations

import json
import time

import pytest

from kafka_dr.core.config_load import parse_config
from kafka_dr.gameday.faults import Injected
from kafka_dr.gameday.game_config import SCHEDULES, game_config
from kafka_dr.gameday.memory import growth
from kafka_dr.gameday.model import ACKED, LedgerView, Produced, Read
from kafka_dr.gameday.processes import descendants, executors, parse_ps, replication_drivers
from kafka_dr.gameday.proof import flowing_since, stall_end
from kafka_dr.gameday.report import FaultRow, json_line, table
from kafka_dr.gameday.run import next_start
from kafka_dr.gameday.script import DISASTER, SINGLE_FAULTS, Pace, minimum_minutes, script, short_script
from kafka_dr.gameday.verdict import Alert, alerts_from, dq_run_started, fault_rows, targets


def test_a_script_runs_every_fault_once_per_round_then_the_disaster_last():
    steps = script(minimum_minutes())
    assert [s.fault for s in steps] == [*SINGLE_FAULTS, DISASTER]
    assert all(a.at_s < b.at_s for a, b in zip(steps, steps[1:], strict=False))
    longer = script(minimum_minutes() * 2)
    assert [s.fault for s in longer[:-1]].count("spark-driver") >= 2 and longer[-1].fault == DISASTER


def test_a_script_too_short_for_one_round_is_refused_with_the_minimum():
    with pytest.raises(ValueError, match=r"--minutes 5: a game day needs at least 16 minutes"):
        script(5)


def test_the_short_script_has_one_fault_of_each_kind_then_the_disaster():
    faults = [s.fault for s in short_script()]
    assert faults[-1] == DISASTER and len(set(faults)) == len(faults) == 5


def test_a_fault_that_ran_late_pushes_the_next_one_back_by_the_recovery_time():
    pace = Pace(recovery_s=60.0, latency_window_s=120)
    assert next_start(100.0, [], pace) == 100.0
    assert next_start(100.0, [Injected("spark-executor", 30.0)], pace) == 100.0  # over at once, on time
    leader = Injected("target-leader", 60.0, 147.0)  # a broker's restart took 87 s
    assert next_start(120.0, [leader], pace) == 147.0 + 60.0


def test_the_fault_after_a_network_cut_waits_until_the_cuts_late_copies_left_the_latency_window():
    pace = Pace(recovery_s=60.0, latency_window_s=120)
    cut = Injected("target-network-cut", 100.0, 160.0)
    assert next_start(190.0, [cut], pace) == 160.0 + 120.0
    assert next_start(300.0, [cut], pace) == 300.0  # scheduled later than that: on time
    assert next_start(190.0, [cut], Pace(recovery_s=60.0, latency_window_s=30)) == 160.0 + 60.0


def test_without_scheduled_data_quality_the_fault_after_a_network_cut_waits_only_the_recovery_time():
    cut = Injected("target-network-cut", 100.0, 160.0)
    pace = Pace(recovery_s=8.0, latency_window_s=30, scheduled_data_quality=False)
    assert next_start(120.0, [cut], pace) == 160.0 + 8.0


class _Api:
    """Airflow's REST API as the readiness wait asks it: every run it waits for succeeds."""

    def __init__(self) -> None:
        self.triggered: list[str] = []

    def runs(self, dag_id, limit=1):
        return [{"dag_run_id": f"{dag_id}-scheduled"}]

    def trigger(self, dag_id, conf):
        self.triggered.append(dag_id)
        return f"{dag_id}-{len(self.triggered)}"

    def wait_run(self, dag_id, run_id, timeout):
        return {"state": "success"}


def test_the_readiness_wait_asks_again_when_a_fault_cuts_off_the_recorded_reports(monkeypatch):
    """The recorded parity reports cannot be read while a fault cuts the target off: the wait
    asks again (offset sync, then dr_parity) instead of ending the game day."""
    from types import SimpleNamespace

    from kafka_dr.gameday import run

    answers = iter([ConnectionError("west did not answer"), None])

    def unready(d):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(run, "_unready_direction", unready)
    monkeypatch.setattr(run.time, "sleep", lambda s: None)
    api = _Api()
    said = run._wait_ready(SimpleNamespace(api=api), timeout=60)
    assert said.startswith("dr_parity success") and api.triggered == ["dr_offset_sync", "dr_parity"]


def test_the_game_config_keeps_the_lab_and_adds_schedules_alerts_and_groups():
    lab = {"clusters": {"east": {"bootstrap_servers": "127.0.0.1:1"}}, "flows": [{"source": "east", "target": "west"}]}
    doc = game_config(lab, "http://127.0.0.1:9/alerts", 2525, "gd-app-.*")
    assert doc["clusters"] == lab["clusters"] and "schedules" not in lab  # the input is not changed
    assert doc["schedules"] == SCHEDULES and doc["flows"][0]["mode"] == "continuous"
    assert doc["alerts"]["webhook"]["url"] == "http://127.0.0.1:9/alerts"
    assert doc["alerts"]["email"]["smtp_port"] == 2525
    assert doc["consumer_groups"] == {"allow": ["gd-app-.*"]}
    assert doc["thresholds"] == {"latency_window_seconds": 120}
    assert game_config(lab, "http://x", 1, "g", latency_window_s=60)["thresholds"] == {"latency_window_seconds": 60}
    # the short game day: data quality only when triggered (its failback gate and its end)
    both = {**lab, "clusters": {**lab["clusters"], "west": {"bootstrap_servers": "127.0.0.1:2"}}}
    short = parse_config(game_config(both, "http://x", 1, "g", scheduled_data_quality=False))
    assert short.schedules.data_quality is None and short.schedules.heartbeat == SCHEDULES["heartbeat"]
    assert parse_config(game_config(both, "http://x", 1, "g")).schedules.data_quality == SCHEDULES["data_quality"]


PS = """\
  100     1 java -cp x org.apache.spark.deploy.SparkSubmit /r/spark_jobs/replicate.py --flow east_to_west
  101     1 java -cp x org.apache.spark.deploy.SparkSubmit /r/spark_jobs/replicate.py --flow west_to_east
  200     1 java -cp x org.apache.spark.deploy.worker.Worker spark://h:1
  201   200 java -cp x org.apache.spark.executor.CoarseGrainedExecutorBackend --driver-url d --app-id app-1 --cores 1
  202   201 python -m pyspark.daemon
  300     1 java -cp x org.apache.spark.executor.CoarseGrainedExecutorBackend --driver-url d --app-id app-2
garbage line
"""


def test_processes_are_matched_by_their_command_lines():
    procs = parse_ps(PS)
    assert len(procs) == 6
    assert [p.pid for p in replication_drivers(procs, "east_to_west")] == [100]
    assert [p.pid for p in executors(procs)] == [201, 300]
    assert [p.pid for p in executors(procs, "app-2")] == [300]
    assert {p.pid for p in descendants(procs, 200)} == {201, 202}


def test_memory_is_flat_unless_the_late_quarter_outgrows_the_early_one():
    flat = [(float(t), 100.0) for t in range(0, 200, 10)]
    assert growth(flat, 50, "brokers").ratio == 1.0
    rising = [(float(t), 100.0 + t) for t in range(0, 200, 10)]
    g = growth(rising, 50, "brokers")
    assert g is not None and g.ratio > 1.5
    assert growth(flat[:5], 0, "brokers") is None  # too few samples to judge


def _acked(gd: str, cluster: str, at: float) -> Produced:
    return Produced(gd, cluster, "gd.keyed", "k", 1, cluster, ACKED, at, at, 0, 0, None)


def test_a_fault_row_has_its_window_s_first_alert_and_the_time_until_a_newer_record_arrived():
    view = LedgerView(
        {
            "east:gd.keyed:1": _acked("east:gd.keyed:1", "east", 105.0),
            "east:gd.keyed:0": _acked("east:gd.keyed:0", "east", 99.0),
        },
        {},
        {},
        [],
    )
    reads = [
        Read("east:gd.keyed:0", "gd-app-west", "west", "gd.keyed", 0, 0, 101.0, "east"),
        Read("east:gd.keyed:1", "gd-app-west", "west", "gd.keyed", 0, 1, 130.0, "east"),
    ]
    injected = [
        Injected("target-network-cut", 100.0, 104.0, ("east_to_west",)),
        Injected("airflow-scheduler", 200.0, 205.0, ()),
    ]
    alerts = [Alert(150.0, "dr_heartbeat.measure_latency"), Alert(400.0, "dr_heartbeat.measure_latency")]
    rows = fault_rows(injected, 0.0, 300.0, view, reads, alerts)
    assert (rows[0].detected_by, rows[0].alert_after_s, rows[0].flowing_again_after_s) == (
        "dr_heartbeat.measure_latency",
        50.0,
        26.0,  # from the network's return (104) to the first record produced after it arriving (130)
    )
    assert rows[1].detected_by == "no alert" and rows[1].flowing_again_after_s is None


def test_a_data_quality_alert_belongs_to_the_fault_in_whose_window_its_run_looked():
    started = dq_run_started("data quality dq-20261128T002049Z-775aa5: FAILED, 20 topic-partition(s) compared")
    assert started == 1795825249.0  # 2026-11-28 00:20:49 UTC
    assert dq_run_started("replication heartbeats failed") is None
    view = LedgerView({}, {}, {})
    cut = Injected("target-network-cut", started - 100, started - 40, ())
    injected = [cut, Injected("airflow-scheduler", started + 60)]
    payload = {"dag_id": "dr_data_quality", "task_id": "validate", "error": "data quality dq-20261128T002049Z-775aa5"}
    alerts = alerts_from([payload], [started + 70])  # the run ended 10 s into the scheduler kill
    rows = fault_rows(injected, 0.0, started + 300, view, [], alerts)
    assert (rows[0].detected_by, rows[0].alert_after_s) == ("dr_data_quality.validate", 170.0)
    assert rows[1].detected_by == "no alert"


def test_a_killed_jobs_last_copies_do_not_hide_the_stall_after_them():
    """The driver is killed at 100 s; its executor copies on until 100.7 s, and the new job's
    copies start at 170 s: replication flowed again 70 s after the kill, not at once."""
    produced = {f"east:gd.keyed:{i}": 95.0 + i * 0.5 for i in range(14)}
    view = LedgerView({g: _acked(g, "east", t) for g, t in produced.items()}, {}, {}, [])
    arrivals = [95.0, 96.0, 97.0, 98.0, 99.5, 100.2, 100.7, 170.0, 170.5]
    gds = ["east:gd.keyed:0", "east:gd.keyed:2", "east:gd.keyed:4", "east:gd.keyed:6", "east:gd.keyed:9"]
    gds += ["east:gd.keyed:11", "east:gd.keyed:12", "east:gd.keyed:13", "east:gd.keyed:10"]
    reads = [
        Read(g, "gd-app-west", "west", "gd.keyed", 0, i, at, "east") for i, (g, at) in enumerate(zip(gds, arrivals))
    ]
    assert stall_end(100.0, 300.0, "east", "west", reads) == 170.0
    assert stall_end(100.0, 150.0, "east", "west", reads) is None  # the stall ends after the window
    assert stall_end(171.0, 300.0, "east", "west", reads) is None  # nothing stalled after 171 s
    rows = fault_rows([Injected("spark-driver", 100.0, None, ("east_to_west",))], 0.0, 300.0, view, reads, [])
    assert rows[0].flowing_again_after_s == 70.0


def test_the_wait_for_a_fault_s_recovery_is_not_ended_by_a_killed_job_s_last_copy():
    """An executor is killed at 100 s; its Python worker copies one more record produced after
    the kill (arriving at 100.4 s), then nothing arrives until the new executor copies at 131 s.
    The wait sees a pause, not a recovery, until arrivals resume, and reports their resumption."""
    produced = {"east:gd.keyed:0": 99.0, "east:gd.keyed:1": 100.1, "east:gd.keyed:2": 130.0, "east:gd.keyed:3": 130.5}
    view = LedgerView({g: _acked(g, "east", t) for g, t in produced.items()}, {}, {}, [])
    arrivals = {"east:gd.keyed:0": 99.5, "east:gd.keyed:1": 100.4, "east:gd.keyed:2": 131.0, "east:gd.keyed:3": 131.5}
    reads = [Read(g, "gd-app-west", "west", "gd.keyed", 0, i, at, "east") for i, (g, at) in enumerate(arrivals.items())]

    def seen(now: float) -> float | None:
        return flowing_since(100.0, 100.0, now, "east", "west", view, [r for r in reads if r.at <= now])

    assert seen(103.0) is None  # the first copy after the kill is too recent to tell
    assert seen(106.0) is None and seen(125.0) is None  # a pause since 100.4 s: not flowing
    assert seen(131.2) == 131.0  # arrivals resumed: flowing again 31 s after the kill
    assert seen(134.0) == 131.0


def test_the_wait_for_a_fault_s_recovery_ends_at_the_first_copy_when_copies_go_on():
    produced = {f"east:gd.keyed:{i}": 100.0 + i * 0.5 for i in range(20)}
    view = LedgerView({g: _acked(g, "east", t) for g, t in produced.items()}, {}, {}, [])
    reads = [
        Read(g, "gd-app-west", "west", "gd.keyed", 0, i, t + 0.3, "east") for i, (g, t) in enumerate(produced.items())
    ]
    assert flowing_since(100.0, 100.0, 104.0, "east", "west", view, [r for r in reads if r.at <= 104.0]) is None
    assert flowing_since(100.0, 100.0, 109.0, "east", "west", view, reads) == 100.3


def test_alerts_name_the_failed_task_or_the_operator_event():
    got = alerts_from([{"dag_id": "dr_heartbeat", "task_id": "measure_latency"}, {"event": "failover"}], [1.0, 2.0])
    assert [(a.at, a.what) for a in got] == [(1.0, "dr_heartbeat.measure_latency"), (2.0, "failover")]


def test_the_report_prints_a_row_per_fault_and_ends_with_one_json_line():
    rows = [FaultRow("spark-driver", 61.0, None, "no alert", None, 34.5, 0, 0)]
    text = table(rows)
    assert text.splitlines()[0].startswith("fault") and "spark-driver" in text.splitlines()[2]
    doc = json.loads(json_line(rows, {"rto_seconds": 20.1}))
    assert doc["rto_seconds"] == 20.1 and doc["faults"][0]["flowing_again_after_s"] == 34.5


def test_the_targets_name_each_fault_that_missed_one():
    rows = [
        FaultRow("spark-executor", 0.0, flowing_again_after_s=12.0, detected_by="no alert"),
        FaultRow("spark-driver", 60.0, flowing_again_after_s=31.0, detected_by="restart", alert_after_s=0.0),
        FaultRow("target-network-cut", 120.0, flowing_again_after_s=5.0, detected_by="restart", alert_after_s=36.0),
        FaultRow("east-down-failover-failback", 300.0, detected_by="failover", alert_after_s=0.0),
    ]
    met = targets(rows, rto_s=19.5, alert_within_s=120.0)
    assert met["flowing_again_slow"] == ["spark-driver"] and not met["flowing_again_within_30s"]
    assert met["rto_within_20s"] and met["alerted_within_heartbeat_threshold"]
    assert not targets(rows, rto_s=20.5, alert_within_s=120.0)["rto_within_20s"]
    assert met["alerted_though_healed_alone"] == ["spark-driver: restart"]
    assert targets(rows, rto_s=None, alert_within_s=30.0)["not_alerted_in_time"] == ["target-network-cut"]


def test_a_fault_has_recovered_once_each_of_its_flows_carried_a_record_produced_after_it():
    from kafka_dr.gameday.run import _await_recovery

    class Source:
        def __init__(self, value):
            self.value = value

        def view(self):
            return self.value

        def reads(self):
            return self.value

    now = time.time()  # the wait judges arrivals against the clock: copies that go on up to now
    ids = [f"{origin}:gd.keyed:{i}" for origin in ("east", "west") for i in (1, 2, 3)]
    view = LedgerView({g: _acked(g, g.split(":")[0], now - 60.0) for g in ids}, {}, {}, [])

    def arrived(gd: str, at: float) -> Read:
        origin = gd.split(":")[0]
        return Read(gd, "gd-app", "west" if origin == "east" else "east", "gd.keyed", 0, 1, at, origin)

    east_only = [arrived(f"east:gd.keyed:{i}", now - at) for i, at in ((1, 10.0), (2, 6.0), (3, 2.0))]
    both = [*east_only, *(arrived(f"west:gd.keyed:{i}", now - at) for i, at in ((1, 9.0), (2, 5.0), (3, 1.0)))]
    cut = Injected("target-network-cut", now - 100.0, now - 96.0)
    assert _await_recovery(cut, Source(view), Source(both), 1.0) == "flowing again 87s after it ended"
    assert _await_recovery(cut, Source(view), Source(east_only), 0.1) == "not flowing again within 0s after it ended"
    one_flow = Injected("spark-driver", 100.0, 104.0, ("east_to_west",))
    assert _await_recovery(one_flow, Source(view), Source(east_only), 1.0).startswith("flowing again ")

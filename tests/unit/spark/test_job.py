"""The replication job's restart loop (kafka_dr.spark.job): how many times a failed query is
run again, the pauses between, when the job gives up, and how the summary says it stopped.
Queries are stand-ins returning plain errors; the lab tests run the real one."""

from __future__ import annotations

import time

import pytest

from kafka_dr.core.config import FlowMode
from kafka_dr.core.config_load import parse_config
from kafka_dr.spark.job import FlowRun, JobOptions, _restart_loop, a_cluster_is_silent
from kafka_dr.spark.metrics_sink import JobSummary
from kafka_dr.spark.supervision import Stop

CFG = parse_config(
    {
        "clusters": {"east": {"bootstrap_servers": "127.0.0.1:1"}, "west": {"bootstrap_servers": "127.0.0.1:2"}},
        "flows": [{"source": "east", "target": "west"}],
    }
)
OUTAGE = RuntimeError("flow east_to_west: source cluster 'east' (127.0.0.1:1) did not answer: timed out")


class RecordedStop(Stop):
    """A stop whose pauses are recorded, not waited."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(None)
        self.reason, self.pauses, self.ended_early_by = reason, [], []

    def sleep(self, seconds: float, until=None, every: float = 1.0) -> None:
        self.pauses.append(seconds)
        self.ended_early_by.append(until)


def loop(
    errors: list, mode: str = "incremental", max_restarts: int = 5, stop: Stop | None = None, failed: list | None = None
):
    run = FlowRun(
        JobOptions(config="x.yaml", flow="east_to_west", max_restarts=max_restarts),
        CFG,
        CFG.flows[0],
        FlowMode(mode),
        None,
    )
    summary, stop = JobSummary("east_to_west"), stop or RecordedStop()
    queue, failovers = list(errors), list(failed or [None] * len(errors))
    return _restart_loop(run, summary, stop, None, lambda: queue.pop(0), lambda: failovers.pop(0)), stop


def test_a_driver_whose_jvm_is_gone_stops_at_once_without_restarting_or_alerting():
    run = FlowRun(JobOptions(config="x.yaml", flow="east_to_west"), CFG, CFG.flows[0], FlowMode("continuous"), None)
    stop, tries = RecordedStop(), [OUTAGE, None]
    with pytest.raises(RuntimeError, match=r"^flow east_to_west: stopped: the driver's JVM is gone"):
        _restart_loop(run, JobSummary("east_to_west"), stop, None, lambda: tries.pop(0), lambda: None, lambda: False)
    assert stop.pauses == [] and tries == [None]  # no pause, no second query


def test_a_failed_query_is_restarted_after_pauses_that_double():
    summary, stop = loop([OUTAGE, OUTAGE, OUTAGE, None])
    assert (summary.restarts, summary.stopped_by, stop.pauses) == (3, "completed", [2.0, 4.0, 8.0])


def test_the_pause_stops_doubling_at_a_minute():
    summary, stop = loop([OUTAGE] * 7 + [None], max_restarts=10)
    assert stop.pauses == [2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]


def test_the_job_gives_up_one_failure_past_max_restarts():
    with pytest.raises(RuntimeError) as e:
        loop([OUTAGE] * 5, max_restarts=2)
    assert str(e.value) == (
        "flow east_to_west: giving up after 3 failed run(s); last error: source cluster 'east' (127.0.0.1:1) did not "
        "answer: timed out"
    )


def test_a_permanent_failure_stops_at_once():
    stop = RecordedStop()
    with pytest.raises(RuntimeError, match=r"^flow east_to_west: stopped: west refused east/orders\[0\]@3: too large$"):
        loop([RuntimeError("flow east_to_west: west refused east/orders[0]@3: too large"), None], stop=stop)
    assert stop.pauses == []


def test_a_failure_after_a_stop_was_asked_for_is_not_restarted():
    stop = RecordedStop("SIGTERM")
    with pytest.raises(RuntimeError, match="giving up after 1 failed run"):
        loop([OUTAGE, None], stop=stop)
    assert stop.pauses == []


@pytest.mark.parametrize(
    ("mode", "reason", "stopped_by"),
    [
        ("incremental", "", "completed"),
        ("continuous", "", "max duration"),
        ("continuous", "SIGTERM", "SIGTERM"),
    ],
)
def test_the_summary_says_what_stopped_the_run(mode, reason, stopped_by):
    summary, _ = loop([None], mode=mode, stop=RecordedStop(reason))
    assert (summary.restarts, summary.stopped_by) == (0, stopped_by)


def test_a_failover_recorded_while_the_job_ran_stops_it_instead_of_a_restart():
    """The source went down, an operator failed over: the job ends without an error and is not
    started again (the failback copies between the two clusters itself)."""
    summary, stop = loop([OUTAGE, OUTAGE, None], failed=[None, "east"])
    assert (summary.restarts, summary.stopped_by, stop.pauses) == (2, "failover of east", [2.0])


def test_a_query_that_copied_since_the_last_failure_starts_the_pauses_and_the_count_afresh():
    """Separate faults an hour-long job rides out: after a query that copied, the pause is the
    first one again and ``max_restarts`` counts failures in a row, not in the job's life."""
    run = FlowRun(
        JobOptions(config="x.yaml", flow="east_to_west", max_restarts=2),
        CFG,
        CFG.flows[0],
        FlowMode("continuous"),
        None,
    )
    copied_at = [float("-inf")]

    def attempt(outcome):
        if outcome == "copied, then failed":
            copied_at[0] = time.monotonic()
        return None if outcome == "ended" else OUTAGE

    outcomes = ["failed", "failed", "copied, then failed", "failed", "copied, then failed", "ended"]
    stop = RecordedStop()
    summary = _restart_loop(
        run,
        JobSummary("east_to_west"),
        stop,
        None,
        lambda: attempt(outcomes.pop(0)),
        lambda: None,
        progressed_at=lambda: copied_at[0],
        still_silent=lambda: False,
    )
    assert (summary.restarts, stop.pauses) == (5, [2.0, 4.0, 2.0, 4.0, 2.0])


def test_after_a_silent_cluster_the_pause_ends_once_it_answers():
    summary, stop = loop([OUTAGE, LEADER_MOVED, None])
    assert summary.restarts == 2 and stop.pauses == [2.0, 4.0]
    silent, not_silent = stop.ended_early_by
    assert silent is not None and silent() is False  # still_silent() says True: keep waiting
    assert not_silent is None  # not a cluster that did not answer: the whole pause


def test_a_pause_ends_when_its_condition_comes_true():
    asked = []
    started = time.monotonic()
    Stop(None).sleep(30, until=lambda: asked.append(1) or len(asked) == 2, every=0.5)
    assert len(asked) == 2 and time.monotonic() - started < 5


LEADER_MOVED = RuntimeError("flow east_to_west: west: commit failed: NOT_LEADER_OR_FOLLOWER")


#: clusters with no broker listening (loopback ports nothing binds)
NOWHERE = {"east": {"bootstrap_servers": "127.0.0.1:1"}, "west": {"bootstrap_servers": "127.0.0.1:2"}}


def _alerting(webhook_url: str, threshold_s: float):
    """A flow between two clusters nobody listens on, alerting to ``webhook_url``."""
    return parse_config(
        {
            "clusters": NOWHERE,
            "flows": [{"source": "east", "target": "west"}],
            "alerts": {"webhook": {"url": webhook_url}},
            "thresholds": {"restart_alert_after_seconds": threshold_s},
        }
    )


def _alerts_of_one_restart(error, quiet: float, still_silent=lambda: True) -> list[dict]:
    """The webhook alerts of a job whose query fails once with ``error``, ``quiet`` seconds
    after its last copy, and then runs to its end (threshold 30 s)."""
    from receivers import WebhookReceiver

    hook = WebhookReceiver()
    try:
        cfg = _alerting(hook.url, 30)
        run = FlowRun(JobOptions(config="x.yaml", flow="east_to_west"), cfg, cfg.flows[0], FlowMode("continuous"), None)
        tries, copied_at = [error, None], time.monotonic() - quiet
        summary = _restart_loop(
            run,
            JobSummary("east_to_west"),
            RecordedStop(),
            None,
            lambda: tries.pop(0),
            lambda: None,
            progressed_at=lambda: copied_at,
            still_silent=still_silent,
        )
        assert summary.restarts == 1
        return list(hook.received)
    finally:
        hook.close()


@pytest.mark.parametrize(
    ("error", "quiet", "alerted"),
    [(LEADER_MOVED, 5.0, []), (LEADER_MOVED, 45.0, [(1, 45)]), (OUTAGE, 5.0, [(1, 5)])],
)
def test_a_restart_is_alerted_once_the_flow_has_copied_nothing_for_the_threshold_or_a_cluster_is_gone(
    error, quiet, alerted
):
    """A query that fails seconds after a copy (a leader election, a broker restart) is restarted
    and logged; one that fails after 30 s without a copy is an outage, and alerted, as is a
    cluster that did not answer at all (a network cut)."""
    got = _alerts_of_one_restart(error, quiet)
    assert [(a["restart"], round(a["copied_nothing_for_seconds"])) for a in got] == alerted


def test_a_cluster_that_did_not_answer_once_but_answers_again_waits_for_the_threshold():
    """A metadata request that timed out while a broker died on a busy host is not a network cut:
    the restart is alerted at once only when a cluster is still silent when the job restarts."""
    assert _alerts_of_one_restart(OUTAGE, 5.0, still_silent=lambda: False) == []
    assert [a["restart"] for a in _alerts_of_one_restart(OUTAGE, 5.0, still_silent=lambda: True)] == [1]


def test_a_cluster_with_no_broker_listening_is_silent():
    cfg = parse_config(
        {
            "clusters": NOWHERE,
            "flows": [{"source": "east", "target": "west"}],
        }
    )
    assert a_cluster_is_silent(cfg, cfg.flows[0]) is True


def test_a_continuous_jobs_watch_alerts_a_cluster_silent_past_the_threshold_once(monkeypatch):
    """The job's outage watch, with a look that reports west silent and a real local webhook."""
    from kafka_dr.spark import outage_watch
    from receivers import WebhookReceiver

    hook = WebhookReceiver()
    try:
        cfg = _alerting(hook.url, 0.2)
        monkeypatch.setattr(outage_watch, "LOOK_EVERY_SECONDS", 0.05)
        with outage_watch.watch_outages(cfg, cfg.flows[0], look=lambda: "west"):
            deadline = time.monotonic() + 10
            while not hook.received and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.5)  # more looks at the same outage: still one alert
        assert [(a["event"], a["cluster"], a["flow"]) for a in hook.received] == [
            ("cluster_silent", "west", "east_to_west")
        ], hook.received
        assert hook.received[0]["seconds"] >= 0.2
    finally:
        hook.close()


def test_the_silent_cluster_is_named():
    cfg = parse_config({"clusters": NOWHERE, "flows": [{"source": "east", "target": "west"}]})
    from kafka_dr.spark.outage_watch import silent_cluster

    assert silent_cluster(cfg, cfg.flows[0], timeout=1) == "east"

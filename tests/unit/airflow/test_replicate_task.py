"""How a replication task ends: a driver killed while copying is started again at once; which
failures alert: the job giving up does, a killed driver does not (the next try starts the job
again; a flow that stays down is the heartbeats' alarm)."""

from __future__ import annotations

import pytest
from airflow.providers.common.compat.sdk import AirflowException

from kafka_dr.airflow import notifier
from kafka_dr.airflow.replication_dag import DriverKilled, signal_of, submit_until_done
from kafka_dr.core.config import Alerts, WebhookAlert


@pytest.mark.parametrize(
    ("message", "signal"),
    [
        ("Cannot execute: spark-submit --master spark://h:1 x.py. Error code is: -9.", 9),
        ("Cannot execute: spark-submit x.py. Error code is: 137.", 9),
        ("Cannot execute: spark-submit x.py. Error code is: -15.", 15),
        ("Cannot execute: spark-submit x.py. Error code is: 1.", None),  # the job gave up
        ("Cannot execute: spark-submit x.py. Error code is: 2.", None),  # a usage error
        ("something else failed", None),
    ],
)
def test_the_signal_that_ended_spark_submit_is_read_from_the_hooks_error(message, signal):
    assert signal_of(RuntimeError(message)) == signal


def test_a_killed_driver_is_not_alerted_and_a_job_that_gave_up_is(monkeypatch):
    sent = []
    monkeypatch.setattr(notifier, "send_all", lambda alerts, subject, body, payload, resolve=None: sent.append(subject))
    monkeypatch.setattr(notifier, "_resolver", lambda: None)
    alert = notifier.KafkaDrNotifier(Alerts(webhook=WebhookAlert("http://127.0.0.1:9/")), quiet=(DriverKilled,))
    context = {"dag_id": "dr_replicate_east_to_west", "run_id": "r1"}
    alert.notify({**context, "exception": DriverKilled("flow east_to_west: the job's driver was killed (signal 9)")})
    assert sent == []
    alert.notify({**context, "exception": RuntimeError("flow east_to_west: giving up after 6 failed run(s)")})
    assert len(sent) == 1 and sent[0].endswith("failed")


class Clock:
    """Plain seconds that each submit advances by the time its driver ran."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def submits(clock: Clock, runs: list[tuple[float, str | None]]):
    """A stand-in for spark-submit: each call runs for its seconds and ends as its message says
    (None: the job ended well)."""
    calls = []

    def submit():
        ran, message = runs[len(calls)]
        calls.append(ran)
        clock.now += ran
        if message is not None:
            raise AirflowException(message)
        return "done"

    return submit, calls


KILLED = "Cannot execute: spark-submit x.py. Error code is: -9."


def test_a_driver_killed_while_copying_is_started_again_at_once_after_checking_the_flow_may_run():
    clock, checked = Clock(), []
    submit, calls = submits(clock, [(600.0, KILLED), (90.0, KILLED), (3600.0, None)])
    assert submit_until_done(submit, lambda: checked.append(1), lambda: False, "east_to_west", clock) == "done"
    assert calls == [600.0, 90.0, 3600.0] and len(checked) == 2


@pytest.mark.parametrize(
    ("runs", "killed_by_airflow"),
    [
        ([(20.0, KILLED)], False),  # killed soon after its start: the retry's pause applies
        ([(600.0, KILLED)], True),  # Airflow stopped the task: the driver stays down
        ([(600.0, KILLED)] * 4, False),  # killed again and again: the task gives up to its retries
    ],
)
def test_a_killed_driver_is_left_to_the_next_try(runs, killed_by_airflow):
    clock = Clock()
    submit, calls = submits(clock, runs)
    with pytest.raises(DriverKilled, match=r"^flow east_to_west: the job's driver was killed \(signal 9\)$"):
        submit_until_done(submit, lambda: None, lambda: killed_by_airflow, "east_to_west", clock)
    assert len(calls) == len(runs)


def test_a_job_that_gave_up_fails_the_task_without_a_second_submit():
    clock = Clock()
    submit, calls = submits(clock, [(600.0, "Cannot execute: spark-submit x.py. Error code is: 1."), (1.0, None)])
    with pytest.raises(AirflowException, match="Error code is: 1"):
        submit_until_done(submit, lambda: None, lambda: False, "east_to_west", clock)
    assert calls == [600.0]


def test_a_flow_failed_over_meanwhile_is_not_started_again():
    clock = Clock()
    submit, calls = submits(clock, [(600.0, KILLED), (1.0, None)])

    def failed_over():
        raise RuntimeError("east is failed over")

    with pytest.raises(RuntimeError, match="east is failed over"):
        submit_until_done(submit, failed_over, lambda: False, "east_to_west", clock)
    assert calls == [600.0]

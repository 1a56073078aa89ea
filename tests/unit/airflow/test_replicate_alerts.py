"""Which failures of a replication task alert: the job giving up does, a killed driver does
not (the next try starts the job again; a flow that stays down is the heartbeats' alarm)."""

from __future__ import annotations

import pytest

from kafka_dr.airflow import notifier
from kafka_dr.airflow.replication_dag import DriverKilled, signal_of
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

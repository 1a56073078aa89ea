"""The dr_parity task's verdicts: green only on a judged report (ready or degraded, or the last
one recorded while the source is down); not ready and "cannot judge" fail it."""

from __future__ import annotations

import pytest

from kafka_dr.airflow import parity_dag
from kafka_dr.core.config_load import parse_config

CFG = parse_config(
    {
        "clusters": {"east": {"bootstrap_servers": "e:9092"}, "west": {"bootstrap_servers": "w:9092"}},
        "flows": [{"source": "east", "target": "west"}],
    }
)


def report(verdict: str, what: str = "", **extra) -> dict:
    differences = [{"area": "consumer groups", "severity": verdict, "what": what}] if what else []
    return {"from": "east", "to": "west", "verdict": verdict, "checked": [], "differences": differences, **extra}


@pytest.fixture
def answers(monkeypatch):
    """``answers(r)``: the workflow's parity report is ``r`` (the task's judgement alone is tested)."""
    import kafka_dr.workflows.parity as workflow

    def set_report(r: dict) -> None:
        monkeypatch.setattr(workflow, "parity_report", lambda *a, **k: r)

    monkeypatch.setattr("kafka_dr.airflow.secret_resolver.airflow_resolver", lambda: None)
    return set_report


def test_a_judged_report_is_green(answers):
    answers(report("degraded", "billing's position is 400 s old"))
    assert parity_dag.check_direction(CFG, "east", "west")["verdict"] == "degraded"


def test_not_ready_fails_naming_the_blocking_difference(answers):
    answers(report("not ready", "gd-app has no synced position on west"))
    with pytest.raises(parity_dag.NotReady, match="consumer groups: gd-app has no synced position on west"):
        parity_dag.check_direction(CFG, "east", "west")


def test_a_target_that_does_not_answer_is_no_verdict(answers):
    answers(report("unknown", "west does not answer: its readiness cannot be judged"))
    with pytest.raises(parity_dag.CannotJudge, match="west does not answer"):
        parity_dag.check_direction(CFG, "east", "west")


def test_the_last_recorded_report_stands_while_the_source_is_down(answers):
    answers(report("not ready", "gd-app has no synced position on west", recorded_age_s=30.0))
    assert parity_dag.check_direction(CFG, "east", "west")["recorded_age_s"] == 30.0

"""dr_preflight and run_preflight against the real lab."""

from __future__ import annotations

import uuid

import pytest
import yaml
from test_replication import flow_config

from kafka_dr.core.config_load import load_config
from kafka_dr.kafka import clients
from kafka_dr.kafka.topics import ensure_topic

pytestmark = [pytest.mark.lab, pytest.mark.airflow]


def _config(lab, tmp_path, allow, allow_back=None, exclude_topics=()):
    path = flow_config(lab, tmp_path, allow)
    doc = yaml.safe_load(path.read_text())
    if allow_back is not None:
        (back,) = [f for f in doc["flows"] if f["source"] == "west"]
        back["topics"] = {"allow": allow_back}
    if exclude_topics:
        doc["preflight"] = {"exclude_topics": list(exclude_topics)}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_config(path)


def _dag_state(cfg) -> tuple[str, str]:
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    from kafka_dr.airflow.preflight_dag import build_preflight_dag

    dag = build_preflight_dag(cfg)
    assert dag.dag_id == "dr_preflight" and type(dag.timetable).__name__ == "NullTimetable"  # triggered only
    for t in dag.tasks:
        t.retries = 0
    run = dag.test()
    with create_session() as session:
        (ti,) = (
            session.query(TaskInstance)
            .filter(TaskInstance.dag_id == run.dag_id, TaskInstance.run_id == run.run_id)
            .all()
        )
        return str(run.state), str(ti.state)


def test_symmetric_active_active_passes(lab, lab_config, airflow_db, tmp_path):
    from kafka_dr.airflow.preflight_dag import preflight_or_fail, run_preflight

    uid = uuid.uuid4().hex[:6]
    for c in ("east", "west"):
        ensure_topic(clients.admin(lab_config.cluster(c)), f"pf.{uid}.orders", 3)
    cfg = _config(lab, tmp_path, [rf"pf\.{uid}\..*"])
    assert run_preflight(cfg, None) == []
    assert preflight_or_fail(cfg)["status"] == "ok"
    assert _dag_state(cfg) == ("success", "success")


def test_asymmetric_active_active_is_refused_naming_the_rule(lab, lab_config, airflow_db, tmp_path):
    from airflow.sdk.exceptions import AirflowFailException

    from kafka_dr.airflow.preflight_dag import preflight_or_fail, run_preflight

    uid = uuid.uuid4().hex[:6]
    east = clients.admin(lab_config.cluster("east"))
    west = clients.admin(lab_config.cluster("west"))
    ensure_topic(east, f"pf.{uid}.orders.eu", 2)
    ensure_topic(east, f"pf.{uid}.orders.us", 2)
    ensure_topic(west, f"pf.{uid}.orders.eu", 2)
    ensure_topic(west, f"pf.{uid}.orders.asia", 2)  # only on west: latent asymmetry
    cfg = _config(lab, tmp_path, [rf"pf\.{uid}\.orders\..*"], allow_back=[rf"pf\.{uid}\.orders\.eu"])

    found = [(v.rule, v.flow, v.topic) for v in run_preflight(cfg, None)]
    assert found == [
        ("replicate", "east_to_west", f"pf.{uid}.orders.us"),
        ("filter", "east_to_west", f"pf.{uid}.orders.asia"),
    ]
    with pytest.raises(AirflowFailException) as info:
        preflight_or_fail(cfg)
    msg = str(info.value)
    assert f"[replicate] flow east_to_west, topic pf.{uid}.orders.us:" in msg
    assert f"[filter] flow east_to_west, topic pf.{uid}.orders.asia:" in msg
    assert "2 violation(s)" in msg
    assert _dag_state(cfg) == ("failed", "failed")


def test_config_parity_violation_named_and_exclusions_silence_it(lab, lab_config, airflow_db, tmp_path):
    from kafka_dr.airflow.preflight_dag import run_preflight

    uid = uuid.uuid4().hex[:6]
    topic, other = f"pf.{uid}.ledger", f"pf.{uid}.audit"
    ensure_topic(clients.admin(lab_config.cluster("east")), topic, 3, {"cleanup.policy": "compact"})
    ensure_topic(
        clients.admin(lab_config.cluster("west")), topic, 2
    )  # cleanup.policy=delete (default), fewer partitions
    for c in ("east", "west"):
        ensure_topic(clients.admin(lab_config.cluster(c)), other, 1)
    cfg = _config(lab, tmp_path, [rf"pf\.{uid}\..*"])

    violations = run_preflight(cfg, None)
    assert [(v.rule, v.flow, v.topic) for v in violations] == [("config", "east_to_west", topic)] * 2
    text = "\n".join(str(v) for v in violations)
    assert f"east/{topic} has cleanup.policy=compact but west/{topic} has cleanup.policy=delete" in text
    assert f"east/{topic} has 3 partitions but west/{topic} has 2" in text

    excluded = _config(lab, tmp_path, [rf"pf\.{uid}\..*"], exclude_topics=[rf"pf\.{uid}\.ledger"])
    assert run_preflight(excluded, None) == []
    assert _dag_state(excluded) == ("success", "success")


def test_a_flow_that_selects_no_topic_is_a_warning_in_the_preflight_and_the_job(lab, spark, tmp_path, caplog):
    """topics.allow matches nothing on the source: the flow would copy only heartbeats and stay
    green. The pre-flight passes with a warning naming each such flow; the job succeeds, warning once."""
    import logging

    from kafka_dr.airflow.preflight_dag import preflight_or_fail
    from kafka_dr.spark.job import JobOptions, run_flow

    logging.getLogger().addHandler(caplog.handler)  # importing Airflow reconfigured logging without pytest's handler
    cfg = _config(lab, tmp_path, ["nothing-matches-.*"])
    e2w = (
        "flow east_to_west selects no topics on east (allow ['nothing-matches-.*']): it copies only heartbeats; "
        "check topics.allow, or create the topics"
    )
    with caplog.at_level(logging.WARNING):
        result = preflight_or_fail(cfg)
    assert result["status"] == "ok"
    assert [(w["flow"], w["source"]) for w in result["warnings"]] == [
        ("east_to_west", "east"),
        ("west_to_east", "west"),
    ]
    assert f"; 2 warning(s): {e2w}; flow west_to_east selects no topics on west" in result["summary"]
    assert f"pre-flight warning: {e2w}" in caplog.messages

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        summary = run_flow(
            JobOptions(config=str(tmp_path / "kafka-dr.yaml"), flow="east_to_west", mode="incremental"), spark=spark
        )
    # heartbeats only: copied if any are new, else nothing new (no Spark); the warning either way
    assert summary.stopped_by in ("completed", "nothing new") and summary.restarts == 0
    assert summary.warnings == [e2w] and caplog.messages.count(e2w) == 1

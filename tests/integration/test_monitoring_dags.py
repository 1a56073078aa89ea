"""The replication and heartbeat DAGs run for real (dag.test()) against the lab."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml
from test_dag_runs import _task_states
from test_replication import flow_config

from kafka_checks import check_replica, produce_varied, read_topic
from kafka_dr.airflow.env import connection_env
from kafka_dr.core.config_load import load_config
from kafka_dr.kafka import clients
from kafka_dr.kafka.heartbeats import emit
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.spark.job import JobOptions, run_flow
from receivers import SmtpReceiver, WebhookReceiver

pytestmark = [pytest.mark.lab, pytest.mark.airflow]


@pytest.fixture
def receivers():
    hook, smtp = WebhookReceiver(), SmtpReceiver()
    yield hook, smtp
    hook.close()
    smtp.close()


def test_replication_dag_runs_the_spark_job(lab, lab_config, airflow_db, tmp_path, topic_name, monkeypatch):
    """The incremental flow's DAG copies through spark-submit; run again with nothing new, it
    submits nothing: Java is out of reach then, and the run still succeeds."""
    from kafka_dr.airflow.replication_dag import build_replication_dag

    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    ensure_topic(clients.admin(east), topic_name, partitions=2)
    sent = produce_varied(east, topic_name, "east", 100, 2)
    path = flow_config(lab, tmp_path, [topic_name], mode="incremental")
    doc = yaml.safe_load(path.read_text())
    doc["internal_prefix"] = f"_kafka_dr_{topic_name}"  # heartbeats of its own: none arrive meanwhile
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    cfg = load_config(path)
    os.environ.update(connection_env(cfg))  # the Spark connection (local[2]) the operator submits to
    dag = build_replication_dag(cfg, cfg.flows[0], str(path))
    run = dag.test()
    assert str(run.state) == "success", _task_states(run)
    assert _task_states(run) == {"preflight": "success", "replicate": "success"}
    check_replica("west", read_topic(west, topic_name), sent, source_topic=topic_name)

    no_java = tmp_path / "no-java"
    no_java.mkdir()
    monkeypatch.setenv("JAVA_HOME", str(no_java))  # a spark-submit now could not start its JVM
    monkeypatch.setenv("PATH", ":".join(d for d in os.environ["PATH"].split(":") if not Path(d, "java").exists()))
    again = dag.test()
    assert _task_states(again) == {"preflight": "success", "replicate": "success"}
    check_replica("west", read_topic(west, topic_name), sent, source_topic=topic_name)


def _heartbeat_config(lab, tmp_path, name: str, **top) -> object:
    doc = yaml.safe_load(lab.config_file.read_text())
    for f in doc["flows"]:
        f["topics"] = {"allow": ["no-data-topics-in-this-test"]}  # heartbeats still flow
    doc.update(top)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_new_deployments_first_heartbeats_are_waited_for_then_missed(lab, tmp_path):
    """No heartbeat has crossed yet (no flow runs): while each source's first heartbeat is
    younger than the threshold the flows are waiting, and the check passes; once it is older,
    each flow is named as missing."""
    import uuid

    from kafka_dr.airflow.heartbeat_dag import measure_flows

    prefix = f"_kdr_hb_{uuid.uuid4().hex[:6]}"  # heartbeat topics of their own: none emitted before
    threshold = 12
    path = _heartbeat_config(
        lab, tmp_path, "new.yaml", internal_prefix=prefix, thresholds={"heartbeat_max_age_seconds": threshold}
    )
    cfg = load_config(path)
    first = time.monotonic()
    for name in cfg.clusters:
        emit(cfg, name)
    figures = measure_flows(cfg)
    assert {n: f["status"] for n, f in figures.items()} == {"east_to_west": "waiting", "west_to_east": "waiting"}
    assert all(0 <= f["age_seconds"] <= threshold and f["newest_emitted_ms"] is None for f in figures.values())
    time.sleep(max(0.0, first + threshold + 1 - time.monotonic()))
    with pytest.raises(RuntimeError) as missed:
        measure_flows(cfg)
    assert "east_to_west (east -> west): no heartbeat from east has reached west" in str(missed.value)
    assert "west_to_east (west -> east): no heartbeat from west has reached east" in str(missed.value)


def test_heartbeats_measure_latency_and_alert_when_a_flow_stops(lab, airflow_db, spark, tmp_path, receivers):
    from kafka_dr.airflow.heartbeat_dag import build_heartbeat_dag, measure_flows

    hook, smtp = receivers
    alerts = {
        "webhook": {"url": hook.url},
        "email": {"smtp_host": "127.0.0.1", "smtp_port": smtp.port, "to": ["oncall@example.com"]},
    }
    path = _heartbeat_config(lab, tmp_path, "hb.yaml", alerts=alerts, thresholds={"heartbeat_max_age_seconds": 60})
    cfg = load_config(path)

    # heartbeats emitted, replicated both ways by the flows, then judged
    for name in cfg.clusters:
        emit(cfg, name)
    for flow in cfg.flows:
        run_flow(JobOptions(config=str(path), flow=flow.name, mode="incremental"), spark=spark)
    figures = measure_flows(cfg)
    assert set(figures) == {"east_to_west", "west_to_east"}
    for name, f in figures.items():
        assert f["status"] == "ok" and 0 <= f["age_seconds"] < 60 and f["loops"] == 0, f
        # heartbeats arrive, yet the flows copy no data: warned of, not failed
        (warning,) = f["warnings"]
        assert warning.startswith(
            f"flow {name} selects no topics on {name.split('_')[0]} (allow ['no-data-topics-in-this-test'])"
        )
    run = build_heartbeat_dag(cfg).test()
    assert str(run.state) == "success", _task_states(run)
    assert hook.received == [] and smtp.messages == []

    # the flows stop (nothing replicates any more): with a 2 s threshold the run fails and alerts
    strict = load_config(
        _heartbeat_config(lab, tmp_path, "hb-strict.yaml", alerts=alerts, thresholds={"heartbeat_max_age_seconds": 2})
    )
    time.sleep(3)
    dag = build_heartbeat_dag(strict)
    for t in dag.tasks:
        t.retries = 0
    run = dag.test()
    assert str(run.state) == "failed"
    assert _task_states(run)["measure_latency"] == "failed"
    assert len(hook.received) == 1 and hook.received[0]["task_id"] == "measure_latency"
    assert "east_to_west (east -> west): newest heartbeat is" in hook.received[0]["error"]
    assert "threshold 2s" in hook.received[0]["error"]
    assert len(smtp.messages) == 1 and smtp.messages[0]["to"] == ["oncall@example.com"]
    assert "dr_heartbeat.measure_latency failed" in smtp.messages[0]["data"]
    assert "west_to_east" in smtp.messages[0]["data"]

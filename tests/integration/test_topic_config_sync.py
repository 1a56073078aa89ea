"""dr_topic_config_sync against the real lab, run with dag.test().

Every test narrows the flows to its own topics (``flow_config``), so it never sees another
test's topics; topics that the flows do not select must come out untouched.
"""

from __future__ import annotations

import json
import uuid

import pytest
import yaml
from test_replication import flow_config

from kafka_dr.core.config_load import load_config
from kafka_dr.kafka import clients
from kafka_dr.kafka.topic_admin import describe_topic_configs, topic_partitions
from kafka_dr.kafka.topics import ensure_topic

pytestmark = [pytest.mark.lab, pytest.mark.airflow]


def _config(lab, tmp_path, allow, exclude=(), one_way=False, **flow_keys):
    path = flow_config(lab, tmp_path, allow, **flow_keys)
    doc = yaml.safe_load(path.read_text())
    if exclude:
        doc["topic_config"] = {"exclude": list(exclude)}
    if one_way:
        doc["flows"] = [f for f in doc["flows"] if f["source"] == "east"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_config(path)


def _run(cfg):
    """Run the DAG for real; return (state, {task_id: state}, {task_id: XCom report})."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    from kafka_dr.airflow.topic_config_sync_dag import build_topic_config_sync_dag

    dag = build_topic_config_sync_dag(cfg)
    for t in dag.tasks:
        t.retries = 0
    run = dag.test()
    with create_session() as session:
        tis = (
            session.query(TaskInstance)
            .filter(TaskInstance.dag_id == run.dag_id, TaskInstance.run_id == run.run_id)
            .all()
        )
        xcoms = (
            session.query(XComModel)
            .filter(XComModel.dag_id == run.dag_id, XComModel.run_id == run.run_id, XComModel.key == "return_value")
            .all()
        )
        states = {ti.task_id: str(ti.state) for ti in tis}
        reports = {x.task_id: x.value if isinstance(x.value, dict) else json.loads(x.value) for x in xcoms}
    return str(run.state), states, reports


def _topic(admin, name):
    """(partitions, explicit configs) of a topic, or None when it does not exist."""
    parts = topic_partitions(admin)
    if name not in parts:
        return None
    return parts[name], describe_topic_configs(admin, [name])[name]


def _alter(admin, topic, set_=None, delete=()):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in (set_ or {}).items()]
    entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in delete]
    for fut in admin.incremental_alter_configs([ConfigResource("topic", topic, incremental_configs=entries)]).values():
        fut.result(30)


def _add_partitions(admin, topic, total):
    from confluent_kafka.admin import NewPartitions

    for fut in admin.create_partitions([NewPartitions(topic, total)]).values():
        fut.result(30)


def _entry(report, source_topic):
    (entry,) = [t for t in report["topics"] if t["source_topic"] == source_topic]
    return entry


def test_create_then_follow_retention_and_partitions_but_not_excluded(lab, lab_config, airflow_db, tmp_path):
    uid = uuid.uuid4().hex[:6]
    topic, outside = f"sync.{uid}.orders", f"sync.{uid}.outside"
    east, west = clients.admin(lab_config.cluster("east")), clients.admin(lab_config.cluster("west"))
    ensure_topic(east, topic, 3, {"retention.ms": "86400000", "cleanup.policy": "compact,delete"})
    # outside the flows, on both clusters, with different settings: must stay exactly so
    ensure_topic(east, outside, 4, {"retention.ms": "1000"})
    ensure_topic(west, outside, 2, {"retention.ms": "2000"})
    cfg = _config(lab, tmp_path, [rf"sync\.{uid}\.orders"], exclude=[r"segment\.bytes"])

    state, states, reports = _run(cfg)
    assert state == "success", states
    assert states == {"sync_east_to_west": "success", "sync_west_to_east": "success"}
    assert _topic(west, topic) == (3, {"retention.ms": "86400000", "cleanup.policy": "compact,delete"})
    created = _entry(reports["sync_east_to_west"], topic)["created"]
    assert created == {"partitions": 3, "configs": {"cleanup.policy": "compact,delete", "retention.ms": "86400000"}}

    # east changes: retention, partitions, an excluded config (built-in) and a user-excluded one;
    # west has a config east never had: it is deleted there
    _alter(east, topic, {"retention.ms": "3600000", "min.insync.replicas": "1", "segment.bytes": "10485760"})
    _add_partitions(east, topic, 5)
    _alter(west, topic, {"max.message.bytes": "2000000"})

    state, states, reports = _run(cfg)
    assert state == "success", states
    assert _topic(west, topic) == (5, {"retention.ms": "3600000", "cleanup.policy": "compact,delete"})
    e = _entry(reports["sync_east_to_west"], topic)
    assert e["partitions_raised"] == {"from": 3, "to": 5}
    assert e["configs_set"] == {"retention.ms": {"from": "86400000", "to": "3600000"}}
    assert e["configs_deleted"] == {"max.message.bytes": {"from": "2000000"}}
    assert e["excluded_ignored"] == {
        "min.insync.replicas": {"source": "1", "target": None},
        "segment.bytes": {"source": "10485760", "target": None},
    }
    # west -> east: east owns the topic's configs; nothing written back into east
    assert _topic(east, topic)[1] == {
        "retention.ms": "3600000",
        "cleanup.policy": "compact,delete",
        "min.insync.replicas": "1",
        "segment.bytes": "10485760",
    }

    # the topics outside the flows: untouched on both sides
    assert _topic(east, outside) == (4, {"retention.ms": "1000"})
    assert _topic(west, outside) == (2, {"retention.ms": "2000"})

    # idempotent: a third run changes nothing and says so
    state, _, reports = _run(cfg)
    assert state == "success"
    r = reports["sync_east_to_west"]
    assert (
        r["summary"]["created"]
        == r["summary"]["partitions_raised"]
        == r["summary"]["configs_set"]
        == r["summary"]["configs_deleted"]
        == 0
    )
    assert r["summary"]["excluded_ignored"] == 2
    assert _topic(west, topic) == (5, {"retention.ms": "3600000", "cleanup.policy": "compact,delete"})


def test_target_is_never_lowered(lab, lab_config, airflow_db, tmp_path):
    uid = uuid.uuid4().hex[:6]
    topic = f"sync.{uid}.wide"
    east, west = clients.admin(lab_config.cluster("east")), clients.admin(lab_config.cluster("west"))
    ensure_topic(east, topic, 2, {"retention.ms": "7200000"})
    ensure_topic(west, topic, 4)
    cfg = _config(lab, tmp_path, [rf"sync\.{uid}\.wide"], one_way=True)

    state, states, reports = _run(cfg)
    assert state == "success", states
    assert _topic(west, topic) == (4, {"retention.ms": "7200000"})
    assert _topic(east, topic) == (2, {"retention.ms": "7200000"})
    e = _entry(reports["sync_east_to_west"], topic)
    assert e["target_larger"] == {"source": 2, "target": 4}
    assert "partitions_raised" not in e


def test_prefix_flows_sync_remote_topics_and_leave_local_ones(lab, lab_config, airflow_db, tmp_path):
    uid = uuid.uuid4().hex[:6]
    topic = f"sync.{uid}.pre"
    east, west = clients.admin(lab_config.cluster("east")), clients.admin(lab_config.cluster("west"))
    ensure_topic(east, topic, 2, {"retention.ms": "600000"})
    ensure_topic(west, topic, 1, {"retention.ms": "900000"})  # west's own topic of the same name
    cfg = _config(lab, tmp_path, [rf"(east\.|west\.)?sync\.{uid}\.pre"], loop_policy="prefix")

    state, states, _ = _run(cfg)
    assert state == "success", states
    assert _topic(west, f"east.{topic}") == (2, {"retention.ms": "600000"})
    assert _topic(east, f"west.{topic}") == (1, {"retention.ms": "900000"})
    assert _topic(west, topic) == (1, {"retention.ms": "900000"})  # local topics untouched
    assert _topic(east, topic) == (2, {"retention.ms": "600000"})
    names = set(topic_partitions(east)) | set(topic_partitions(west))
    assert not {f"east.west.{topic}", f"west.east.{topic}"} & names

"""``dr_schema_mirror`` against the real lab: the registry's topic, in the registry's own
record format, copied east -> west byte for byte and in order, verified, renamed.

Each test uses its own registry topic and internal prefix (so its progress group and
transactional id), written into a config derived from the lab's.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
import yaml

from kafka_dr.core.config_load import load_config
from kafka_dr.core.schema_registry import rebuild_state
from kafka_dr.kafka import clients
from kafka_dr.kafka.reading import read_partitions
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.kafka.writing import produce_all

pytestmark = [pytest.mark.lab]

ORDER_V1 = '{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"}]}'
ORDER_V2 = (
    '{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},'
    '{"name":"note","type":["null","string"],"default":null}]}'
)
COMMON_PROTO = 'syntax = "proto3";\npackage shop;\nmessage Money { int64 cents = 1; string currency = 2; }\n'
PAY_PROTO = 'syntax = "proto3";\npackage shop;\nimport "common.proto";\nmessage Payment { Money amount = 1; }\n'


def skey(subject: str, version: int) -> bytes:
    return json.dumps(
        {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}, separators=(",", ":")
    ).encode()


def sval(subject: str, version: int, id_: int, schema: str, deleted: bool = False, **extra) -> bytes:
    d = {"subject": subject, "version": version, "id": id_, "schema": schema, **extra, "deleted": deleted}
    return json.dumps(d, separators=(",", ":")).encode()


def ckey(keytype: str, subject: str | None = None) -> bytes:
    d = {"keytype": keytype, **({"subject": subject} if subject else {}), "magic": 0}
    return json.dumps(d, separators=(",", ":")).encode()


def registry_history(t0: int) -> list[tuple]:
    """What a registry writes for: global config, three subjects over several versions, a
    Protobuf schema with a reference, a soft delete, a hard delete, a subject deleted and
    cleared, a mode change. Rows for produce_all: (key, value, headers, timestamp, partition)."""
    rows = [
        (ckey("CONFIG"), b'{"compatibilityLevel":"BACKWARD"}'),
        (ckey("NOOP"), None),
        (skey("orders-value", 1), sval("orders-value", 1, 1, ORDER_V1)),
        (skey("orders-value", 2), sval("orders-value", 2, 2, ORDER_V2)),
        (skey("common", 1), sval("common", 1, 3, COMMON_PROTO, schemaType="PROTOBUF")),
        (
            skey("payments-value", 1),
            sval(
                "payments-value",
                1,
                4,
                PAY_PROTO,
                schemaType="PROTOBUF",
                references=[{"name": "common.proto", "subject": "common", "version": 1}],
            ),
        ),
        (ckey("CONFIG", "orders-value"), b'{"compatibilityLevel":"FULL_TRANSITIVE"}'),
        (skey("legacy-value", 1), sval("legacy-value", 1, 5, '"string"')),
        (skey("legacy-value", 2), sval("legacy-value", 2, 6, '"bytes"')),
        (skey("legacy-value", 1), sval("legacy-value", 1, 5, '"string"', deleted=True)),  # soft delete of v1
        (skey("legacy-value", 1), None),  # ...then its hard delete (tombstone)
        (skey("tmp-value", 1), sval("tmp-value", 1, 1, ORDER_V1)),  # same schema, same id as orders v1
        (ckey("DELETE_SUBJECT", "tmp-value"), b'{"subject":"tmp-value","version":1}'),
        (skey("scratch-value", 1), sval("scratch-value", 1, 7, '"int"')),
        (ckey("DELETE_SUBJECT", "scratch-value"), b'{"subject":"scratch-value","version":1}'),
        (ckey("CLEAR_SUBJECT", "scratch-value"), b'{"subject":"scratch-value"}'),
        (ckey("MODE"), b'{"mode":"READWRITE"}'),
    ]
    # timestamps the mirror must keep; one record carries headers (a registry's do not, a copy must anyway)
    return [(k, v, [("trace", b"\x00\x01\xff")] if i == 3 else None, t0 + i * 1000, 0) for i, (k, v) in enumerate(rows)]


@pytest.fixture
def setup(lab, tmp_path):
    """A config whose east and west registries use a topic of this test's own."""
    uid = uuid.uuid4().hex[:8]

    def make(template: str = "{subject}", prefix: str | None = None, west_topic: str | None = None) -> tuple:
        doc = yaml.safe_load(Path(lab.config_file).read_text())
        east_topic = f"_schemas.{uid}"
        doc["clusters"]["east"]["schema_registry"] = {"topic": east_topic}
        doc["clusters"]["west"]["schema_registry"] = {"topic": west_topic or east_topic}
        doc["schema_mirror"] = {"primary": "east", "targets": ["west"], "subject_template": template}
        doc["internal_prefix"] = prefix or f"_kafka_dr_t{uid}"
        path = tmp_path / f"kafka-dr-{uuid.uuid4().hex[:6]}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        cfg = load_config(path)
        return cfg, east_topic, west_topic or east_topic

    return make


def write(cluster, topic: str, rows: list[tuple]) -> None:
    ensure_topic(clients.admin(cluster), topic, 1, {"cleanup.policy": "compact"})
    produce_all(clients.producer(cluster), topic, rows)


def read(cluster, topic: str) -> list[tuple]:
    c = clients.consumer(cluster, f"test-read-{uuid.uuid4().hex[:6]}")
    try:
        return [(r.key, r.value, r.headers, r.timestamp_ms) for r in read_partitions(c, topic, [0], timeout=60)]
    finally:
        c.close()


def run_dag(cfg, retries: int | None = None):
    from kafka_dr.airflow.schema_mirror_dag import build_schema_mirror_dag

    dag = build_schema_mirror_dag(cfg)
    if retries is not None:
        for t in dag.tasks:
            t.retries = retries
    return dag.test()


def task_states(run) -> dict[str, str]:
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        tis = (
            session.query(TaskInstance)
            .filter(TaskInstance.dag_id == run.dag_id, TaskInstance.run_id == run.run_id)
            .all()
        )
        return {ti.task_id: str(ti.state) for ti in tis}


def test_mirror_is_byte_exact_in_order_and_copies_nothing_twice(airflow_db, setup):
    from kafka_dr.kafka.schema_mirror import mirror, verify

    cfg, east_topic, west_topic = setup()
    east, west = cfg.cluster("east"), cfg.cluster("west")
    t0 = int(time.time() * 1000) - 86_400_000
    history = registry_history(t0)
    write(east, east_topic, history)

    run = run_dag(cfg)
    assert str(run.state) == "success"
    assert task_states(run) == {"mirror_west": "success", "verify_west": "success"}
    on_east, on_west = read(east, east_topic), read(west, west_topic)
    assert len(on_east) == len(history) == 17
    assert on_west == on_east  # key, value (tombstones too), headers, timestamp; same order
    assert on_west[3][2] == (("trace", b"\x00\x01\xff"),) and on_west[0][3] == t0

    # the target topic was made like a registry's own: compacted, one partition
    from confluent_kafka.admin import ConfigResource

    admin = clients.admin(west)
    futures = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, west_topic)])
    conf = list(futures.values())[0].result(timeout=30)
    assert conf["cleanup.policy"].value == "compact"
    assert len(admin.list_topics(west_topic, timeout=10).topics[west_topic].partitions) == 1

    # the registry state a west registry would build: live, soft-deleted and hard-deleted as on east
    st = rebuild_state((i, k, v) for i, (k, v, _, _) in enumerate(on_west))
    assert sorted(st.subjects) == ["common", "legacy-value", "orders-value", "payments-value", "tmp-value"]
    assert {v: s.id for v, s in st.subjects["orders-value"].items()} == {1: 1, 2: 2}
    assert list(st.subjects["legacy-value"]) == [2]
    assert st.subjects["tmp-value"][1].deleted and st.subjects["tmp-value"][1].id == 1
    assert "scratch-value" not in st.subjects
    assert st.configs == {
        None: {"compatibilityLevel": "BACKWARD"},
        "orders-value": {"compatibilityLevel": "FULL_TRANSITIVE"},
    }
    assert verify(cfg, "west").differences == []

    # again with nothing new: nothing copied; then two more registrations: only those copied
    again = mirror(cfg, "west")
    assert (again.copied, again.start, again.end) == (0, 17, 17)
    more = [
        (skey("orders-value", 3), sval("orders-value", 3, 8, ORDER_V2.replace("note", "memo")), None, t0 + 99_000, 0),
        (skey("orders-value", 2), sval("orders-value", 2, 2, ORDER_V2, deleted=True), None, t0 + 99_001, 0),
    ]
    write(east, east_topic, more)
    run = run_dag(cfg)
    assert str(run.state) == "success"
    on_east, on_west = read(east, east_topic), read(west, west_topic)
    assert len(on_west) == 19 and on_west == on_east
    assert verify(cfg, "west").differences == []


def test_a_crashed_transaction_is_fenced_and_nothing_duplicated(setup):
    """A mirror run that died mid-transaction (a zombie holding the same transactional.id):
    the next run fences it, its records never become visible, every record is there once."""
    from confluent_kafka import Producer

    from kafka_dr.kafka.schema_mirror import mirror, verify

    cfg, east_topic, west_topic = setup()
    east, west = cfg.cluster("east"), cfg.cluster("west")
    write(east, east_topic, registry_history(int(time.time() * 1000)))
    assert mirror(cfg, "west").copied == 17

    write(east, east_topic, [(skey("late-value", 1), sval("late-value", 1, 9, '"int"'), None, None, 0)])
    zombie = Producer(
        clients.client_config(west, **{"transactional.id": cfg.names.schema_mirror_group("east", "west")})
    )
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(west_topic, key=skey("late-value", 1), value=sval("late-value", 1, 9, '"int"'), partition=0)
    zombie.flush(30)  # written, never committed: the "crash"

    result = mirror(cfg, "west")
    assert (result.copied, result.start) == (1, 17)
    on_west = read(west, west_topic)  # read_committed
    assert on_west == read(east, east_topic) and len(on_west) == 18
    assert verify(cfg, "west").differences == []
    from confluent_kafka import KafkaException

    with pytest.raises(KafkaException):  # the zombie is fenced
        zombie.commit_transaction(30)


def test_injected_mismatch_fails_verify_naming_subject_and_version(airflow_db, setup):
    from kafka_dr.kafka.schema_mirror import verify

    cfg, east_topic, west_topic = setup()
    east, west = cfg.cluster("east"), cfg.cluster("west")
    write(east, east_topic, registry_history(int(time.time() * 1000)))
    assert str(run_dag(cfg).state) == "success"

    # someone registers on west directly: orders-value v2 gets another id, a stray subject appears
    write(
        west,
        west_topic,
        [
            (skey("orders-value", 2), sval("orders-value", 2, 42, ORDER_V2), None, None, 0),
            (skey("stray-value", 1), sval("stray-value", 1, 43, '"int"'), None, None, 0),
            (ckey("CONFIG"), b'{"compatibilityLevel":"NONE"}', None, None, 0),
        ],
    )
    assert verify(cfg, "west").differences == [
        "subject 'orders-value' version 2: id 2 on east, 42 on west",
        "subject 'stray-value': on west (version 1), missing on east",
        'global config: {"compatibilityLevel":"BACKWARD"} on east, {"compatibilityLevel":"NONE"} on west',
    ]
    run = run_dag(cfg, retries=0)
    assert str(run.state) == "failed"
    assert task_states(run) == {"mirror_west": "success", "verify_west": "failed"}


def test_verify_task_raises_listing_every_difference(setup):
    from kafka_dr.airflow.schema_mirror_dag import SchemaRegistryMismatch, mirror_schemas, verify_schemas

    cfg, east_topic, west_topic = setup()
    write(cfg.cluster("east"), east_topic, registry_history(int(time.time() * 1000)))
    assert mirror_schemas(cfg, "west")["copied"] == 17
    assert verify_schemas(cfg, "west")["differences"] == []
    write(cfg.cluster("west"), west_topic, [(skey("common", 1), None, None, None, 0)])
    with pytest.raises(SchemaRegistryMismatch) as e:
        verify_schemas(cfg, "west")
    assert str(e.value).endswith("1 difference(s):\n  - subject 'common': on east (version 1), missing on west")
    assert "west/_schemas." in str(e.value) and "read up to offset 17 (the mirror's progress)" in str(e.value)


def test_subject_template_renames_subjects_and_keeps_ids(airflow_db, setup):
    cfg, east_topic, west_topic = setup(template="dr-{subject}", west_topic=f"_schemas.renamed.{uuid.uuid4().hex[:6]}")
    east, west = cfg.cluster("east"), cfg.cluster("west")
    history = registry_history(int(time.time() * 1000))
    write(east, east_topic, history)

    run = run_dag(cfg)
    assert str(run.state) == "success"
    assert task_states(run) == {"mirror_west": "success", "verify_west": "success"}
    on_east, on_west = read(east, east_topic), read(west, west_topic)
    assert len(on_west) == len(on_east) == 17
    east_state = rebuild_state((i, k, v) for i, (k, v, _, _) in enumerate(on_east))
    west_state = rebuild_state((i, k, v) for i, (k, v, _, _) in enumerate(on_west))
    assert sorted(west_state.subjects) == sorted(f"dr-{s}" for s in east_state.subjects)
    for subject, versions in east_state.subjects.items():
        renamed = west_state.subjects[f"dr-{subject}"]
        assert {v: (s.id, s.schema, s.deleted) for v, s in versions.items()} == {
            v: (s.id, s.schema, s.deleted) for v, s in renamed.items()
        }
    assert west_state.subjects["dr-payments-value"][1].references[0].subject == "dr-common"
    assert west_state.configs == {
        None: {"compatibilityLevel": "BACKWARD"},
        "dr-orders-value": {"compatibilityLevel": "FULL_TRANSITIVE"},
    }
    # record by record: only the subject changed; headers, timestamps, tombstones kept
    for (ek, ev, eh, ets), (wk, wv, wh, wts) in zip(on_east, on_west):
        assert (eh, ets) == (wh, wts)
        assert (ev is None) == (wv is None)
        kd, wkd = json.loads(ek), json.loads(wk)
        if "subject" in kd:
            assert wkd.pop("subject") == "dr-" + kd.pop("subject")
        assert kd == wkd
    assert on_west[0][:2] == on_east[0][:2]  # the global config has no subject: same bytes


def test_lost_progress_is_refused(setup):
    from kafka_dr.kafka.schema_mirror import SchemaProgressLost, mirror

    cfg, east_topic, west_topic = setup()
    write(cfg.cluster("east"), east_topic, registry_history(int(time.time() * 1000)))
    assert mirror(cfg, "west").copied == 17
    other, _, _ = setup(prefix=f"_kafka_dr_other{uuid.uuid4().hex[:6]}")  # same topics, another progress group
    with pytest.raises(SchemaProgressLost) as e:
        mirror(other, "west")
    assert "already holds 17 record(s)" in str(e.value) and other.internal_prefix in str(e.value)
    assert len(read(cfg.cluster("west"), west_topic)) == 17


def test_dag_shape(airflow_db, lab_config):
    """The lab's config mirrors east -> west; without a schema_mirror section the DAG still
    exists with one task that runs green."""
    import dataclasses

    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag()
    assert bag.import_errors == {}
    dag = bag.dags["dr_schema_mirror"]
    assert {t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks} == {
        "mirror_west": ["verify_west"],
        "verify_west": [],
    }
    assert dag.max_active_runs == 1 and "kafka-dr" in dag.tags

    run = run_dag(dataclasses.replace(lab_config, schema_mirror=None))
    assert str(run.state) == "success"
    assert task_states(run) == {"not_configured": "success"}

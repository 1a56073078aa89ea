"""The product over SASL_SSL (SCRAM-SHA-512) with generated certificates:
replication (spark-submit, and the replication DAG), heartbeats, topic-config sync and a
failover that moves a consumer group, with credentials from environment variables and from Airflow connections;
a wrong password is named as an authentication failure without the secret; and no log,
XCom value or generated file holds a password.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from test_failover import _consume, _identity
from test_replication import own_internal_prefix

from kafka_checks import check_replica, produce_varied, read_topic
from kafka_dr.core.config_load import load_config
from kafka_dr.kafka import clients
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.lab.drill import Job
from kafka_dr.lab.secure import KEYSTORE_PASSWORD_ENV
from kafka_dr.lab.topology import LAB_PASSWORD_ENV, LAB_USER_ENV

pytestmark = [pytest.mark.lab]

CONN = "kafka_dr_secure"


def _narrowed(lab, tmp_path: Path, topic: str, name: str = "kafka-dr.yaml", via_airflow: bool = False) -> Path:
    doc = yaml.safe_load(lab.config_file.read_text())
    for f in doc["flows"]:
        f["topics"] = {"allow": [topic]}
        f["mode"] = "incremental"
    # every run on Spark, however small its backlog: Spark's executors must get the credentials
    doc.setdefault("spark", {})["driver_copy_max_records"] = 0
    if via_airflow:  # credentials from an Airflow connection instead of the environment
        for c in doc["clusters"].values():
            del c["client"]["sasl.username"], c["client"]["sasl.password"]
            c["connection"] = CONN
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_plaintext_clients_are_refused(secure_lab):
    lab, _ = secure_lab
    doc = yaml.safe_load(lab.config_file.read_text())
    assert doc["clusters"]["east"]["client"]["security.protocol"] == "SASL_SSL"
    assert doc["clusters"]["east"]["client"]["sasl.password"] == f"${{env:{LAB_PASSWORD_ENV}}}"
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    plain = AdminClient({"bootstrap.servers": doc["clusters"]["east"]["bootstrap_servers"], "log_level": 0})
    with pytest.raises(KafkaException):
        plain.list_topics(timeout=5)


def test_replication_heartbeats_and_topic_config_sync_over_sasl_ssl(secure_lab, tmp_path, topic_name):
    from kafka_dr.kafka.heartbeats import emit, measure
    from kafka_dr.kafka.topic_sync import sync_flow

    lab, _ = secure_lab
    path = _narrowed(lab, tmp_path, topic_name)
    cfg = load_config(path)
    east, west = cfg.cluster("east"), cfg.cluster("west")
    ensure_topic(clients.admin(east), topic_name, partitions=2, config={"retention.ms": "86400000"})
    sent = produce_varied(east, topic_name, "east", 200, 2)
    for name in cfg.clusters:
        emit(cfg, name)

    report = sync_flow(cfg, cfg.flows[0])  # topic-config sync creates the target topic with its config
    assert report["summary"]["created"] == 1, report
    job = Job(path, tmp_path / "spark.log", mode="incremental")
    assert job.proc.wait(600) == 0, (tmp_path / "spark.log").read_text()[-3000:]
    check_replica("west", read_topic(west, topic_name), sent, source_topic=topic_name)

    latency = measure(cfg, cfg.flows[0])  # east -> west ran; west -> east did not (no heartbeat there yet)
    assert latency.status != "missing" and latency.age_seconds >= 0 and latency.loops == 0, (
        latency
    )  # ok, or late on a slow machine


def test_failover_over_sasl_ssl_moves_the_group_to_the_next_unread_record(secure_lab, tmp_path, topic_name):
    """A real failover (east still up, so forced) over SASL_SSL with kafka-dr's own principal:
    the group that read part of the topic on east resumes on west at exactly the next unread
    record. The failover's state goes under an internal prefix of its own, granted to kafka-dr's
    principal as ``kafka-dr acls`` prints it, so the module's other tests keep replicating."""
    from kafka_dr.core.product_acls import product_acls
    from kafka_dr.kafka.state_store import read_state
    from kafka_dr.kafka.topic_sync import sync_flow
    from kafka_dr.lab.secure import LAB_USER, grant
    from kafka_dr.workflows.failover import FailoverRun, run_failover
    from kafka_dr.workflows.offset_sync import sync_group_offsets

    lab, _ = secure_lab
    path = _narrowed(lab, tmp_path, topic_name)
    own_internal_prefix(path, topic_name)
    cfg = load_config(path)
    for c in lab.clusters():
        grant(c.name, c.direct, product_acls(cfg, f"User:{LAB_USER}", c.name))
    east, west = cfg.cluster("east"), cfg.cluster("west")
    ensure_topic(clients.admin(east), topic_name, partitions=2)
    sent = produce_varied(east, topic_name, "east", 120, 2)
    sync_flow(cfg, cfg.flows[0])
    group = f"app-{topic_name}"
    read_on_east = _consume(east, group, topic_name, 50)
    assert len(read_on_east) == 50
    job = Job(path, tmp_path / "spark.log", mode="incremental")
    assert job.proc.wait(600) == 0, (tmp_path / "spark.log").read_text()[-3000:]
    synced = sync_group_offsets(cfg, cfg.flows[0], groups=[group])
    assert synced and all(r["status"] == "exact" for r in synced), synced

    summary = run_failover(FailoverRun(cfg, "east", "west", group, dry_run=False, force=True))
    assert summary["dry_run"] is False, summary
    state = read_state(cfg)
    assert (state.active_cluster, state.failed_clusters) == ("west", ("east",)), state

    resumed = [_identity(m, "west") for m in _consume(west, group, topic_name, None)]
    read_before = {("east", m.partition(), m.offset()) for m in read_on_east}
    unread = {("east", s.partition, s.offset) for s in sent} - read_before
    assert set(resumed) == unread and len(resumed) == len(unread), "skipped or re-read records after failover"
    for p in (0, 1):
        first = next(o for (_, pp, o) in resumed if pp == p)
        assert first == min(o for (_, pp, o) in unread if pp == p), f"partition {p} resumed at origin offset {first}"


def test_wrong_password_says_authentication_failed_and_prints_no_secret(secure_lab, tmp_path, topic_name, monkeypatch):
    lab, secrets = secure_lab
    wrong = "Wr0ng-" + secrets[LAB_PASSWORD_ENV][::-1]
    monkeypatch.setenv(LAB_PASSWORD_ENV, wrong)
    path = _narrowed(lab, tmp_path, topic_name)
    with pytest.raises(clients.AuthenticationFailed) as info:
        clients.cluster_id(load_config(path).cluster("west"), timeout=5)
    assert "cluster 'west'" in str(info.value) and "authentication failed" in str(info.value)

    # the job (a spark-submit started with the wrong password) stops at once: no restart loop
    log = tmp_path / "spark.log"
    job = Job(path, log, mode="incremental", max_restarts=3)
    assert job.proc.wait(600) != 0
    text = log.read_text(errors="replace")
    assert "flow east_to_west: creating _kafka_dr.metrics on target: cluster 'west' (127.0.0.1:" in text, text[-3000:]
    assert "authentication failed" in text
    assert "restart 1/3" not in text
    for secret in (wrong, secrets[LAB_PASSWORD_ENV], secrets[KEYSTORE_PASSWORD_ENV]):
        assert secret not in text and secret not in str(info.value)


def test_dags_with_credentials_from_airflow_connections_leave_no_secret_anywhere(
    secure_lab, airflow_db, tmp_path, topic_name, monkeypatch
):
    """The replication and heartbeat DAGs run with the SCRAM credentials taken from an Airflow
    connection (the environment holds none); then every log, XCom value and generated file of
    the lab, the Airflow home and this test is scanned for the secrets."""
    from test_dag_runs import _task_states

    from kafka_dr.airflow.env import connection_env
    from kafka_dr.airflow.heartbeat_dag import build_heartbeat_dag
    from kafka_dr.airflow.replication_dag import build_replication_dag

    lab, secrets = secure_lab
    password = secrets[LAB_PASSWORD_ENV]
    env_path = _narrowed(lab, tmp_path, topic_name, "env.yaml")
    path = _narrowed(lab, tmp_path, topic_name, "airflow.yaml", via_airflow=True)
    cfg = load_config(path)
    ensure_topic(clients.admin(load_config(env_path).cluster("east")), topic_name, partitions=2)
    sent = produce_varied(load_config(env_path).cluster("east"), topic_name, "east", 100, 2)

    monkeypatch.delenv(LAB_PASSWORD_ENV)
    monkeypatch.delenv(LAB_USER_ENV)
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{CONN.upper()}",
        json.dumps({"conn_type": "generic", "login": secrets[LAB_USER_ENV], "password": password}),
    )
    for k, v in connection_env(cfg).items():
        monkeypatch.setenv(k, v)

    run = build_replication_dag(cfg, cfg.flows[0], str(path)).test()
    assert str(run.state) == "success", _task_states(run)
    dag = build_heartbeat_dag(cfg)
    for t in dag.tasks:
        t.retries = 0  # measure_latency may fail: west -> east did not run; emitting must not
    states = _task_states(dag.test())
    assert states["emit_east"] == states["emit_west"] == "success", states
    monkeypatch.setenv(LAB_PASSWORD_ENV, password)
    monkeypatch.setenv(LAB_USER_ENV, secrets[LAB_USER_ENV])
    west = load_config(env_path).cluster("west")
    check_replica("west", read_topic(west, topic_name), sent, source_topic=topic_name)

    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        xcoms = [json.dumps(x.value, default=str) for x in session.query(XComModel).all()]
    assert xcoms, "the DAG runs pushed no XCom: the scan would prove nothing"
    roots = [lab.root, airflow_db, tmp_path]
    scanned, hits = _scan(roots, [password, secrets[KEYSTORE_PASSWORD_ENV]], skip={lab.root / "secrets.env"})
    hits += [f"xcom #{i}" for i, x in enumerate(xcoms) if password in x or secrets[KEYSTORE_PASSWORD_ENV] in x]
    assert scanned > 20, scanned
    assert hits == [], hits
    # the scan does find a secret where one is kept on purpose
    assert _scan([lab.root], [password], skip=set())[1] == [str(lab.root / "secrets.env")]


def _scan(roots: list[Path], needles: list[str], skip: set[Path]) -> tuple[int, list[str]]:
    """(files read, files holding any needle) under ``roots``; Kafka's segment data included."""
    raw = [n.encode() for n in needles]
    scanned, hits = 0, []
    for root in roots:
        for p in Path(root).rglob("*"):
            if not p.is_file() or p in skip:
                continue
            try:
                data = p.read_bytes()
            except OSError:
                continue
            scanned += 1
            if any(n in data for n in raw):
                hits.append(str(p))
    return scanned, hits

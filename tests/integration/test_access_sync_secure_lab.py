"""ACL and client-quota sync on the secure lab, whose brokers run an authorizer.

The application's own SCRAM principal gets bindings on east only; after ``dr_acl_sync`` it
produces transactionally, consumes and commits on west, while a principal without bindings on
east cannot. A binding removed on east disappears from west (and is not copied back by the
west -> east flow); an operator's own binding on west is never touched. A producer quota set
on east throttles the application's producer on west after ``dr_quota_sync``. The parity
report names each seeded difference, and ``dr_failover``'s gate refuses a target that is not
ready unless forced (the last test: it stops east).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

from kafka_checks import narrowed_config, read_topic
from kafka_dr.core.acl_sync import Acl
from kafka_dr.core.config_load import load_config
from kafka_dr.kafka import clients
from kafka_dr.kafka.acl_admin import create_acls, delete_acls, describe_acls
from kafka_dr.kafka.topics import ensure_topic

pytestmark = [pytest.mark.lab]
REPO = Path(__file__).resolve().parents[2]


def _user(cluster, name: str, password: str) -> None:
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    admin = clients.admin(cluster)  # kept alive until the answer is in
    upsert = UserScramCredentialUpsertion(name, info, password.encode())
    for fut in admin.alter_user_scram_credentials([upsert]).values():
        fut.result(timeout=30)


def _as(cluster, user: str, password: str, **extra) -> dict:
    conf = clients.client_config(cluster, **{"sasl.username": user, "sasl.password": password, **extra})
    conf.pop("logger", None)
    return {**conf, "log_level": 0}


def _produce_tx(conf: dict, topic: str, n: int) -> None:
    p = Producer(conf)
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(n):
        p.produce(topic, key=str(i).encode(), value=b"v%d" % i)
    p.commit_transaction(30)


def _produce_error(conf: dict, topic: str) -> int | None:
    """The error code of one plain produce, or ``None`` when it was written."""
    got = []
    p = Producer({**conf, "message.timeout.ms": 10_000})
    p.produce(topic, value=b"x", on_delivery=lambda err, _m: got.append(err))
    p.flush(20)
    return got[0].code() if got and got[0] is not None else None


def _consume_and_commit(conf: dict, topic: str, n: int) -> int:
    settings = {"auto.offset.reset": "earliest", "enable.auto.commit": False, "isolation.level": "read_committed"}
    c = Consumer({**conf, **settings})
    try:
        c.subscribe([topic])
        seen = 0
        for _ in range(60):
            msg = c.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            seen += 1
            if seen == n:
                break
        c.commit(asynchronous=False)
        return seen
    finally:
        c.close()


def _wait_for(check, what: str, seconds: float = 20.0):
    """ACL changes reach every broker through the metadata log: allow a moment."""
    import time

    deadline = time.monotonic() + seconds
    while True:
        got = check()
        if got or time.monotonic() > deadline:
            assert got, what
            return got
        time.sleep(0.5)


def test_synced_acls_let_the_application_work_on_the_target(secure_lab, airflow_db, tmp_path, topic_name):
    from test_dag_runs import _task_states

    from kafka_dr.airflow.access_sync_dags import build_acl_sync_dag

    lab, _ = secure_lab
    path = narrowed_config(lab, tmp_path, topic_name)
    cfg = load_config(path)
    east, west = cfg.cluster("east"), cfg.cluster("west")
    suffix = uuid.uuid4().hex[:6]
    app, nobody, group, txn = f"app-{suffix}", f"nobody-{suffix}", f"billing-{suffix}", f"app-tx-{suffix}"
    pw = {app: uuid.uuid4().hex, nobody: uuid.uuid4().hex}
    for cluster in (east, west):
        ensure_topic(clients.admin(cluster), topic_name, partitions=2)
        for user, secret in pw.items():
            _user(cluster, user, secret)
    on_west = _as(west, app, pw[app])
    assert _produce_error(on_west, topic_name) == KafkaError.TOPIC_AUTHORIZATION_FAILED  # nothing granted yet

    granted = [
        Acl("TOPIC", topic_name, "LITERAL", f"User:{app}", "*", "READ", "ALLOW"),
        Acl("TOPIC", topic_name, "LITERAL", f"User:{app}", "*", "WRITE", "ALLOW"),
        Acl("GROUP", group, "LITERAL", f"User:{app}", "*", "READ", "ALLOW"),
        Acl("TRANSACTIONAL_ID", txn, "LITERAL", f"User:{app}", "*", "WRITE", "ALLOW"),
        Acl("CLUSTER", "kafka-cluster", "LITERAL", f"User:{app}", "*", "IDEMPOTENT_WRITE", "ALLOW"),
    ]
    operators_own = Acl("TOPIC", topic_name, "LITERAL", f"User:ops-{suffix}", "*", "DESCRIBE", "ALLOW")
    assert create_acls(clients.admin(east), "east", granted) == {}
    assert create_acls(clients.admin(west), "west", [operators_own]) == {}
    _wait_for(lambda: set(granted) <= describe_acls(clients.admin(east), "east"), "bindings on east")

    run = build_acl_sync_dag(cfg).test()
    assert str(run.state) == "success", _task_states(run)
    on_west_tx = _as(west, app, pw[app], **{"transactional.id": txn})
    _wait_for(lambda: _produce_error(on_west, topic_name) is None, "the application produces on west")
    _produce_tx(on_west_tx, topic_name, 10)
    assert _consume_and_commit(_as(west, app, pw[app], **{"group.id": group}), topic_name, 11) == 11
    assert _produce_error(_as(west, nobody, pw[nobody]), topic_name) == KafkaError.TOPIC_AUTHORIZATION_FAILED

    # WRITE removed on east: the CLI twin removes it from west, leaves READ and the operator's own
    assert delete_acls(clients.admin(east), "east", [granted[1]]) == {}
    _wait_for(lambda: granted[1] not in describe_acls(clients.admin(east), "east"), "WRITE gone from east")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.run(
        ["kafka-dr", "acl-sync", "--config", str(path)], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 deleted" in proc.stdout and str(granted[1]) in proc.stdout, proc.stdout
    on_west_now = describe_acls(clients.admin(west), "west")
    assert granted[1] not in on_west_now and granted[0] in on_west_now and operators_own in on_west_now
    assert granted[1] not in describe_acls(clients.admin(east), "east")  # west -> east did not copy it back
    _wait_for(
        lambda: _produce_error(on_west, topic_name) == KafkaError.TOPIC_AUTHORIZATION_FAILED,
        "the application may no longer write on west",
    )


def _throttled_seconds(conf: dict, topic: str, kib: int = 600) -> float:
    """The longest throttle the brokers imposed while ``kib`` KiB were produced (0: none)."""
    import time

    events: list[float] = []
    p = Producer({**conf, "linger.ms": 5, "throttle_cb": lambda e: events.append(e.throttle_time)})
    for _ in range(kib):
        p.produce(topic, value=b"x" * 1024)
        p.poll(0)
    deadline = time.monotonic() + 30
    while p.flush(0.5) > 0 and not any(events) and time.monotonic() < deadline:
        pass
    p.poll(0.5)
    return max(events, default=0.0)


def test_a_source_quota_throttles_the_application_on_the_target(secure_lab, airflow_db, tmp_path, topic_name):
    from test_dag_runs import _task_states

    from kafka_dr.airflow.access_sync_dags import build_quota_sync_dag
    from kafka_dr.core.quota_sync import entity
    from kafka_dr.kafka.client_quotas import alter_quotas, describe_quotas

    lab, _ = secure_lab
    path = narrowed_config(lab, tmp_path, topic_name)
    cfg = load_config(path)
    west = cfg.cluster("west")
    app, pw = f"app-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex
    for name in ("east", "west"):
        ensure_topic(clients.admin(cfg.cluster(name)), topic_name, partitions=1)
        _user(cfg.cluster(name), app, pw)
    write = Acl("TOPIC", topic_name, "LITERAL", f"User:{app}", "*", "WRITE", "ALLOW")
    assert create_acls(clients.admin(west), "west", [write]) == {}  # the operator's own, on west
    on_west = _as(west, app, pw)
    _wait_for(lambda: _produce_error(on_west, topic_name) is None, "the application produces on west")
    assert _throttled_seconds(on_west, topic_name) == 0.0  # no quota on west yet

    alter_quotas(cfg, "east", {(entity(user=app), "producer_byte_rate"): 10240.0}, [])
    run = build_quota_sync_dag(cfg).test()
    assert str(run.state) == "success", _task_states(run)
    assert describe_quotas(cfg, "west")[(entity(user=app), "producer_byte_rate")] == 10240.0
    assert _throttled_seconds(on_west, topic_name) > 0.0


def _grant_of(acls: list[dict], kind: str, op: str) -> Acl:
    """The binding of ``kafka-dr acls --json`` giving ``op`` on every ``kind`` (``*``)."""
    (found,) = [a for a in map(Acl.from_dict, acls) if a.resource_type == kind and a.operation == op and a.name == "*"]
    return found


@contextlib.contextmanager
def _taken(cluster, name: str, binding: Acl, monkeypatch, user: str, password: str):
    """Inside: ``binding`` deleted (by the lab's kafka-dr principal, which may alter ACLs) and
    ``user`` logged in; afterwards the binding is back and the lab's principal logged in again."""
    from kafka_dr.lab.topology import LAB_PASSWORD_ENV, LAB_USER_ENV

    lab_user, lab_password = os.environ[LAB_USER_ENV], os.environ[LAB_PASSWORD_ENV]
    assert delete_acls(clients.admin(cluster), name, [binding]) == {}
    _wait_for(lambda: binding not in describe_acls(clients.admin(cluster), name), f"{binding} gone")
    monkeypatch.setenv(LAB_USER_ENV, user)
    monkeypatch.setenv(LAB_PASSWORD_ENV, password)
    try:
        yield
    finally:
        monkeypatch.setenv(LAB_USER_ENV, lab_user)
        monkeypatch.setenv(LAB_PASSWORD_ENV, lab_password)
        assert create_acls(clients.admin(cluster), name, [binding]) == {}


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run(["kafka-dr", *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)


def test_kafka_dr_works_with_exactly_the_acls_it_prints_for_itself(secure_lab, tmp_path, topic_name, monkeypatch):
    """A principal that is no super user, holding only what `kafka-dr acls` grants it, runs the
    topic-config sync, replication, heartbeats, the offset sync, the ACL and quota syncs, the
    parity report and a failover dry run."""
    from kafka_dr.core.product_acls import product_acls
    from kafka_dr.kafka.heartbeats import emit
    from kafka_dr.kafka.permissions import PermissionDenied
    from kafka_dr.kafka.topic_sync import sync_flow
    from kafka_dr.lab.topology import LAB_PASSWORD_ENV, LAB_USER_ENV
    from kafka_dr.workflows.offset_sync import sync_group_offsets

    lab, _ = secure_lab
    path = narrowed_config(lab, tmp_path, topic_name)
    cfg = load_config(path)
    east = cfg.cluster("east")
    me, pw = f"kafka-dr-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex
    printed = _cli("acls", "--principal", f"User:{me}", "--config", str(path), "--json")
    assert printed.returncode == 0, printed.stderr
    granted = json.loads(printed.stdout)
    for name in ("east", "west"):
        _user(cfg.cluster(name), me, pw)
        acls = [Acl.from_dict(d) for d in granted[name]["acls"]]
        assert acls == product_acls(cfg, f"User:{me}", name)
        assert create_acls(clients.admin(cfg.cluster(name)), name, acls) == {}
    ensure_topic(clients.admin(east), topic_name, partitions=2)
    p = clients.producer(east)
    for i in range(50):
        p.produce(topic_name, key=str(i).encode(), value=b"v")
    p.flush(30)
    c = clients.consumer(east, f"billing-{me}")
    c.commit(offsets=[TopicPartition(topic_name, 0, 5)], asynchronous=False)
    c.close()

    lab_user, lab_password = os.environ[LAB_USER_ENV], os.environ[LAB_PASSWORD_ENV]
    monkeypatch.setenv(LAB_USER_ENV, me)
    monkeypatch.setenv(LAB_PASSWORD_ENV, pw)
    assert clients.cluster_id(east)  # logged in as the restricted principal from here on
    assert sync_flow(cfg, cfg.flows[0])["summary"]["created"] == 1
    replicate = _cli("replicate", "--flow", "east_to_west", "--mode", "incremental", "--config", str(path))
    assert replicate.returncode == 0, replicate.stdout + replicate.stderr
    assert f"{topic_name}: 50" in replicate.stdout.splitlines()[-1], replicate.stdout
    for name in cfg.clusters:
        emit(cfg, name)  # raises when refused
    rows = sync_group_offsets(cfg, cfg.flows[0])
    assert [(r["group"], r["committed"]) for r in rows] == [(f"billing-{me}", True)]
    for args in (("acl-sync",), ("quota-sync",), ("parity", "--from", "east", "--to", "west")):
        proc = _cli(*args, "--config", str(path))
        assert proc.returncode == 0, (args, proc.stdout + proc.stderr)
    dry = _cli("failover", "--from", "east", "--to", "west", "--dry-run", "--force", "--config", str(path))
    assert dry.returncode == 0 and dry.stdout.strip().endswith("active cluster would be: west"), dry.stdout + dry.stderr

    # one permission taken away (DESCRIBE on east's cluster resource, and ALTER that implies it):
    # the sync names it and the cluster, and deletes nothing on west
    monkeypatch.setenv(LAB_USER_ENV, lab_user)
    monkeypatch.setenv(LAB_PASSWORD_ENV, lab_password)
    taken = [Acl("CLUSTER", "kafka-cluster", "LITERAL", f"User:{me}", "*", op, "ALLOW") for op in ("DESCRIBE", "ALTER")]
    assert delete_acls(clients.admin(east), "east", taken) == {}
    monkeypatch.setenv(LAB_USER_ENV, me)
    monkeypatch.setenv(LAB_PASSWORD_ENV, pw)
    denied = _wait_for(
        lambda: (p := _cli("acl-sync", "--flow", "east_to_west", "--config", str(path))).returncode == 1 and p,
        "the sync refused for lack of DESCRIBE",
    )
    assert denied.stderr.strip().splitlines()[-1] == (
        "kafka-dr acl-sync: ACL sync: kafka-dr's principal may not describe ACLs on cluster 'east': "
        "it needs DESCRIBE on the cluster resource"
    ), denied.stderr
    monkeypatch.setenv(LAB_USER_ENV, lab_user)
    monkeypatch.setenv(LAB_PASSWORD_ENV, lab_password)
    assert create_acls(clients.admin(east), "east", taken) == {}  # as it was, for the tests after this one

    # the copy and the offset sync name a missing permission the same way, and stop at once
    for i in range(10):
        p.produce(topic_name, key=str(i).encode(), value=b"later")
    p.flush(30)
    for cluster, op in (("east", "READ"), ("west", "WRITE")):
        # the binding that grants it (the test topic's name has regex characters: `*`)
        binding = _grant_of(granted[cluster]["acls"], "TOPIC", op)
        verb = "read" if op == "READ" else "write to"
        with _taken(cfg.cluster(cluster), cluster, binding, monkeypatch, me, pw):
            proc = _cli("replicate", "--flow", "east_to_west", "--mode", "incremental", "--config", str(path))
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert proc.stderr.strip().splitlines()[-1] == (
            f"kafka-dr replicate: flow east_to_west: stopped: kafka-dr's principal may not {verb} topic "
            f"'{topic_name}' on cluster '{cluster}': it needs {op} on topic '{topic_name}'"
        ), proc.stderr
        assert "restart 1/" not in proc.stdout + proc.stderr  # a permission is no fault a restart cures
    monkeypatch.setenv(LAB_USER_ENV, me)
    monkeypatch.setenv(LAB_PASSWORD_ENV, pw)
    replicate = _cli("replicate", "--flow", "east_to_west", "--mode", "incremental", "--config", str(path))
    assert f"{topic_name}: 10" in replicate.stdout.splitlines()[-1], replicate.stdout  # granted again: nothing lost
    monkeypatch.setenv(LAB_USER_ENV, lab_user)
    monkeypatch.setenv(LAB_PASSWORD_ENV, lab_password)
    c = clients.consumer(east, f"billing-{me}")
    c.commit(offsets=[TopicPartition(topic_name, 0, 6)], asynchronous=False)
    c.close()
    binding = _grant_of(granted["west"]["acls"], "GROUP", "READ")
    with _taken(cfg.cluster("west"), "west", binding, monkeypatch, me, pw):
        with pytest.raises(PermissionDenied) as refused:
            sync_group_offsets(cfg, cfg.flows[0])
    assert str(refused.value) == (
        f"kafka-dr's principal may not commit offsets of group 'billing-{me}' on cluster 'west': "
        f"it needs READ on group 'billing-{me}'"
    )


def test_parity_names_each_difference_and_failover_refuses_a_target_not_ready(
    secure_lab, airflow_db, tmp_path, topic_name
):
    from test_dag_runs import _task_states

    from kafka_dr.airflow.parity_dag import build_parity_dag
    from kafka_dr.core.quota_sync import entity
    from kafka_dr.kafka.client_quotas import alter_quotas

    lab, _ = secure_lab
    path = narrowed_config(lab, tmp_path, topic_name)
    cfg = load_config(path)
    east = cfg.cluster("east")
    suffix = uuid.uuid4().hex[:6]
    app = f"app-{suffix}"
    ensure_topic(clients.admin(east), topic_name, partitions=2)  # on east only
    _user(east, app, uuid.uuid4().hex)  # on east only
    grant = Acl("TOPIC", topic_name, "LITERAL", f"User:{app}", "*", "READ", "ALLOW")
    assert create_acls(clients.admin(east), "east", [grant]) == {}
    alter_quotas(cfg, "east", {(entity(user=app), "consumer_byte_rate"): 2048.0}, [])

    proc = _cli("parity", "--from", "east", "--to", "west", "--config", str(path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    assert out.startswith("parity east -> west: not ready\n"), out
    for line in (
        f"  not ready  topics: west/{topic_name} missing (east/{topic_name} exists)",
        f"  not ready  acls: missing on west: {grant}",
        f"  not ready  scram users: {app} has no SCRAM credential on west",
        f"  degraded   quotas: user {app}: consumer_byte_rate on west none, source 2048",
    ):
        assert line in out.splitlines(), out
    assert proc.stderr.strip().splitlines()[-1] == "kafka-dr parity: west is not ready for failover from east"

    run = build_parity_dag(cfg).test()  # records the report on west, fails (and alerts): not ready
    states = _task_states(run)
    assert states == {"parity_east_to_west": "failed", "parity_west_to_east": "success"}, states

    lab.stop("east")  # the disaster: only west's recorded report can speak for east now
    refused = _cli("failover", "--from", "east", "--to", "west", "--config", str(path))
    assert refused.returncode == 1, refused.stdout + refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith("kafka-dr failover: west is not ready for the applications of east: "), last
    assert "trigger again with force" in last
    forced = _cli("failover", "--from", "east", "--to", "west", "--force", "--config", str(path))
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert "  parity: not ready (" in forced.stdout and "s ago)" in forced.stdout, forced.stdout
    assert forced.stdout.strip().splitlines()[-1] == "  active cluster: west"

    # with east down, west -> east cannot be judged: a note, not a failed (alerting) task
    states = _task_states(build_parity_dag(cfg).test())
    assert states == {"parity_east_to_west": "success", "parity_west_to_east": "success"}, states
    down = _cli("parity", "--from", "west", "--to", "east", "--config", str(path))
    assert down.returncode == 1 and "east does not answer: its readiness cannot be judged" in down.stdout, down.stdout

    # the applications wrote to west meanwhile; east is back and the failback copies it there
    ensure_topic(clients.admin(cfg.cluster("west")), topic_name, partitions=2)
    p = clients.producer(cfg.cluster("west"))
    for i in range(30):
        p.produce(topic_name, key=str(i).encode(), value=b"written on west")
    p.flush(30)
    lab.start("east")
    back = _cli(
        "failback", "--recovered", "east", "--survivor", "west", "--mode", "resync", "--no-data-quality",
        "--config", str(path),
    )  # fmt: skip
    assert back.returncode == 0, back.stdout + back.stderr
    assert "  gate: data quality not compared: turned off for this failback" in back.stdout, back.stdout
    got = [r for r in read_topic(east, topic_name) if r.value == b"written on west"]
    assert len(got) == 30, len(got)

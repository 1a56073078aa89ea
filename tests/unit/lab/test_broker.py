"""A lab broker's server.properties: listeners per broker, the quorum, replication by broker count."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_dr.lab.broker import exit_cause, replication_properties, server_properties
from kafka_dr.lab.topology import lab_clusters


def _props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_one_broker_keeps_every_replication_factor_at_one():
    (east,) = lab_clusters(1, 19092)
    props = _props(server_properties(east, east.nodes[0], Path("/lab/clusters/east/data")))
    assert props == {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": "1@127.0.0.1:19093",
        "listeners": "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093",
        "advertised.listeners": "PLAINTEXT://127.0.0.1:19092",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "log.dirs": "/lab/clusters/east/data",
        "num.partitions": "1",
        "default.replication.factor": "1",
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "8",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "8",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "log.cleaner.backoff.ms": "1000",
        "log.retention.check.interval.ms": "5000",
        "num.io.threads": "2",
        "num.network.threads": "2",
        "metadata.max.idle.interval.ms": "5000",
    }


def test_three_brokers_are_one_quorum_with_rf3_and_min_isr2():
    (east,) = lab_clusters(1, 40000, brokers=3)
    props = _props(server_properties(east, east.nodes[1], Path("/lab/clusters/east-2/data")))
    assert props["node.id"] == "2"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:40001,2@127.0.0.1:40011,3@127.0.0.1:40021"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:40010,CONTROLLER://127.0.0.1:40011"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:40010"
    assert {k: props[k] for k in props if "replication" in k or "isr" in k or "insync" in k} == {
        "default.replication.factor": "3",
        "min.insync.replicas": "2",
        "offsets.topic.replication.factor": "3",
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2",
        "share.coordinator.state.topic.replication.factor": "3",
        "share.coordinator.state.topic.min.isr": "2",
    }


@pytest.mark.parametrize(("brokers", "rf", "isr"), [(2, "2", "1"), (5, "3", "2")])
def test_replication_follows_the_broker_count(brokers, rf, isr):
    props = _props(replication_properties(brokers))
    assert (props["default.replication.factor"], props["min.insync.replicas"]) == (rf, isr)
    assert (props["transaction.state.log.replication.factor"], props["transaction.state.log.min.isr"]) == (rf, isr)


def test_a_proxied_broker_advertises_its_own_proxy_port_and_listens_internally():
    (east,) = lab_clusters(1, 40000, proxied=("east",), brokers=3)
    props = _props(server_properties(east, east.nodes[2], Path("/d")))
    assert props["listeners"] == ("CLIENT://127.0.0.1:40020,INTERNAL://127.0.0.1:40022,CONTROLLER://127.0.0.1:40021")
    assert props["advertised.listeners"] == "CLIENT://127.0.0.1:40070,INTERNAL://127.0.0.1:40022"
    assert props["inter.broker.listener.name"] == "INTERNAL"


def test_exit_cause_is_the_innermost_causes_in_the_log_or_the_consoles_last_line(tmp_path):
    (tmp_path / "console.log").write_text("")
    (tmp_path / "broker.log").write_text(
        "[2026-01-01 00:00:00,000] INFO starting (kafka.Kafka)\n"
        "[2026-01-01 00:00:01,000] ERROR [BrokerServer id=2] Fatal error during broker startup. (x)\n"
        "java.lang.RuntimeException: Received a fatal error while waiting for the acceptors\n"
        "Caused by: org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:40810: "
        "Address already in use.\n"
        "\tat kafka.network.Acceptor.openServerSocket(SocketServer.scala:1)\n"
        "Caused by: java.net.BindException: Address already in use\n"
    )
    assert exit_cause(tmp_path) == (
        "org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:40810: Address already "
        f"in use.; java.net.BindException: Address already in use (see {tmp_path / 'broker.log'})"
    )
    (tmp_path / "console.log").write_text("Error occurred during initialization of VM\nToo small maximum heap\n")
    assert exit_cause(tmp_path) == f"Too small maximum heap (see {tmp_path / 'console.log'})"


def test_a_broker_maps_the_class_archive_when_there_is_one(tmp_path, monkeypatch):
    from kafka_dr.lab.broker import jvm_options
    from kafka_dr.lab.broker_archive import archive_file

    monkeypatch.setenv("KAFKA_DR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KAFKA_DR_LAB_JVM_OPTS", "-XX:TieredStopAtLevel=1")
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "kafka.jar").write_bytes(b"jar")
    assert jvm_options(jars) == ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]  # none made yet
    archive = archive_file(jars)
    archive.parent.mkdir()
    archive.write_bytes(b"jsa")
    assert jvm_options(jars)[:3] == ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", f"-XX:SharedArchiveFile={archive}"]
    (jars / "kafka.jar").write_bytes(b"another jar")  # other jars: that archive is not theirs
    assert not any("SharedArchiveFile" in o for o in jvm_options(jars))


def test_an_operators_own_class_sharing_option_wins(tmp_path, monkeypatch):
    from kafka_dr.lab.broker import jvm_options
    from kafka_dr.lab.broker_archive import archive_file

    monkeypatch.setenv("KAFKA_DR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KAFKA_DR_LAB_JVM_OPTS", "-Xshare:off")
    jars = tmp_path / "jars"
    jars.mkdir()
    archive = archive_file(jars)
    archive.parent.mkdir()
    archive.write_bytes(b"jsa")
    assert jvm_options(jars) == ["-XX:+UseSerialGC", "-Xshare:off"]

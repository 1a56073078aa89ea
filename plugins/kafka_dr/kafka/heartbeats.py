"""Emit heartbeats on a cluster and read the replicated ones on a flow's target."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, TopicPartition

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.heartbeat import FlowLatency, Heartbeat, flow_latency
from kafka_dr.core.loop import router_for
from kafka_dr.core.provenance import origin_cluster
from kafka_dr.kafka import clients, permissions
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.kafka.watermarks import watermarks

#: How many of the newest records of a heartbeat topic partition are read to judge a flow.
TAIL = 2000


def emit(cfg: DrConfig, cluster: str, resolve: SecretResolver | None = None, now_ms: int | None = None) -> Heartbeat:
    c = cfg.cluster(cluster)
    admin = clients.admin(c, resolve)
    ensure_topic(admin, cfg.names.heartbeat_topic, partitions=1, config={"retention.ms": str(24 * 3600 * 1000)})
    hb = Heartbeat(cluster, now_ms if now_ms is not None else int(time.time() * 1000))
    p = clients.producer(c, resolve)
    topic, refused = cfg.names.heartbeat_topic, []
    p.produce(
        topic,
        key=cluster.encode(),
        value=hb.encode(),
        timestamp=hb.emitted_ms,
        on_delivery=lambda err, _msg: refused.append(err) if err is not None else None,
    )
    if p.flush(30):
        raise RuntimeError(f"heartbeat to {cluster}/{topic} not acknowledged within 30s")
    if refused and permissions.is_denied(refused[0]):
        raise permissions.write_refused(cluster, topic)
    if refused:
        raise RuntimeError(f"heartbeat to {cluster}/{topic} refused: {refused[0].str()}")
    return hb


def read_tail(
    consumer: Consumer, topic: str, tail: int = TAIL, timeout: float = 30.0
) -> list[tuple[str | None, Heartbeat]]:
    md = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
    if md is None or md.error is not None:
        return []
    out: list[tuple[str | None, Heartbeat]] = []
    for p in md.partitions:
        low, high = watermarks(consumer, TopicPartition(topic, p), timeout)
        if high <= low:
            continue
        consumer.assign([TopicPartition(topic, p, max(low, high - tail))])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    break
                raise RuntimeError(f"reading {topic}[{p}]: {msg.error().str()}")
            hb = Heartbeat.decode(msg.value())
            if hb is not None:
                out.append((origin_cluster(msg.headers()), hb))
            if msg.offset() + 1 >= high:
                break
        consumer.unassign()
    return out


def measure(
    cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None, now_ms: int | None = None
) -> FlowLatency:
    """The age of the newest heartbeat of ``flow.source`` that reached ``flow.target``."""
    topic = router_for(cfg, flow).target_topic(cfg.names.heartbeat_topic) or cfg.names.heartbeat_topic
    c = clients.consumer(
        cfg.cluster(flow.target), cfg.names.reader_group("heartbeat-reader"), resolve, **{"enable.partition.eof": True}
    )
    try:
        seen = read_tail(c, topic)
    finally:
        c.close()
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    return flow_latency(flow.name, flow.source, flow.target, seen, now, cfg.thresholds.heartbeat_max_age_seconds)

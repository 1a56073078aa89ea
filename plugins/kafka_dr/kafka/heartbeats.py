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
    cfg: DrConfig,
    flow: FlowConfig,
    resolve: SecretResolver | None = None,
    now_ms: int | None = None,
    ask_source: bool = True,
) -> FlowLatency:
    """The age of the newest heartbeat of ``flow.source`` that reached ``flow.target``. With
    none there, the source is asked for its first heartbeat (``waiting`` or ``missing``)
    unless ``ask_source`` is False (a failover's, whose source is down)."""
    topic = router_for(cfg, flow).target_topic(cfg.names.heartbeat_topic) or cfg.names.heartbeat_topic
    c = clients.consumer(
        cfg.cluster(flow.target), cfg.names.reader_group("heartbeat-reader"), resolve, **{"enable.partition.eof": True}
    )
    try:
        seen = read_tail(c, topic)
    finally:
        c.close()
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    first = None
    if ask_source and not any(origin == flow.source for origin, _ in seen):
        first = first_emitted_ms(cfg, flow.source, resolve)
    return flow_latency(flow.name, flow.source, flow.target, seen, now, cfg.thresholds.heartbeat_max_age_seconds, first)


def first_emitted_ms(cfg: DrConfig, cluster: str, resolve: SecretResolver | None = None) -> int | None:
    """When the oldest heartbeat ``cluster`` holds of its own was emitted; None when it holds
    none or does not answer (a flow whose source is silent is judged missing, not waiting)."""
    topic = cfg.names.heartbeat_topic
    c = clients.consumer(
        cfg.cluster(cluster), cfg.names.reader_group("heartbeat-reader"), resolve, **{"enable.partition.eof": True}
    )
    try:
        md = c.list_topics(topic, timeout=10).topics.get(topic)
        if md is None or md.error is not None:
            return None
        oldest = []
        for p in md.partitions:
            low, high = watermarks(c, TopicPartition(topic, p), 10)
            if high > low:
                c.assign([TopicPartition(topic, p, low)])
                oldest += _first_own(c, cluster, deadline=time.monotonic() + 10)
                c.unassign()
        return min(oldest, default=None)
    except Exception:  # noqa: BLE001 - an unreadable source leaves the flow judged missing
        return None
    finally:
        c.close()


def _first_own(consumer: Consumer, cluster: str, deadline: float, scan: int = 100) -> list[int]:
    """The emission time of the first of ``cluster``'s own heartbeats among the first ``scan``
    records of the assigned partition (the topic also holds copies of other clusters')."""
    while scan > 0 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            return []
        scan -= 1
        hb = Heartbeat.decode(msg.value())
        if hb is not None and hb.cluster == cluster and origin_cluster(msg.headers()) is None:
            return [hb.emitted_ms]
    return []

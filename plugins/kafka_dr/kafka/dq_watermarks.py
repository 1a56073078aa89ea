"""The verified data-quality watermarks of a flow, kept on its target cluster.

One compacted topic, ``<prefix>.dq-watermarks``, on the flow's target (where its progress
lives too): one record per (flow, source topic, partition) (:mod:`kafka_dr.core.dq_watermark`
encodes them). A run reads them before planning and
writes the watermarks of the windows that passed after validating; a run that dies in between
leaves the previous ones, so the next run compares from there.
"""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka import KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.dq_watermark import Watermark, decode
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import ClusterUnreachable, SecretResolver
from kafka_dr.kafka.topic_admin import REQUEST_TIMEOUT, RESULT_TIMEOUT
from kafka_dr.kafka.topics import ensure_topic


def read_marks(
    cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None
) -> dict[tuple[str, int], Watermark]:
    """The flow's watermarks by (source topic, partition)."""
    topic = cfg.names.dq_watermarks_topic
    c = clients.consumer(
        cfg.cluster(flow.target), cfg.names.reader_group("dq-reader"), resolve, **{"enable.partition.eof": True}
    )
    marks: dict[tuple[str, int], Watermark] = {}
    where = f"{flow.target}/{topic}"
    try:
        md = c.list_topics(topic, timeout=15).topics.get(topic)
        if md is None or md.error is not None:
            return marks
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=15)
        if high <= low:
            return marks
        c.assign([TopicPartition(topic, 0, low)])
        while True:
            msg = c.poll(10.0)
            if msg is None:
                raise ClusterUnreachable(f"data quality: reading {where}: no answer within 10s")
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    break
                raise ClusterUnreachable(f"data quality: reading {where}: {msg.error().str()}")
            got = decode(msg.value())
            if got is not None and got.flow == flow.name:
                marks[(got.topic, got.partition)] = got
            if msg.offset() + 1 >= high:
                break
        return marks
    except KafkaException as e:
        raise ClusterUnreachable(f"data quality: reading {where}: {e.args[0].str()}") from None
    finally:
        c.close()


def write_marks(
    cfg: DrConfig, flow: FlowConfig, marks: Iterable[Watermark], resolve: SecretResolver | None = None
) -> int:
    """Write ``marks``; returns how many. Raises when the target does not acknowledge them."""
    topic = cfg.names.dq_watermarks_topic
    cluster = cfg.cluster(flow.target)
    ensure_topic(clients.admin(cluster, resolve), topic, partitions=1, config={"cleanup.policy": "compact"})
    p = clients.producer(cluster, resolve, **{"message.timeout.ms": 30_000})
    n = 0
    for m in marks:
        p.produce(topic, key=m.key, value=m.encode())
        n += 1
    if p.flush(45) != 0:
        raise ClusterUnreachable(f"data quality: watermarks not acknowledged by {flow.target}/{topic}")
    return n


def topic_ids(admin: AdminClient, cluster: str, topics: Iterable[str]) -> dict[str, str]:
    """Each existing topic's id (a recreated topic gets a new one); missing topics left out."""
    names = sorted(set(topics))
    if not names:
        return {}
    out = {}
    try:
        futs = admin.describe_topics(TopicCollection(names), request_timeout=REQUEST_TIMEOUT)
    except KafkaException as e:
        raise ClusterUnreachable(f"data quality: describing topics on {cluster}: {e.args[0].str()}") from None
    for name, fut in futs.items():
        try:
            out[name] = str(fut.result(timeout=RESULT_TIMEOUT).topic_id)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise ClusterUnreachable(f"data quality: describing {cluster}/{name}: {e.args[0].str()}") from None
    return out

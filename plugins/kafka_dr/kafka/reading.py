"""Read whole partitions or offset ranges without a consumer group (assign, not subscribe)."""

from __future__ import annotations

import gc
import time
from typing import NamedTuple

from confluent_kafka import Consumer, KafkaError, TopicPartition

from kafka_dr.kafka.watermarks import watermarks


class Record(NamedTuple):
    """One record as read: everything replication must preserve, plus where it sits. A tuple:
    whole partitions are read into these, and a tuple costs a third of a frozen dataclass."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp_ms: int


def read_partitions(consumer: Consumer, topic: str, partitions: list[int], timeout: float = 30.0) -> list[Record]:
    """Every record from the log start to the high watermark of each partition, in order.

    Ends at the watermarks taken when the call starts, so a concurrent producer cannot keep
    it reading forever. Raises ``TimeoutError`` naming the partitions still short.
    """
    ends: dict[int, int] = {}
    starts: list[TopicPartition] = []
    for p in partitions:
        low, high = watermarks(consumer, TopicPartition(topic, p), timeout)
        if high > low:
            ends[p] = high
            starts.append(TopicPartition(topic, p, low))
    if not starts:
        return []
    consumer.assign(starts)
    # Records hold no cycles: the cyclic collector would only rescan the growing list.
    collecting = gc.isenabled()
    gc.disable()
    try:
        out, pending = _read_to_ends(consumer, topic, ends, timeout)
    finally:
        if collecting:
            gc.enable()
    consumer.unassign()
    if pending:
        raise TimeoutError(
            f"reading {topic}: partitions {sorted(pending)} did not reach their end offsets {pending} "
            f"within {timeout:.0f}s"
        )
    return out


def _read_to_ends(consumer: Consumer, topic: str, ends: dict[int, int], timeout: float):
    """The assigned partitions' records up to ``ends``, and the partitions still short of them."""
    out: list[Record] = []
    pending = dict(ends)
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        # short: a batch call waits its whole timeout unless it fills, so each call of a small
        # read would cost it
        for msg in consumer.consume(num_messages=10_000, timeout=0.1):
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise RuntimeError(f"reading {topic}[{msg.partition()}]: {msg.error().str()}")
            p = msg.partition()
            if p not in pending:
                continue
            out.append(
                Record(topic, p, msg.offset(), msg.key(), msg.value(), tuple(msg.headers() or ()), msg.timestamp()[1])
            )
            if msg.offset() + 1 >= pending[p]:
                del pending[p]
        # read_committed consumers stop short of the watermark at aborted/control records:
        # a partition whose position passed its end is done too.
        if pending:
            for tp in consumer.position([TopicPartition(topic, p) for p in pending]):
                if tp.offset >= 0 and tp.offset >= pending.get(tp.partition, 1 << 62):
                    pending.pop(tp.partition, None)
    return out, pending

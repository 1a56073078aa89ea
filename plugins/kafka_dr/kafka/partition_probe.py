"""Reading a replica for one origin's records: the translation's probes (seek, then read
forward past local and other-origin records) and the timestamp of a source record."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, TopicPartition

from kafka_dr.core.offsets import Hit
from kafka_dr.core.provenance import Provenance, origin_cluster

#: how long one read waits for a record the partition's range says is there
TIMEOUT = 30.0


class PartitionProbe:
    """``first_from(m)``: the first record of one origin at target offset >= m, read by seeking."""

    def __init__(
        self,
        consumer: Consumer,
        where: str,
        topic: str,
        partition: int,
        end: int,
        origin: str,
        origin_topic: str,
        origin_partition: int,
        timeout: float = TIMEOUT,
    ):
        self.c, self.where, self.topic, self.partition, self.end = consumer, where, topic, partition, end
        self.origin, self.origin_topic, self.origin_partition = origin, origin_topic, origin_partition
        self.timeout = timeout
        self.records_read = 0
        self.passed: Hit | None = None

    def first_from(self, m: int, at_least: int | None = None) -> Hit | None:
        """The first record of the origin at target offset >= ``m`` (with ``at_least``: the first
        whose origin offset is at least that, the last one below it kept in ``passed``)."""
        self.passed = None
        if m >= self.end:
            return None
        self.c.assign([TopicPartition(self.topic, self.partition, m)])
        deadline = time.monotonic() + self.timeout
        try:
            while True:
                # consume(n) waits for n records or the timeout: take one, then what is buffered
                msgs = self.c.consume(num_messages=1, timeout=0.5)
                if msgs:
                    msgs += self.c.consume(num_messages=499, timeout=0)
                for msg in msgs:
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            if msg.offset() >= self.end:
                                return None
                            continue  # stale, from an earlier assignment
                        raise RuntimeError(
                            f"reading {self.where}/{self.topic}[{self.partition}] from offset {m}: {err.str()}"
                        )
                    off = msg.offset()
                    if off < m:
                        continue  # stale
                    if off >= self.end:
                        return None
                    self.records_read += 1
                    headers = msg.headers()
                    if origin_cluster(headers) != self.origin:
                        continue
                    try:
                        prov = Provenance.from_headers(headers)
                    except ValueError as e:
                        raise RuntimeError(f"{self.where}/{self.topic}[{self.partition}]@{off}: {e}") from None
                    if prov is not None and prov.topic == self.origin_topic and prov.partition == self.origin_partition:
                        if at_least is None or prov.offset >= at_least:
                            return Hit(off, prov.offset)
                        self.passed = Hit(off, prov.offset)
                if not msgs:
                    pos = self.c.position([TopicPartition(self.topic, self.partition)])[0].offset
                    if pos >= self.end:  # read_committed stops short at control/aborted records
                        return None
                    if time.monotonic() > deadline:
                        raise TimeoutError(
                            f"reading {self.where}/{self.topic}[{self.partition}] from offset {m}: no record "
                            f"within {self.timeout:.0f}s (end {self.end})"
                        )
        finally:
            self.c.unassign()


def timestamp_at(consumer: Consumer, topic: str, p: int, offset: int, end: int, timeout: float = TIMEOUT) -> int | None:
    """Timestamp of the first record at or after ``offset`` (compaction gaps) below ``end``."""
    consumer.assign([TopicPartition(topic, p, offset)])
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=1, timeout=0.5):
                if msg.error() is None and msg.offset() >= offset:
                    return msg.timestamp()[1]
            if consumer.position([TopicPartition(topic, p)])[0].offset >= end:
                return None
        return None
    finally:
        consumer.unassign()

"""The records that arrived on a topic since the last read, read again and again by one
long-lived process (the exporter).

A tail starts at the topic's end (rows counted from the exporter's start: the metrics topic)
or at its beginning (a compacted topic whose every key matters: the offset-sync topic), and
picks up partitions that appear later (the topic may not exist yet when it starts).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaError, TopicPartition

from kafka_dr.core.config import DrConfig
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import SecretResolver


@dataclass(frozen=True)
class Record:
    key: bytes | None
    value: bytes | None
    timestamp_ms: int


class TopicTail:
    def __init__(
        self, cfg: DrConfig, cluster: str, topic: str, from_start: bool, resolve: SecretResolver | None = None
    ) -> None:
        self.cluster, self.topic = cluster, topic
        self.start = OFFSET_BEGINNING if from_start else OFFSET_END
        self.consumer = clients.consumer(
            cfg.cluster(cluster), cfg.names.reader_group("exporter-reader"), resolve, **{"enable.partition.eof": True}
        )
        self.assigned: set[int] = set()
        #: partitions read to their end (librdkafka says so once per arrival at the end)
        self.at_end: set[int] = set()

    def _assign_new_partitions(self, timeout: float) -> None:
        md = self.consumer.list_topics(self.topic, timeout=timeout).topics.get(self.topic)
        if md is None or md.error is not None:
            return
        new = [TopicPartition(self.topic, p, self.start) for p in md.partitions if p not in self.assigned]
        if new:
            self.consumer.incremental_assign(new)
            self.assigned |= {tp.partition for tp in new}

    def drain(self, timeout: float = 3.0, limit: int = 200_000) -> list[Record]:
        """The records that arrived since the last call (at most ``limit``), in offset order
        per partition. Records still on their way may come with the next call."""
        deadline = time.monotonic() + timeout
        self._assign_new_partitions(timeout)
        out: list[Record] = []
        while self.assigned and len(out) < limit and time.monotonic() < deadline:
            msgs = self.consumer.consume(num_messages=10_000, timeout=0.2)
            if not msgs and self.at_end >= self.assigned:
                break
            for m in msgs:
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        self.at_end.add(m.partition())
                        continue
                    raise RuntimeError(f"reading {self.cluster}/{self.topic}[{m.partition()}]: {m.error()}")
                self.at_end.discard(m.partition())
                out.append(Record(m.key(), m.value(), m.timestamp()[1]))
        return out

    def close(self) -> None:
        self.consumer.close()


def json_rows(records: list[Record]) -> list[dict]:
    """The records whose value is a JSON object, as dicts."""
    rows = []
    for r in records:
        try:
            row = json.loads(r.value or b"")
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows

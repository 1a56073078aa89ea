"""How a range copy reads the source and how large its transactions are.

The figures behind each setting are in docs/benchmarks.md#settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_dr.core.config import ClusterConfig
from kafka_dr.kafka.clients import SecretResolver, client_config

#: the replication job's records per transaction (``--chunk-records``): each commit waits for
#: its chunk's acknowledgements, so a backlog stalls once per chunk; other callers of
#: :class:`~kafka_dr.kafka.copier.RangeCopier` keep :class:`CopyTuning`'s default
JOB_CHUNK_RECORDS = 200_000

#: ``linger.ms`` of a backlog copy's producers (fixed ranges; the producer's own is 10 ms). A
#: partition's producer carries only its copy, so each produce request is one batch, and a
#: batch is what the linger gathers: fewer, larger requests spare the target brokers and their
#: followers' fetches. A chunk's commit sends what lingers at once, so nothing waits at its end.
BACKLOG_LINGER_MS = 100

#: ``fetch.queue.backoff.ms``: how soon the fetcher looks again once a partition's local queue
#: is full (librdkafka waits 1,000 ms, and a backlog's copy read the queue dry meanwhile)
FETCH_QUEUE_BACKOFF_MS = 20

#: ``fetch.wait.max.ms`` of a fixed range: its records are there, but the fetch after its last
#: one is held, and the next range's first request on that connection waits behind it
RANGE_FETCH_WAIT_MS = 20


def read_wait(chunk_seconds: float) -> float:
    """How long one read of the source waits for records (``consume``'s timeout): a quarter of
    the longest a chunk may last, at most 0.1 s."""
    return min(0.1, chunk_seconds / 4)


def streaming_fetch(chunk_seconds: float) -> dict[str, Any]:
    """Source-consumer settings for a streaming copy (an open range whose chunks last at most
    ``chunk_seconds``): the broker holds a fetch until 256 KiB are there or a little less than
    the copier's :func:`read_wait` has passed (20 ms by default).

    Why: with librdkafka's ``fetch.min.bytes`` of 1, each partition's consumer fetches as fast
    as records trickle in, small requests the brokers answer between the transactions' own.
    Not for fixed ranges: a range's last, small fetch would wait out the timeout every time."""
    return {"fetch.wait.max.ms": max(1, round(read_wait(chunk_seconds) * 800)), "fetch.min.bytes": 256 * 1024}


@dataclass(frozen=True)
class CopyTuning:
    """How a :class:`~kafka_dr.kafka.copier.RangeCopier` sizes its transactions and sets its clients.

    :param chunk_records: records per transaction at most
    :param chunk_seconds: how long a transaction may be filled (an open range's ends sooner,
        as soon as it has caught up)
    :param stall_seconds: a fixed range that gets no record for this long fails (source unreachable?)
    :param producer_overrides: librdkafka settings over the copier's producer defaults
    :param consumer_overrides: settings of the source consumer (streaming copies: :func:`streaming_fetch`)
    """

    chunk_records: int = 50_000
    chunk_seconds: float = 5.0
    stall_seconds: float = 120.0
    producer_overrides: Mapping[str, Any] = field(default_factory=dict)
    consumer_overrides: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def streaming(cls, chunk_records: int, chunk_seconds: float) -> CopyTuning:
        """A streaming task's copy: transactions of at most ``chunk_seconds``, fetches held by the broker."""
        return cls(
            chunk_records=chunk_records, chunk_seconds=chunk_seconds, consumer_overrides=streaming_fetch(chunk_seconds)
        )

    @classmethod
    def backlog(cls, chunk_records: int = 50_000) -> CopyTuning:
        """A fixed range's copy (a backlog): batches gathered for :data:`BACKLOG_LINGER_MS`."""
        return cls(chunk_records=chunk_records, producer_overrides={"linger.ms": BACKLOG_LINGER_MS})


def source_consumer_config(
    cluster: ClusterConfig, resolve: SecretResolver | None, group: str, overrides: Mapping[str, Any]
) -> dict[str, Any]:
    """A copy's source consumer: ``read_committed``, large fetches that follow each other without
    a pause (:data:`FETCH_QUEUE_BACKOFF_MS`, :data:`RANGE_FETCH_WAIT_MS`), no committed offsets
    of its own (progress lives on the target), then ``overrides``."""
    return client_config(
        cluster,
        resolve,
        **{
            "group.id": f"{group}.reader",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "auto.offset.reset": "error",
            "fetch.max.bytes": 64 * 1024 * 1024,
            "max.partition.fetch.bytes": 8 * 1024 * 1024,
            "queued.max.messages.kbytes": 256 * 1024,
            "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
            "fetch.wait.max.ms": RANGE_FETCH_WAIT_MS,
            **overrides,
        },
    )

"""Bounded forward reads of offset ranges, for counting and classifying records.

Every read is ``read_committed`` and ends at the range's end even when the range closes with
transaction markers or aborted records (which a read_committed consumer never delivers): a
partition is done when a record, the partition EOF or the consumer's position reaches the end.
Used by offset translation (records the flow has not copied yet), group positions
(:mod:`kafka_dr.kafka.group_position`) and the failover's RPO count.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from confluent_kafka import Consumer, KafkaError, TopicPartition

from kafka_dr.core.provenance import Provenance, origin_cluster

TIMEOUT = 30.0

#: a consumer setting for these reads: a fetch long-polling at the end must not hold each range
FAST_EOF = {"enable.partition.eof": True, "fetch.wait.max.ms": 10}


def _fetched(consumer: Consumer, wait: float = 0.2) -> list:
    """What ``consumer`` has fetched, at once when there is some, else the first record (or
    event) within ``wait`` and what came with it: ``consume(n, wait)`` below ``n`` records
    returns only once ``wait`` is up, a fifth of a second per short range."""
    msgs = consumer.consume(num_messages=1000, timeout=0)
    if msgs:
        return msgs
    first = consumer.poll(wait)
    return [] if first is None else [first, *consumer.consume(num_messages=999, timeout=0)]


def read_ranges(
    consumer: Consumer, where: str, ranges: dict[tuple[str, int], tuple[int, int]], timeout: float = TIMEOUT
) -> Iterator[tuple[tuple[str, int], object]]:
    """Yield ``((topic, partition), message)`` for every record in each ``[start, end)`` of
    ``ranges``, in order per partition. ``where`` names the cluster in errors. Raises
    ``TimeoutError`` when a partition delivers nothing for ``timeout`` seconds short of its end."""
    pending = {k: (s, e) for k, (s, e) in ranges.items() if e > s}
    if not pending:
        return
    consumer.assign([TopicPartition(t, p, s) for (t, p), (s, _) in pending.items()])
    last_news = time.monotonic()
    try:
        while pending:
            msgs = _fetched(consumer)
            for msg in msgs:
                k = (msg.topic(), msg.partition())
                if k not in pending:
                    continue
                start, end = pending[k]
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        if msg.offset() >= end:
                            del pending[k]
                        continue
                    raise RuntimeError(f"reading {where}/{k[0]}[{k[1]}] in offsets {start}..{end - 1}: {err.str()}")
                if msg.offset() < start:
                    continue  # stale (an earlier assignment) or seen already
                last_news = time.monotonic()
                if msg.offset() >= end:
                    del pending[k]
                    continue
                pending[k] = (msg.offset() + 1, end)
                yield k, msg
            if not msgs and pending:
                for tp in consumer.position([TopicPartition(t, p) for t, p in pending]):
                    if tp.offset >= pending[(tp.topic, tp.partition)][1]:
                        del pending[(tp.topic, tp.partition)]  # the rest were markers or aborted records
                if pending and time.monotonic() - last_news > timeout:
                    short = ", ".join(f"{t}[{p}] (to {e})" for (t, p), (_, e) in sorted(pending.items())[:5])
                    raise TimeoutError(f"reading {where}: no record within {timeout:.0f}s for {short}")
    finally:
        consumer.unassign()


#: (headers, topic, partition, offset, now_ms) -> headers or None: a flow's loop policy
Transform = Callable[..., object]


def count_copied(
    consumer: Consumer,
    where: str,
    transform: Transform,
    ranges: dict[tuple[str, int], tuple[int, int]],
    timeout: float = TIMEOUT,
) -> dict[tuple[str, int], tuple[int, int | None]]:
    """Per partition: how many records in its range the flow's loop policy copies, and the
    offset of the last of them (``None``: none). Transaction markers and aborted records are
    never delivered; records the policy filters are read and not counted."""
    out: dict[tuple[str, int], tuple[int, int | None]] = {k: (0, None) for k in ranges}
    now_ms = int(time.time() * 1000)
    for (t, p), msg in read_ranges(consumer, where, ranges, timeout):
        if transform(msg.headers(), t, p, msg.offset(), now_ms) is not None:
            n, _ = out[(t, p)]
            out[(t, p)] = (n + 1, msg.offset())
    return out


def first_copy_from(
    consumer: Consumer,
    where: str,
    topic: str,
    partition: int,
    start: int,
    end: int,
    origin: str,
    timeout: float = TIMEOUT,
) -> int | None:
    """The origin offset of the first record in ``[start, end)`` copied from ``origin``'s
    ``topic[partition]`` (provenance headers), or ``None``."""
    for _, msg in read_ranges(consumer, where, {(topic, partition): (start, end)}, timeout):
        headers = msg.headers()
        if origin_cluster(headers) != origin:
            continue
        try:
            prov = Provenance.from_headers(headers)
        except ValueError as e:
            raise RuntimeError(f"{where}/{topic}[{partition}]@{msg.offset()}: {e}") from None
        if prov is not None and prov.topic == topic and prov.partition == partition:
            return prov.offset
    return None

"""Where a flow's copy stands: its progress, kept in the target cluster.

Progress is the consumer-group offset of each (target topic, partition) in the flow's progress
group: the next source offset to copy, with metadata naming the source topic and the commit
time (:func:`~kafka_dr.core.progress.encode_metadata`). The copiers commit it with
``send_offsets_to_transaction`` in the same transaction as the records, so it is read
``read_committed`` (``require_stable``). Offsets are read with a consumer's ``committed()``,
never the admin ListConsumerGroupOffsets call (docs/replication.md#known-sharp-edge-found-on-the-way).
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.progress import decode_metadata
from kafka_dr.core.provenance import raw_fields
from kafka_dr.kafka.clients import SecretResolver, client_config
from kafka_dr.kafka.watermarks import watermarks

#: Answers of a group coordinator that is moving or still loading: worth waiting for.
COORDINATOR_BUSY = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
}


#: Answers for a partition that does not exist (any more).
MISSING = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION}


class ProgressUnstable(RuntimeError):
    """A ``read_committed`` progress read kept timing out (a pending transactional commit)."""


def unstable(e: KafkaException) -> bool:
    """Did a ``committed()`` read time out (how librdkafka reports UNSTABLE_OFFSET_COMMIT
    answers that never settle)?"""
    return e.args[0].code() == KafkaError._TIMED_OUT


def commit_with_retry(consumer: Consumer, tps: list[TopicPartition], timeout: float = 60.0) -> None:
    """``consumer.commit`` (synchronous) that waits while the coordinator is loading or moving."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            consumer.commit(offsets=tps, asynchronous=False)
            return
        except KafkaException as e:
            if e.args[0].code() not in COORDINATOR_BUSY or time.monotonic() >= deadline:
                raise
            time.sleep(0.5)


def committed_with_retry(consumer: Consumer, tps: list[TopicPartition], timeout: float) -> list[TopicPartition]:
    """``consumer.committed`` that waits while the coordinator is loading or moving (a cluster
    just started or restarted), up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return consumer.committed(tps, timeout=max(1.0, deadline - time.monotonic()))
        except KafkaException as e:
            if e.args[0].code() not in COORDINATOR_BUSY or time.monotonic() >= deadline:
                raise
            time.sleep(0.5)


def progress_reader(
    cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None, stable: bool = True
) -> Consumer:
    """A consumer in the flow's progress group on its target, that only reads its commits.

    ``stable``: its reads wait out a transaction holding a progress commit not yet committed
    (librdkafka asks for stable offsets under read_committed). A monitor passes False and gets
    the last committed progress at once: a job killed mid-transaction leaves its commit
    pending until the transaction times out, and that is when lag must be read."""
    conf = {
        "group.id": cfg.names.progress_group(flow.name),
        "enable.auto.commit": False,
        "isolation.level": "read_committed" if stable else "read_uncommitted",
    }
    return Consumer(client_config(cfg.cluster(flow.target), resolve, **conf))


def read_committed_progress(
    cfg: DrConfig,
    flow: FlowConfig,
    partitions: list[tuple[str, int]],
    resolve: SecretResolver | None = None,
    timeout: float = 60.0,
    consumer: Consumer | None = None,
) -> dict[tuple[str, int], dict]:
    """Committed progress for ``partitions`` ((target topic, partition) pairs): offset + metadata.
    ``consumer``: one of :func:`progress_reader` to ask with (kept open), instead of a new one.

    Read with a consumer's ``committed()``, which waits out a coordinator that is still
    loading: librdkafka 2.16's admin ListConsumerGroupOffsets crashes the process (SIGSEGV in
    rd_kafka_cgrp_op) on some coordinator errors, which a freshly started cluster answers.
    """
    if not partitions:
        return {}
    c = consumer or progress_reader(cfg, flow, resolve)
    try:
        tps = committed_with_retry(c, [TopicPartition(t, p) for t, p in partitions], timeout)
    except KafkaException as e:
        if unstable(e):
            named = ", ".join(f"{t}[{p}]" for t, p in partitions[:10]) + (" ..." if len(partitions) > 10 else "")
            raise ProgressUnstable(
                f"flow {flow.name}: reading progress on {flow.target}: no stable answer within {timeout:.0f}s for "
                f"{named} (a pending transactional commit no transaction owns? the replication job clears its own "
                f"when it starts)"
            ) from None
        raise RuntimeError(f"flow {flow.name}: reading progress on {flow.target}: {e.args[0].str()}") from None
    finally:
        if consumer is None:
            c.close()
    out = {}
    for tp in tps:
        if tp.error is not None:
            where = f"{tp.topic}[{tp.partition}] on {flow.target}"
            raise RuntimeError(f"flow {flow.name}: reading progress of {where}: {tp.error.str()}")
        if tp.offset >= 0:
            out[(tp.topic, tp.partition)] = {"next_offset": tp.offset, **decode_metadata(tp.metadata)}
    return out


def last_copied_offset(
    cfg: DrConfig,
    flow: FlowConfig,
    source_topic: str,
    target_topic: str,
    partition: int,
    resolve: SecretResolver | None = None,
    scan: int = 10_000,
    timeout: float = 60.0,
) -> int | None:
    """The highest source offset of ``source_topic[partition]`` found replicated by this flow
    in the last ``scan`` records of ``target_topic[partition]`` (provenance headers), or None.

    Only asked for partitions without committed progress, to tell a first run (no copies)
    from lost progress (copies, no progress). Copies sit in source order, so the newest is
    the highest; a target whose last ``scan`` records are all local writes is not looked past.
    """
    c = copy_scanner(cfg, flow, resolve)
    try:
        return last_copy(c, flow, (source_topic, target_topic, partition), scan, timeout)
    finally:
        c.close()


def last_copy(
    consumer: Consumer, flow: FlowConfig, pair: tuple[str, str, int], scan: int, timeout: float
) -> int | None:
    """:func:`last_copies` of one partition, read to its end or a :class:`TimeoutError`."""
    found, complete = last_copies(consumer, flow, [pair], scan, timeout)
    if not complete:
        where = f"{flow.target}/{pair[1]}[{pair[2]}]"
        raise TimeoutError(f"flow {flow.name}: scanning {where} for copies took over {timeout:.0f}s")
    return found[pair]


def copy_scanner(cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None) -> Consumer:
    """A consumer on the flow's target for :func:`last_copies` (assigns only, never commits)."""
    conf = {
        "group.id": cfg.names.progress_scan_group(flow.name),
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "enable.partition.eof": True,
    }
    return Consumer(client_config(cfg.cluster(flow.target), resolve, **conf))


def last_copies(
    consumer: Consumer, flow: FlowConfig, pairs: list[tuple[str, str, int]], window: int, timeout: float
) -> tuple[dict[tuple[str, str, int], int | None], bool]:
    """Per (source topic, target topic, partition): the highest source offset this flow copied
    found in the last ``window`` records of the target partition, read ``read_committed`` with
    ``consumer`` (of :func:`copy_scanner`); and whether every partition was read to its end
    within ``timeout`` (a transaction open on the target holds the read). What was found is a
    committed copy either way."""
    best: dict[tuple[str, str, int], int | None] = dict.fromkeys(pairs)
    wanted: dict[tuple[str, int], list[tuple[bytes, bytes, tuple[str, str, int]]]] = {}
    for pair in pairs:
        wanted.setdefault((pair[1], pair[2]), []).append((pair[0].encode(), str(pair[2]).encode(), pair))
    ends, start = {}, []
    for topic, partition in wanted:
        try:
            low, high = watermarks(consumer, TopicPartition(topic, partition), timeout)
        except KafkaException as e:
            if e.args[0].code() not in MISSING:
                raise
            continue  # no target partition (deleted mid-run?), no copy: the copy itself names it
        if high > low:
            ends[(topic, partition)] = high
            start.append(TopicPartition(topic, partition, max(low, high - window)))
    if not start:
        return best, True
    src, deadline = flow.source.encode(), time.monotonic() + timeout
    consumer.assign(start)
    try:
        while ends and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=5000, timeout=0.1):
                key = (m.topic(), m.partition())
                if m.error() is not None:
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        where = f"{flow.target}/{key[0]}[{key[1]}]"
                        raise RuntimeError(f"flow {flow.name}: scanning {where}: {m.error().str()}")
                    ends.pop(key, None)
                    continue
                if m.offset() + 1 >= ends.get(key, 0):
                    ends.pop(key, None)
                f = raw_fields(m.headers())
                if f is None or f[0] != src:
                    continue
                for topic_b, part_b, pair in wanted[key]:
                    if f[1] == topic_b and f[2] == part_b:
                        best[pair] = max(best[pair] if best[pair] is not None else -1, int(f[3] or b"-1"))
    finally:
        consumer.unassign()
    return best, not ends

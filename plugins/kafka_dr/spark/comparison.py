"""The comparison dataset: one row per flow topic-partition window with both sides' figures.

Records are read by Spark tasks, never by the driver: the windows are spread one per partition
of an RDD; a window's task reads the source's offset range, then the target's, with librdkafka
(``read_committed``) and keeps the window's figures as it goes
(:class:`~kafka_dr.core.window_tally.WindowTally`), with the same
code the replication uses for what is eligible (the flow's :class:`~kafka_dr.core.loop.Router`)
and the same identity and digest (:mod:`kafka_dr.core.dq`). A task yields one row: key, value
and headers never leave it, no per-record row is shuffled, and windows spread over the
executors' cores.

Why this and not Spark's JVM Kafka connector with joins: the connector would need the client
settings translated from librdkafka's names (SASL, SSL, secret references) into Java's and the
loop policy re-expressed in SQL, and a join of per-record rows costs a shuffle of every record
of both sides; copies sit on the target in source order, so one ordered pass per side finds
missing, duplicated, unexpected and out-of-order records exactly. Measured in
docs/data-quality.md. Why an RDD and not a PySpark data source: a data source is planned in
Python workers the driver starts first (seconds per run before the first task); an RDD of
windows has only the executors' tasks.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from kafka_dr.core.dq import COMPARISON_COLUMNS, PartitionWindow

#: the rows' columns: the comparison's, then the first target offset of a copy in flight
ROW_COLUMNS = (*COMPARISON_COLUMNS, "first_in_flight")
_IDLE_S = 120  # a range that yields nothing for this long while short of its end is an error

_configs: dict[str, object] = {}


def _config(text: str):
    """The config from its text, parsed once per Python worker."""
    from kafka_dr.core.config_load import parse_config_text

    cfg = _configs.get(text)
    if cfg is None:
        cfg = _configs[text] = parse_config_text(text)
    return cfg


def _compare_windows(config_text: str, latency_since_ms: int, windows: Iterable[PartitionWindow]) -> Iterator[dict]:
    """A task's windows compared, one row each."""
    for w in windows:
        row = compare_window(config_text, w, latency_since_ms)
        yield {c: row[c] for c in ROW_COLUMNS}


def compare_window(config_text: str, w: PartitionWindow, latency_since_ms: int) -> dict:
    """Read both sides of ``w`` and return its comparison row."""
    from kafka_dr.core.window_tally import WindowTally

    cfg = _config(config_text)
    tally = WindowTally(w, latency_since_ms)
    _read(cfg, w.source, w.topic, w, w.start, w.end, _source_feed(cfg, w, tally))
    end = w.target_end
    if w.compacted:
        # the target's cleaner may drop every planned record of a key rewritten since planning:
        # read what it holds now; records past the planned end are in flight (never "ours")
        end = max(end, _stable_end(cfg, w.target, w.target_topic, w.partition))
    _read(cfg, w.target, w.target_topic, w, w.target_start, end, _target_feed(w, tally))
    return tally.row()


def _read(cfg, cluster: str, topic: str, w: PartitionWindow, start: int, end: int, feed) -> None:
    """Feed ``topic[partition]`` on ``cluster`` from ``start`` to ``end`` to ``feed`` in
    batches of messages, in offset order."""
    try:
        _consume(cfg, cluster, topic, w.partition, start, end, feed)
    except Exception as e:  # noqa: BLE001 - confluent-kafka errors do not survive pickling
        raise RuntimeError(
            f"data quality: reading {cluster}/{topic}[{w.partition}] offsets {start}..{end}: {type(e).__name__}: {e}"
        ) from None


def _consume(cfg, cluster: str, topic: str, partition: int, start: int, end: int, feed) -> None:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    from kafka_dr.core.secret_refs import env_resolver
    from kafka_dr.kafka.clients import client_config

    if end <= start:
        return
    consumer = Consumer(
        client_config(
            cfg.cluster(cluster),
            env_resolver(),
            **{
                "group.id": cfg.names.reader_group("dq-reader"),
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
                "fetch.max.bytes": 64 * 1024 * 1024,
                "max.partition.fetch.bytes": 16 * 1024 * 1024,
                "queued.max.messages.kbytes": 256 * 1024,
            },
        )
    )
    tp = TopicPartition(topic, partition, start)
    consumer.assign([tp])
    try:
        idle_since = time.monotonic()
        while True:
            # a batch call waits its whole timeout unless it fills: short, or every window
            # smaller than a batch would cost that timeout on each side
            msgs = consumer.consume(num_messages=10_000, timeout=0.1)
            if not msgs:
                if _past(consumer, tp, end):
                    return
                if time.monotonic() - idle_since > _IDLE_S:
                    raise TimeoutError(f"no records for {_IDLE_S}s before offset {end}")
                continue
            idle_since = time.monotonic()
            batch, done = [], False
            for m in msgs:
                err = m.error()
                if err is not None and err.code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(err.str())
                if m.offset() >= end:
                    done = True
                    break
                if err is None:
                    batch.append(m)
            feed(batch)
            # past the end at the partition's end (EOF) too: waiting for a next record there
            # would cost a whole poll for every window that ends with a marker
            if done or (batch and batch[-1].offset() + 1 >= end) or _past(consumer, tp, end):
                return
    finally:
        consumer.close()


def _past(consumer, tp, end: int) -> bool:
    """Is the consumer's position at or past ``end``? ``read_committed`` delivers no transaction
    marker or aborted record, so a window that ends with one is read once the position is past it."""
    return consumer.position([tp])[0].offset >= end


def _source_feed(cfg, w: PartitionWindow, tally):
    """``feed(msgs)``: tally the flow's eligible records among messages of the window's source."""
    from kafka_dr.core.dq import identity, key_digest, read_origin, record_digest
    from kafka_dr.core.loop import router_for

    (flow,) = [f for f in cfg.flows if f.name == w.flow]
    transform = router_for(cfg, flow).transform()
    here, topic, p, compacted = w.source, w.topic, w.partition, w.compacted
    add = tally.source

    def feed(msgs) -> None:
        for m in msgs:
            headers = m.headers() or ()
            off = m.offset()
            if transform(headers, topic, p, off, 0) is None:
                continue  # not copied by the flow's loop policy
            ts = m.timestamp()[1]
            key, value = m.key(), m.value()
            ident = identity(read_origin(headers), here, topic, p, off) if headers else (here, topic, p, off)
            if compacted:
                add(off, ident, record_digest(key, value, headers, ts), key_digest(key), value is None)
            else:
                add(off, ident, record_digest(key, value, headers, ts))

    return feed


def _target_feed(w: PartitionWindow, tally):
    """``feed(msgs)``: tally every message of the window's target."""
    from kafka_dr.core.dq import Origin, identity, key_digest, read_origin, record_digest

    here, topic, p, compacted = w.target, w.target_topic, w.partition, w.compacted
    none = Origin()
    add = tally.target

    def feed(msgs) -> None:
        for m in msgs:
            headers = m.headers() or ()
            off = m.offset()
            ts = m.timestamp()[1]
            key = m.key()
            origin = read_origin(headers) if headers else none
            ident = identity(origin, here, topic, p, off)
            digest = record_digest(key, m.value(), headers, ts)
            add(off, origin, ident, digest, ts, key_digest(key) if compacted else None)

    return feed


def _stable_end(cfg, cluster: str, topic: str, partition: int) -> int:
    """The partition's last stable offset now (what a ``read_committed`` reader can reach)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    from kafka_dr.core.secret_refs import env_resolver
    from kafka_dr.kafka.clients import client_config
    from kafka_dr.kafka.topics import query_offsets

    admin = AdminClient(client_config(cfg.cluster(cluster), env_resolver()))
    return query_offsets(admin, {TopicPartition(topic, partition): OffsetSpec.latest()})[(topic, partition)]


def comparison_rows(spark, config_path: str, windows: list[PartitionWindow], latency_since_ms: int = 0) -> list[dict]:
    """One row per window with both sides' figures (``kind = 'partition'``), each window read by
    a Spark task of its own. Latency percentiles are over the copies first made at or after
    ``latency_since_ms``."""
    if not windows:
        return []
    # the text, not the path: an executor on another host has no file of it
    compare = functools.partial(_compare_windows, Path(config_path).read_text(encoding="utf-8"), latency_since_ms)
    return spark.sparkContext.parallelize(windows, len(windows)).mapPartitions(compare).collect()

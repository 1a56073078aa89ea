"""The comparison dataset: one row per flow topic-partition window with both sides' figures.

Records are read by Spark tasks, never by the driver: a PySpark batch data source
(``format("kafka_dr_dq_records")``) has one input partition per (flow, side, topic-partition);
its task reads that offset range with librdkafka (``read_committed``) and yields **Arrow
record batches** of small per-record facts, computed in Python with the same code the
replication uses (the flow's :class:`~kafka_dr.core.loop.Router` decides which source records
are eligible; :mod:`kafka_dr.core.dq` gives identity and digest). Key, value and headers never
become Spark rows; joins and aggregations (missing, duplicated, checksums, order, latency
percentiles) then run in the JVM over partitions.

Why this and not Spark's JVM Kafka connector: the connector would need the client settings
translated from librdkafka's names (SASL, SSL, secret references) into Java's, and the loop
policy re-expressed in SQL; here both stay the single implementation the copier uses.
Measured (docs/data-quality.md): 1M records per side in seconds on the lab.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kafka_dr.core.dq import PartitionWindow
from kafka_dr.spark.compacted import empty_key_columns, latest_per_key

RECORD_SCHEMA = (
    "flow string, topic string, partition long, side string, offset long, timestamp long, digest long, "
    "eligible boolean, id_cluster string, id_topic string, id_part long, id_offset long, origin_ts long, "
    "unexpected_candidate boolean, in_flight boolean, verified_copy boolean, self_origin boolean, malformed boolean, "
    "key_hash long, tombstone boolean"
)
_FIELDS = [f.strip().split(" ")[0] for f in RECORD_SCHEMA.split(",")]
BATCH = 100_000

_configs: dict[tuple, object] = {}


def _config(path: str):
    from kafka_dr.core.config_load import load_config

    key = (path, os.stat(path).st_mtime_ns)
    cfg = _configs.get(key)
    if cfg is None:
        cfg = _configs[key] = load_config(path)
    return cfg


class SideRange(InputPartition):
    """One side of one window: read ``topic[partition]`` on ``cluster`` from ``start`` to ``end``."""

    def __init__(self, side: str, cluster: str, topic: str, start: int, end: int, window: PartitionWindow) -> None:
        self.side, self.cluster, self.topic, self.start, self.end, self.window = (
            side,
            cluster,
            topic,
            start,
            end,
            window,
        )


class RecordsReader(DataSourceReader):
    def __init__(self, options: dict) -> None:
        self.options = dict(options)

    def partitions(self) -> list[InputPartition]:
        windows = [PartitionWindow(**d) for d in json.loads(self.options["windows"])]
        return side_ranges(windows)

    def read(self, part: SideRange) -> Iterator:
        try:
            yield from _read_side(self.options["config"], part)
        except Exception as e:  # noqa: BLE001 - confluent-kafka errors do not survive pickling
            raise RuntimeError(
                f"data quality: reading {part.cluster}/{part.topic}[{part.window.partition}] "
                f"offsets {part.start}..{part.end}: {type(e).__name__}: {e}"
            ) from None


class RecordsSource(DataSource):
    """Options: ``config`` (the kafka-dr YAML, readable by the tasks), ``windows`` (JSON list
    of :class:`~kafka_dr.core.dq.PartitionWindow` fields)."""

    @classmethod
    def name(cls) -> str:
        return "kafka_dr_dq_records"

    def schema(self) -> str:
        return RECORD_SCHEMA

    def reader(self, schema) -> DataSourceReader:
        return RecordsReader(self.options)


def _read_side(config_path: str, part: SideRange) -> Iterator:
    import pyarrow as pa
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    from kafka_dr.core.dq import identity, key_digest, read_origin, record_digest
    from kafka_dr.core.loop import router_for
    from kafka_dr.core.secret_refs import env_resolver
    from kafka_dr.kafka.clients import client_config

    cfg = _config(config_path)
    w = part.window
    source_side = part.side == "s"
    end = part.end
    if w.compacted and not source_side:
        # the target's cleaner may drop every planned record of a key rewritten since planning:
        # read what it holds now; records past the planned end are in flight (never "ours")
        end = max(end, _stable_end(cfg, part.cluster, part.topic, w.partition))
    if end <= part.start:
        return
    transform = None
    if source_side:
        (flow,) = [f for f in cfg.flows if f.name == w.flow]
        transform = router_for(cfg, flow).transform()
    consumer = Consumer(
        client_config(
            cfg.cluster(part.cluster),
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
    tp = TopicPartition(part.topic, w.partition, part.start)
    consumer.assign([tp])
    cols: dict[str, list] = {f: [] for f in _FIELDS}
    n = 0
    here, topic_b = part.cluster, part.topic
    flow_source, src_topic, p = w.source, w.topic, w.partition
    own = part.cluster
    try:
        done = False
        idle_since = time.monotonic()
        while not done:
            msgs = consumer.consume(num_messages=10_000, timeout=0.5)
            if not msgs:
                if consumer.position([TopicPartition(part.topic, p)])[0].offset >= end:
                    break  # read_committed stops short at markers/aborted records: the position is past the end
                if time.monotonic() - idle_since > 120:
                    raise TimeoutError(f"no records for 120s before offset {end}")
                continue
            idle_since = time.monotonic()
            for m in msgs:
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        if m.offset() >= end:
                            done = True
                            break
                        continue
                    raise RuntimeError(err.str())
                off = m.offset()
                if off >= end:
                    done = True
                    break
                headers = m.headers() or ()
                ts = m.timestamp()[1]
                origin = read_origin(headers)
                ident = identity(origin, here, topic_b, p, off)
                if source_side:
                    eligible = transform(headers, topic_b, p, off, 0) is not None
                    unexpected = in_flight = verified_copy = False
                else:
                    eligible = False
                    ours = (
                        origin.present
                        and not origin.malformed
                        and origin.cluster == flow_source
                        and origin.topic == src_topic
                        and origin.partition == p
                        and off < part.end
                    )
                    o = origin.offset
                    # a copy of a record an earlier run verified: a duplicate across runs
                    verified_copy = ours and w.verified_end is not None and o < w.verified_end
                    unexpected = verified_copy or (ours and ((w.start <= o < w.end) or o >= w.limit))
                    in_flight = ours and w.end <= o < w.limit
                cols["offset"].append(off)
                cols["timestamp"].append(ts)
                cols["digest"].append(record_digest(m.key(), m.value(), headers, ts))
                cols["eligible"].append(eligible)
                cols["id_cluster"].append(ident[0])
                cols["id_topic"].append(ident[1])
                cols["id_part"].append(ident[2])
                cols["id_offset"].append(ident[3])
                cols["origin_ts"].append(origin.first_replicated_ms)
                cols["unexpected_candidate"].append(unexpected)
                cols["in_flight"].append(in_flight)
                cols["verified_copy"].append(verified_copy)
                cols["self_origin"].append(origin.present and origin.cluster == own)
                cols["malformed"].append(origin.malformed)
                cols["key_hash"].append(key_digest(m.key()))
                cols["tombstone"].append(m.value() is None)
                n += 1
                if off + 1 >= end:
                    done = True
                    break
            if n >= BATCH:
                yield _batch(pa, cols, n, w, part.side)
                cols = {f: [] for f in _FIELDS}
                n = 0
        if n:
            yield _batch(pa, cols, n, w, part.side)
    finally:
        consumer.close()


def _stable_end(cfg, cluster: str, topic: str, partition: int) -> int:
    """The partition's last stable offset now (what a ``read_committed`` reader can reach)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    from kafka_dr.core.secret_refs import env_resolver
    from kafka_dr.kafka.clients import client_config
    from kafka_dr.kafka.topics import query_offsets

    admin = AdminClient(client_config(cfg.cluster(cluster), env_resolver()))
    return query_offsets(admin, {TopicPartition(topic, partition): OffsetSpec.latest()})[(topic, partition)]


def _batch(pa, cols: dict[str, list], n: int, w: PartitionWindow, side: str):
    cols["flow"] = [w.flow] * n
    cols["topic"] = [w.topic] * n
    cols["partition"] = [w.partition] * n
    cols["side"] = [side] * n
    types = {
        "flow": pa.string(),
        "topic": pa.string(),
        "side": pa.string(),
        "id_cluster": pa.string(),
        "id_topic": pa.string(),
        "eligible": pa.bool_(),
        "unexpected_candidate": pa.bool_(),
        "in_flight": pa.bool_(),
        "verified_copy": pa.bool_(),
        "self_origin": pa.bool_(),
        "malformed": pa.bool_(),
        "tombstone": pa.bool_(),
    }
    return pa.RecordBatch.from_arrays(
        [pa.array(cols[f], type=types.get(f, pa.int64())) for f in _FIELDS], names=_FIELDS
    )


def side_ranges(windows: list[PartitionWindow]) -> list[SideRange]:
    """Two ranges per window: the source's ``[start, end)`` and the target's
    ``[target_start, target_end)`` (read to its end at read time when compacted)."""
    out = []
    for w in windows:
        out.append(SideRange("s", w.source, w.topic, w.start, w.end, w))
        out.append(SideRange("t", w.target, w.target_topic, w.target_start, w.target_end, w))
    return out


def records_frame(spark, config_path: str, windows: list[PartitionWindow]):
    """The per-record facts of every window, both sides, as a DataFrame (read lazily by tasks)."""
    spark.dataSource.register(RecordsSource)
    return (
        spark.read.format("kafka_dr_dq_records")
        .option("config", str(Path(config_path).resolve()))  # tasks run in executors' own folders
        .option("windows", json.dumps([asdict(w) for w in windows]))
        .load()
    )


def comparison_frame(spark, config_path: str, windows: list[PartitionWindow], latency_since_ms: int = 0):
    """One row per window with both sides' figures (``kind = 'partition'``), computed by Spark;
    returned with the persisted per-record frame it is built on (unpersist it when done).
    Latency percentiles are over the copies first made at or after ``latency_since_ms``."""
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keys = ["flow", "topic", "partition"]
    ident = ["id_cluster", "id_topic", "id_part", "id_offset"]
    recs = records_frame(spark, config_path, windows).persist(StorageLevel.MEMORY_AND_DISK)  # read Kafka once
    src = recs.where((F.col("side") == "s") & F.col("eligible")).select(
        *keys, *ident, "digest", "key_hash", "tombstone", F.col("offset").alias("src_offset")
    )
    tgt = recs.where(F.col("side") == "t")

    # target copies matched to eligible source records, and the unexpected ones
    joined = tgt.join(src.select(*keys, *ident, "src_offset"), on=[*keys, *ident], how="left")
    matched = F.col("src_offset").isNotNull()
    in_comparison = joined.where(matched | F.col("unexpected_candidate"))
    order = Window.partitionBy(*keys).orderBy("offset")
    in_comparison = in_comparison.withColumn(
        "ooo",
        F.when(matched & (F.col("src_offset") < F.lag(F.when(matched, F.col("src_offset"))).over(order)), 1).otherwise(
            0
        ),
    )
    latency = F.when(
        matched & F.col("origin_ts").isNotNull() & (F.col("origin_ts") >= F.lit(latency_since_ms)),
        F.greatest(F.col("origin_ts") - F.col("timestamp"), F.lit(0)),
    )
    # no countDistinct beside percentile_approx: Spark's distinct-aggregate rewrite would merge
    # one quantile digest per row (minutes for a million records); count copies per key instead
    tside = in_comparison.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("target_count"),
        F.sum(F.col("digest").cast("decimal(38,0)")).alias("target_sum"),
        F.sum(F.when(matched | F.col("verified_copy"), 0).otherwise(1)).alias("unexpected"),
        F.sum(F.when(~matched & F.col("verified_copy"), 1).otherwise(0)).alias("recopied"),
        F.sum("ooo").alias("out_of_order"),
        F.percentile_approx(latency, 0.5).alias("latency_p50_ms"),
        F.percentile_approx(latency, 0.99).alias("latency_p99_ms"),
    )
    per_copy = in_comparison.where(matched).groupBy(*keys, "src_offset").agg(F.count(F.lit(1)).alias("n"))
    copies = per_copy.groupBy(*keys).agg(F.sum("n").alias("copies"), F.count(F.lit(1)).alias("distinct_copies"))
    inv = tgt.groupBy(*keys).agg(
        F.sum(F.col("self_origin").cast("long")).alias("self_origin"),
        F.sum(F.col("malformed").cast("long")).alias("malformed_provenance"),
        F.min(F.when(F.col("in_flight"), F.col("offset"))).alias("first_in_flight"),
    )
    sside = src.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("source_count"), F.sum(F.col("digest").cast("decimal(38,0)")).alias("source_sum")
    )

    plan = spark.createDataFrame(
        [
            (w.flow, w.source, w.target, w.topic, w.target_topic, w.partition, w.start, w.end, w.compacted)
            for w in windows
        ],
        "flow string, source string, target string, topic string, target_topic string, partition long, "
        "window_start long, window_end long, compacted boolean",
    )
    if any(w.compacted for w in windows):
        compacted_keys = plan.where("compacted").select(*keys)
        target = joined.withColumn("ours", matched | F.col("unexpected_candidate"))
        per_key = latest_per_key(src.join(compacted_keys, keys), target.join(compacted_keys, keys), keys)
        plan = plan.join(per_key, keys, "left")
    else:
        plan = plan.select("*", *empty_key_columns())
    z = F.lit(0).cast("long")
    dec0 = F.lit(0).cast("decimal(38,0)")

    def per_key_or(column: str, regular):  # compacted windows compare the latest record per key
        return F.when(F.col("compacted"), F.coalesce(F.col(column), dec0 if column.endswith("_sum") else z)).otherwise(
            regular
        )

    out = (
        plan.join(sside, keys, "left")
        .join(tside, keys, "left")
        .join(copies, keys, "left")
        .join(inv, keys, "left")
        .select(
            F.lit("partition").alias("kind"),
            "flow",
            "source",
            "target",
            "topic",
            "target_topic",
            "partition",
            "window_start",
            "window_end",
            per_key_or("k_source_count", F.coalesce("source_count", z)).alias("source_count"),
            per_key_or("k_target_count", F.coalesce("target_count", z)).alias("target_count"),
            per_key_or("k_missing", F.coalesce("source_count", z) - F.coalesce("distinct_copies", z)).alias("missing"),
            (F.coalesce("copies", z) - F.coalesce("distinct_copies", z) + F.coalesce("recopied", z)).alias(
                "duplicated"
            ),
            per_key_or("k_unexpected", F.coalesce("unexpected", z)).alias("unexpected"),
            F.coalesce("out_of_order", z).alias("out_of_order"),
            per_key_or("k_source_sum", F.coalesce(F.col("source_sum"), dec0)).cast("string").alias("source_checksum"),
            per_key_or("k_target_sum", F.coalesce(F.col("target_sum"), dec0)).cast("string").alias("target_checksum"),
            F.col("latency_p50_ms").cast("double").alias("latency_p50_ms"),
            F.col("latency_p99_ms").cast("double").alias("latency_p99_ms"),
            F.coalesce("self_origin", z).alias("self_origin"),
            F.coalesce("malformed_provenance", z).alias("malformed_provenance"),
            F.lit(None).cast("long").alias("differences"),
            F.lit(None).cast("string").alias("detail"),
            "first_in_flight",
        )
    )
    return out, recs


def comparison_rows(spark, config_path: str, windows: list[PartitionWindow], latency_since_ms: int = 0) -> list[dict]:
    """:func:`comparison_frame` computed: one small dict per window (records stay in Spark)."""
    frame, recs = comparison_frame(spark, config_path, windows, latency_since_ms)
    try:
        return [r.asDict() for r in frame.collect()]
    finally:
        recs.unpersist()

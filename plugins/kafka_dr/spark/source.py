"""The replication flow as a PySpark streaming data source (``format("kafka_dr_replication")``).

Design, measured before it was chosen (see docs/architecture.md): shipping each record
through Spark rows costs a Python -> JVM -> Python round trip per record (about 7k records/s
here), so the reader's tasks are *fused*: each task copies its source partition's offset range
straight to the target with confluent-kafka (:class:`~kafka_dr.kafka.copier.RangeCopier`) and
yields one summary row per range. Spark contributes what it is good at: planning micro-
batches, spreading partitions over executors, retrying failed tasks, and a query lifecycle.

Offsets are ``{topic: {partition: offset}}``. The initial offset is the flow's committed
progress on the target (or the log start for a partition never copied), so the job does not
depend on Spark's checkpoint: progress is committed in Kafka transactions with the records.

Options: ``config`` (path of the kafka-dr YAML, readable on executors), ``flow`` (name),
``allow_reset`` ("true" to start a partition whose progress was lost from its planned start),
``chunk_records``.
"""

from __future__ import annotations

import json
from typing import Iterator

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

SCHEMA = (
    "flow string, topic string, partition int, target_topic string, planned_start long, start long, end long, "
    "read long, written long, filtered long, bytes long, lost_to_retention long, first_target_offset long, "
    "last_target_offset long, latency_p50_ms double, latency_p99_ms double, transactions int, seconds double, "
    "dead_lettered long, lag long"
)
FIELDS = [f.strip().split(" ")[0] for f in SCHEMA.split(",")]

_copiers: dict[tuple, object] = {}


def _load(options: dict) -> tuple:
    from kafka_dr.core.config_load import load_config

    cfg = load_config(options["config"])
    flows = {f.name: f for f in cfg.flows}
    if options["flow"] not in flows:
        raise ValueError(f"no flow named {options['flow']!r} in {options['config']} (flows: {', '.join(flows)})")
    return cfg, flows[options["flow"]]


def _resolver():
    from kafka_dr.core.secret_refs import env_resolver

    return env_resolver()


def _plain_errors(fn):
    """Re-raise any failure as a plain ``RuntimeError`` carrying its message.

    Spark ships a data-source exception back to the JVM by pickling it; confluent-kafka's
    ``KafkaException`` wraps a C ``KafkaError`` that does not survive that, and the Python
    runner then dies with nothing but an EOFException on the JVM side."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - re-raised with its message
            if type(e).__module__.startswith(("confluent_kafka", "cimpl")):
                raise RuntimeError(f"{type(e).__name__}: {e}") from None
            raise

    return wrapper


class RangePartition(InputPartition):
    def __init__(self, topic: str, partition: int, start: int, end: int, target_topic: str) -> None:
        self.topic, self.partition, self.start, self.end, self.target_topic = topic, partition, start, end, target_topic


class ReplicationStreamReader(DataSourceStreamReader):
    def __init__(self, options: dict) -> None:
        self.options = dict(options)
        self._planner = None

    def _plan(self):
        if self._planner is None:
            from kafka_dr.kafka.planner import FlowPlanner

            cfg, flow = _load(self.options)
            self._planner = FlowPlanner(cfg, flow, _resolver())
        return self._planner

    @_plain_errors
    def initialOffset(self) -> dict:
        from kafka_dr.core.progress import lost_progress_starts
        from kafka_dr.kafka.copier import last_copied_offset, read_committed_progress

        planner = self._plan()
        offsets = planner.earliest()
        wanted = [(planner.target_topic(t), int(p)) for t, parts in offsets.items() for p in parts]
        by_target = read_committed_progress(planner.cfg, planner.flow, wanted, _resolver())
        missing = {}
        for topic, parts in offsets.items():
            target = planner.target_topic(topic)
            for p in parts:
                done = by_target.get((target, int(p)))
                if done is not None:
                    parts[p] = max(parts[p], done["next_offset"])
                else:
                    last = last_copied_offset(planner.cfg, planner.flow, topic, target, int(p), _resolver())
                    missing[(topic, int(p))] = None if last is None else (target, last)
        allow = self.options.get("allow_reset", "false").lower() == "true"
        for (topic, p), start in lost_progress_starts(planner.flow.name, planner.flow.target, missing, allow).items():
            offsets[topic][str(p)] = max(offsets[topic][str(p)], start)
        return offsets

    @_plain_errors
    def latestOffset(self, start: dict, limit) -> dict:
        latest = self._plan().latest()
        cap = int(self.options.get("max_records_per_batch") or 0)
        # A partition never goes backwards in the plan (a truncated or recreated topic is
        # the copier's business to report, not the planner's to rewind).
        for topic, parts in latest.items():
            for p, off in parts.items():
                prev = start.get(topic, {}).get(p)
                if prev is not None and off < prev:
                    parts[p] = prev
                elif prev is not None and cap > 0:
                    parts[p] = min(off, prev + cap)  # like Spark's maxOffsetsPerTrigger, per partition
        return latest

    @_plain_errors
    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        planner = self._plan()
        out = []
        for topic, parts in sorted(end.items()):
            for p, e in sorted(parts.items(), key=lambda kv: int(kv[0])):
                s = start.get(topic, {}).get(p, 0)
                if e > s:
                    out.append(RangePartition(topic, int(p), s, e, planner.target_topic(topic)))
        return out

    def read(self, partition: RangePartition) -> Iterator[tuple]:
        d = self._copy(partition)
        yield tuple(d[f] for f in FIELDS)

    @_plain_errors
    def _copy(self, partition: RangePartition) -> dict:
        from kafka_dr.kafka.copier import RangeCopier, RangeSpec

        import os

        # keyed by the file's mtime too: a rewritten config gets a fresh copier
        # and by the options a copier is built with (a --reset-progress run must not reuse a strict one)
        key = (self.options["config"], self.options["flow"], os.stat(self.options["config"]).st_mtime_ns,
               self.options.get("allow_reset", "false"), self.options.get("chunk_records", "50000"))
        copier = _copiers.get(key)
        if copier is None:
            cfg, flow = _load(self.options)
            copier = RangeCopier(cfg, flow, _resolver(), chunk_records=int(self.options.get("chunk_records", 50_000)),
                                 allow_reset=self.options.get("allow_reset", "false").lower() == "true")
            _copiers[key] = copier
        r = copier.copy(RangeSpec(partition.topic, partition.partition, partition.start, partition.end, partition.target_topic))
        return r.to_dict()

    def commit(self, end: dict) -> None:
        pass  # progress is committed by the tasks, inside their Kafka transactions

    def stop(self) -> None:
        pass


class ReplicationSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kafka_dr_replication"

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema) -> DataSourceStreamReader:
        return ReplicationStreamReader(self.options)


def offsets_json(offsets: dict) -> str:
    return json.dumps(offsets, sort_keys=True)

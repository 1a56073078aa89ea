"""The replication flow as a PySpark streaming data source (``format("kafka_dr_replication")``).

Tasks are *fused*: each copies its offset ranges (a share of the micro-batch's, one per
source partition, ``range_tasks``) straight to the target with confluent-kafka
(:class:`~kafka_dr.kafka.copier.RangeCopier`) and yields one metrics row per range, because a
record shipped as a Spark row crosses Python -> JVM -> Python (docs/replication.md, "How a
micro-batch runs"). Offsets are ``{topic: {partition: offset}}``; the initial offset is the
flow's committed progress on the target, so the job needs no Spark checkpoint. Continuous
flows run *streaming tasks* (``task_seconds`` > 0): ``tasks`` tasks attached to background
copies (:mod:`kafka_dr.spark.streams`); a batch's Spark end offsets are then lower bounds of
what was copied, and the committed progress is the truth.

Options: ``config`` (path of the kafka-dr YAML, readable on executors), ``flow`` (name),
``allow_reset`` ("true" to start a partition whose progress was lost from its planned start),
``chunk_records``, ``max_records_per_batch``, ``task_seconds``, ``tasks``, ``commit_seconds``,
``transactions`` (``task``: one task copies all partitions in one transaction at a time;
``partition``: a transaction per partition), ``stop_marker``, ``range_tasks`` (fixed-range
micro-batches: the ranges are shared out among this many tasks, each copying its ranges one
after another (:mod:`kafka_dr.core.task_shares`); 0: a task per range).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from kafka_dr.spark.timeline import mark_once

SCHEMA = (
    "flow string, topic string, partition int, target_topic string, planned_start long, start long, end long, "
    "read long, written long, filtered long, bytes long, lost_to_retention long, "
    "latency_p50_ms double, latency_p99_ms double, transactions int, seconds double, "
    "dead_lettered long, lag long, lost_first long, lost_last long, aborted long, refused long"
)
FIELDS = [f.strip().split(" ")[0] for f in SCHEMA.split(",")]

_copiers: dict[tuple, object] = {}

#: With streaming tasks, a key of the offsets that is no topic (Kafka topic names cannot hold
#: ``#``): a batch counter, so every trigger plans a micro-batch, new records or not.
BATCH_KEY = "#batch"


def config_text(options: dict) -> str:
    """The config the job read on its driver, as text (``config_text``): an executor on another
    host has no file of it. A reader built outside a job (the tests') names only the file."""
    text = options.get("config_text")
    return text if text is not None else Path(options["config"]).read_text(encoding="utf-8")


def _load(options: dict) -> tuple:
    from kafka_dr.core.config_load import parse_config_text

    cfg = parse_config_text(config_text(options), source=options["config"])
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


class RangeShare(InputPartition):
    """A fixed-range task's share: its ranges, copied one after another by one copier."""

    def __init__(self, ranges: list[RangePartition]) -> None:
        self.ranges = ranges


class StreamPartition(InputPartition):
    """A streaming task's share: ``ranges`` of (topic, partition, planned start, target topic);
    ``whole``: all of the flow's partitions, copied in one transaction at a time."""

    def __init__(self, ranges: list[tuple[str, int, int, str]], seconds: float, whole: bool = False) -> None:
        self.ranges, self.seconds, self.whole = ranges, seconds, whole


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
        from kafka_dr.kafka.flow_start import start_offsets

        mark_once("planner up")
        offsets = start_offsets(self._plan(), _resolver(), self.options.get("allow_reset", "false").lower() == "true")
        mark_once("progress read")
        return offsets

    def _streaming(self) -> bool:
        return float(self.options.get("task_seconds") or 0) > 0

    @_plain_errors
    def latestOffset(self, start: dict, limit) -> dict:
        """The source's end offsets, never behind ``start`` and capped by ``max_records_per_batch``.
        With streaming tasks, also a batch count one past the start's, so Spark plans a
        micro-batch at every trigger, new records or not: the copy runs only while tasks attach
        to it, and a copy still behind when the source goes quiet must keep a task until it has
        caught up (docs/replication.md). A batch with nothing to copy costs one idle task."""
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
        if latest and self._streaming():
            latest[BATCH_KEY] = {"n": int(start.get(BATCH_KEY, {}).get("n", 0)) + 1}
        return latest

    @_plain_errors
    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        mark_once("first plan")
        planner = self._plan()
        seconds = float(self.options.get("task_seconds") or 0)
        end = {topic: parts for topic, parts in end.items() if topic != BATCH_KEY}
        if seconds > 0:  # streaming tasks: every partition, open-ended, spread over the tasks
            ranges = [
                (topic, int(p), start.get(topic, {}).get(p, 0), planner.target_topic(topic))
                for topic, parts in sorted(end.items())
                for p in sorted(parts, key=int)
            ]
            n = max(1, min(int(self.options.get("tasks") or 1), len(ranges)))
            whole = int(self.options.get("tasks") or 1) == 1 and self.options.get("transactions", "task") == "task"
            return [StreamPartition(ranges[i::n], seconds, whole) for i in range(n)] if ranges else []
        out = []
        for topic, parts in sorted(end.items()):
            for p, e in sorted(parts.items(), key=lambda kv: int(kv[0])):
                s = start.get(topic, {}).get(p, 0)
                if e > s:
                    out.append(RangePartition(topic, int(p), s, e, planner.target_topic(topic)))
        tasks = int(self.options.get("range_tasks") or 0)
        if tasks <= 0:
            return out
        from kafka_dr.core.task_shares import balanced_shares

        return [RangeShare([out[i] for i in share]) for share in balanced_shares([r.end - r.start for r in out], tasks)]

    def read(self, partition) -> Iterator[tuple]:
        from kafka_dr.spark.warmup import import_output_path_in_background

        mark_once("task started")
        # beside the copier's start, not when the rows go back nor before the copy (see there)
        import_output_path_in_background(lambda: mark_once("task warmed"))
        yield from self.rows(partition)

    def rows(self, partition) -> Iterator[tuple]:
        """Copy ``partition`` (a range, a share of ranges, or a streaming task's partitions):
        one metrics row per range, as tuples of :data:`FIELDS`."""
        if isinstance(partition, StreamPartition):
            rows = self._stream(partition)
        elif isinstance(partition, RangeShare):
            rows = (self._copy(r) for r in partition.ranges)
        else:
            rows = [self._copy(partition)]
        for d in rows:
            yield tuple(d[f] for f in FIELDS)

    def _copier_key(self, stream_key: tuple = ()) -> tuple:
        from kafka_dr.kafka.copy_tuning import JOB_CHUNK_RECORDS

        o = self.options
        return (
            config_text(o),
            o["flow"],
            o.get("allow_reset", "false"),
            o.get("chunk_records", str(JOB_CHUNK_RECORDS)),
            *((o.get("commit_seconds", "0.1"), *stream_key) if stream_key else ()),
        )

    def _forget_copier(self, stream_key: tuple) -> None:
        _copiers.pop(self._copier_key(stream_key), None)

    def _copier(self, stream_key: tuple = ()):
        """This Python worker's copier for these options (a streaming task's: one per partition,
        as each thread needs its own consumer, or one for a whole task). Keyed by the config's
        text too (a rewritten config gets a fresh copier) and by the options it is built
        with (a --reset-progress run must not reuse a strict one)."""
        from kafka_dr.kafka.copier import RangeCopier
        from kafka_dr.kafka.copy_tuning import JOB_CHUNK_RECORDS, CopyTuning
        from kafka_dr.kafka.task_copier import TaskCopier
        from kafka_dr.spark.streams import TASK

        o = self.options
        key = self._copier_key(stream_key)
        copier = _copiers.get(key)
        if copier is None:
            cfg, flow = _load(o)
            seconds = float(o.get("commit_seconds") or 0.1)
            records, reset = (
                int(o.get("chunk_records", JOB_CHUNK_RECORDS)),
                o.get("allow_reset", "false").lower() == "true",
            )
            if stream_key == (TASK,):
                copier = TaskCopier(
                    cfg, flow, _resolver(), chunk_records=records, chunk_seconds=seconds, allow_reset=reset
                )
            else:
                tuning = CopyTuning.streaming(records, seconds) if stream_key else CopyTuning.backlog(records)
                copier = RangeCopier(cfg, flow, _resolver(), tuning=tuning, allow_reset=reset)
            _copiers[key] = copier
            mark_once("copier ready")
        return copier

    @_plain_errors
    def _copy(self, partition: RangePartition) -> dict:
        from kafka_dr.kafka.copy_spec import RangeSpec

        r = self._copier().copy(
            RangeSpec(partition.topic, partition.partition, partition.start, partition.end, partition.target_topic)
        )
        return r.to_dict()

    @_plain_errors
    def _stream(self, part: StreamPartition) -> list[dict]:
        """A streaming task: its partitions' background copies (:mod:`kafka_dr.spark.streams`),
        attached for ``part.seconds``; one row per partition of what they committed meanwhile."""
        from kafka_dr.spark.streams import run_task

        return run_task(
            part.ranges,
            part.seconds,
            self.options.get("stop_marker") or None,
            self._copier_key(("stream",)),
            self._copier,
            self._forget_copier,
            self.options["flow"],
            whole=getattr(part, "whole", False),
        )

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

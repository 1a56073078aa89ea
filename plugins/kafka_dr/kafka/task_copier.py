"""Copy all of a streaming task's partitions in one transaction at a time, exactly once.

Why: a continuous flow's latency is set by its transactions; one producer, consumer and
transaction for all partitions beats one per partition (:class:`~kafka_dr.kafka.copier.RangeCopier`)
on brokers that also serve the load (docs/benchmarks.md#settings). Exactly-once, one id per task:

1. The producer's ``transactional.id`` is fixed per flow (``InternalNames.task_transactional_id``):
   a new task copier fences any earlier one, a zombie of a stopped query included.
2. Every new producer then fences the per-partition ids of its partitions
   (:func:`~kafka_dr.kafka.transactions.fence`), which fence the task id in turn; only then is
   committed progress read.
3. Each transaction holds every partition's records read since the last one and their progress.

Only for one streaming task per flow (``--tasks 1``): several task ids fence nothing of each other.
A refused record or "offset out of range" is handed to a :class:`RangeCopier` over the same offsets.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.loop import router_for
from kafka_dr.core.progress import ProgressLost, encode_metadata, resume_offset
from kafka_dr.kafka import permissions
from kafka_dr.kafka.clients import SecretResolver, client_config
from kafka_dr.kafka.copier import RangeCopier
from kafka_dr.kafka.copy_errors import PRODUCER_LOST, TARGET_UNAVAILABLE, ProducerLost, producer_lost, target_missing
from kafka_dr.kafka.copy_spec import COUNTED, OnCommit, RangeResult, RangeSpec
from kafka_dr.kafka.copy_tuning import JOB_CHUNK_RECORDS, CopyTuning, read_wait
from kafka_dr.kafka.gc_pause import gc_paused
from kafka_dr.kafka.orphaned_offsets import read_progress
from kafka_dr.kafka.progress_floor import floor_at_copies
from kafka_dr.kafka.progress_store import copy_scanner
from kafka_dr.kafka.target_limits import TargetLimits, size_refusal
from kafka_dr.kafka.transactions import (
    OFFSETS_CALL_SECONDS,
    Reports,
    abort_quietly,
    discard,
    fence,
    resume_abort,
    transactional_producer,
    watched_call,
)
from kafka_dr.kafka.watermarks import watermarks

log = logging.getLogger(__name__)

Key = tuple[str, int]

#: How long a read waits for a first record when nothing is fetched (``poll``'s timeout);
#: a read that finds records fetched takes them at once (:func:`read_fetched`).
READ_SECONDS = 0.01

#: ``fetch.wait.max.ms`` of the task's consumer (with ``fetch.min.bytes`` 256 KiB): under a steady
#: load the fetches batch the records, a transaction holds what one fetch brought, and a record
#: waits at most one hold and one commit (docs/benchmarks.md#settings)
FETCH_HOLD_MS = 16

#: records taken by one read at most
READ_MAX = 5000


def read_fetched(source: Consumer, wait: float) -> list:
    """The records ``source`` has fetched, without waiting when there are some; otherwise the
    first one to arrive within ``wait`` seconds together with whatever came with it.

    Why not ``consume(n, wait)``: below ``n`` records it returns only once ``wait`` is up, so
    every record would wait out the read window after it had been fetched."""
    msgs = source.consume(num_messages=READ_MAX, timeout=0)
    if msgs:
        return msgs
    first = source.poll(wait)
    if first is None:
        return []
    return [first, *source.consume(num_messages=READ_MAX - 1, timeout=0)]


@dataclass
class _Part:
    """One partition of the task: its range, its running result, where its copy stands."""

    spec: RangeSpec
    result: RangeResult
    position: int  #: the next source offset to copy (committed)
    first: int = -1  #: the first offset of the open transaction's records (-1: none yet)
    next: int = -1  #: the offset after the open transaction's last record read
    counts: list = field(
        default_factory=lambda: [0, 0, 0, 0]
    )  #: read, written, filtered, bytes in the open transaction
    latencies: list = field(default_factory=list)


class _HandOff(Exception):
    """Leave the open chunk to the per-partition copier: ``reset`` names a partition the source
    answered "offset out of range" for; ``size``: the target refused a record for its size."""

    def __init__(self, reason: str, reset: Key | None = None, size: bool = False) -> None:
        super().__init__(reason)
        self.reset, self.size = reset, size


class TaskCopier:
    """Copies open ranges of many partitions of one flow with one producer and one consumer
    (see the module docstring). One instance per Python worker and flow; not thread-safe: one
    thread copies at a time."""

    def __init__(
        self,
        cfg: DrConfig,
        flow: FlowConfig,
        resolve: SecretResolver | None = None,
        chunk_records: int = JOB_CHUNK_RECORDS,
        chunk_seconds: float = 0.1,
        allow_reset: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cfg, self.flow, self.resolve = cfg, flow, resolve
        self.chunk_records, self.chunk_seconds, self.allow_reset, self.clock = (
            chunk_records,
            chunk_seconds,
            allow_reset,
            clock,
        )
        self.read_seconds = min(READ_SECONDS, read_wait(chunk_seconds))
        self.fetch_hold_ms = max(1, min(FETCH_HOLD_MS, round(chunk_seconds * 800)))
        self.transform = router_for(cfg, flow).transform()
        self.group = cfg.names.progress_group(flow.name)
        self.txn_id = cfg.names.task_transactional_id(flow.name)
        #: the target topics' size limits, shared with the helper (kafka_dr.kafka.target_limits)
        self.limits = TargetLimits(cfg.cluster(flow.target), resolve)
        #: copies the chunks this copier leaves to per-partition transactions (module docstring)
        tuning = CopyTuning(chunk_records=chunk_records)
        self.helper = RangeCopier(
            cfg,
            flow,
            resolve,
            tuning=tuning,
            allow_reset=allow_reset,
            clock=clock,
            fence_task_streams=False,
            limits=self.limits,
        )
        self._producer: Producer | None = None
        self._sizing: dict[str, int] | None = None  #: the batch sizing the producer was built with
        self._reports = Reports()
        self._source: Consumer | None = None
        self._meta: Consumer | None = None
        self._scan: Consumer | None = None  #: reads the target's newest copies (kafka_dr.kafka.progress_floor)
        self._kept: dict[Key, int] = {}  #: assignment left in place by the last copy (partition -> next offset)

    # --- clients ---------------------------------------------------------------------

    def _producer_for(self, specs: list[RangeSpec]) -> Producer:
        """The task's producer, its batches within every target topic's limit; built again when a
        limit changed or a topic with a lower one joined."""
        topics = [
            *(s.target_topic for s in specs),
            *([self.flow.dead_letter_topic] if self.flow.dead_letter_topic else []),
        ]
        sizing = self.limits.sizing(topics)
        if self._producer is not None and sizing != self._sizing:
            self._drop_producer()
        if self._producer is None:
            self._reports = Reports()
            self._producer = transactional_producer(
                self.cfg, self.flow, self.resolve, self.txn_id, self._reports, overrides=sizing
            )
            self._sizing = sizing
            fence(
                self.cfg,
                self.flow,
                self.resolve,
                [self.cfg.names.transactional_id(self.flow.name, s.topic, s.partition) for s in specs],
            )
            self.helper.close()  # its producers were just fenced
        return self._producer

    def _drop_producer(self) -> None:
        p, self._producer = self._producer, None
        discard(p)

    def _source_consumer(self) -> Consumer:
        if self._source is None:
            # the per-partition copier's source settings; no partition EOF events (an open range
            # never ends), and the broker holds a fetch (FETCH_HOLD_MS, within a chunk's time)
            self._source = Consumer(
                {
                    **self.helper.source_consumer_config(),
                    "enable.partition.eof": False,
                    "fetch.wait.max.ms": self.fetch_hold_ms,
                    "fetch.min.bytes": 256 * 1024,
                }
            )
        return self._source

    def _progress_consumer(self) -> Consumer:
        if self._meta is None:
            self._meta = Consumer(
                client_config(
                    self.cfg.cluster(self.flow.target),
                    self.resolve,
                    **{"group.id": self.group, "enable.auto.commit": False, "isolation.level": "read_committed"},
                )
            )
        return self._meta

    def _scanner(self) -> Consumer:
        if self._scan is None:
            self._scan = copy_scanner(self.cfg, self.flow, self.resolve)
        return self._scan

    def release(self) -> None:
        """Let the producers go, keeping the consumers: the copy ended, and whoever copies next
        (here or in another worker) starts by fencing with a fresh producer (kafka_dr.spark.streams)."""
        self._drop_producer()
        self.helper.release()

    def close(self) -> None:
        self._drop_producer()
        for c in (self._source, self._meta, self._scan):
            if c is not None:
                c.close()
        self._source = self._meta = self._scan = None
        self._kept = {}
        self.helper.close()

    def lag(self, spec: RangeSpec, position: int) -> int:
        """Source records after ``position``, by the high watermark of the last fetch (no round trip)."""
        _, high = self._source_consumer().get_watermark_offsets(TopicPartition(spec.topic, spec.partition), cached=True)
        return max(0, high - position)

    # --- the copy ----------------------------------------------------------------------

    def copy(
        self,
        specs: list[RangeSpec],
        until: Callable[[], bool],
        on_commit: OnCommit | None = None,
        may_redo: Callable[[], bool] | None = None,
    ) -> list[RangeResult]:
        """Copy the open ranges ``specs`` until the first transaction that ends once ``until()``
        is true. ``on_commit(result, next_offset, latencies)`` is called per partition once its
        start is known and after every transaction that held its records. ``may_redo()`` false:
        a fenced or lost producer ends the copy (raised) instead of a redo with a fresh one."""
        results: dict[Key, RangeResult] = {}
        fresh_producers = 2
        while True:
            try:
                return self._copy(specs, results, until, on_commit)
            except Exception as e:
                self._drop_producer()
                self._kept = {}
                if fresh_producers > 0 and producer_lost(e) and (may_redo is None or may_redo()):
                    log.warning(
                        "flow %s: the task's producer was fenced or failed (%s); going on with a fresh one",
                        self.flow.name,
                        e,
                    )
                    fresh_producers -= 1
                    continue
                raise

    def _copy(
        self,
        specs: list[RangeSpec],
        results: dict[Key, RangeResult],
        until: Callable[[], bool],
        on_commit: OnCommit | None,
    ) -> list[RangeResult]:
        keys = [(s.topic, s.partition) for s in specs]
        producer = self._producer_for(specs)  # fences zombies first
        source = self._source_consumer()
        parts = self._start(specs, results, on_commit)
        if self._kept != {k: p.position for k, p in parts.items()}:
            source.assign([TopicPartition(t, p, parts[(t, p)].position) for t, p in keys])
        self._kept = {}
        group_meta = self._progress_consumer().consumer_group_metadata()
        try:
            while not until():
                producer.begin_transaction()
                self._reports.failures.clear()
                try:
                    with gc_paused():  # as the per-partition copier's loop (kafka_dr.kafka.gc_pause)
                        touched = self._fill(producer, source, parts, until)
                    if not touched:
                        producer.commit_transaction(30)  # nothing read: an empty transaction ends locally
                        continue
                    self._commit(producer, group_meta, touched)
                except _HandOff as h:
                    self._hand_off(producer, source, parts, h, on_commit)
                    if h.size:  # a limit lowered since the producer sized its batches: a fresh one sizes them again
                        self.limits.refresh({s.target_topic for s in specs})
                        producer = self._producer_for(specs)
                    continue
                for p in touched:
                    self._done(p, on_commit)
        except BaseException:
            source.unassign()
            raise
        self._kept = {k: p.position for k, p in parts.items()}
        for p in parts.values():
            p.result.end = p.position
            p.result.lag = self.lag(p.spec, p.position)
        return [p.result for p in parts.values()]

    def _start(
        self, specs: list[RangeSpec], results: dict[Key, RangeResult], on_commit: OnCommit | None
    ) -> dict[Key, _Part]:
        """Where each partition starts: committed progress (read after the fencing), as the
        per-partition copier decides it (:func:`~kafka_dr.core.progress.resume_offset`)."""
        committed = self._committed(specs)
        parts: dict[Key, _Part] = {}
        for s in specs:
            key, c = (s.topic, s.partition), committed[(s.topic, s.partition)]
            low = self.helper.log_start(s) if c is None else 0
            try:
                start = resume_offset(c, self.helper.planned_start(s, c, low), low, self.allow_reset)
            except ProgressLost as e:
                raise ProgressLost(
                    f"flow {self.flow.name}: {self.flow.source}/{s.topic}[{s.partition}] -> "
                    f"{self.flow.target}/{s.target_topic}[{s.partition}]: {e} (was the target topic deleted?)"
                ) from None
            r = results.get(key)
            if r is None:
                r = results[key] = RangeResult(
                    self.flow.name, s.topic, s.partition, s.target_topic, s.start, start, s.end
                )
            self.helper.first_run_gaps.check(
                s, c, low, start, r
            )  # the helper's memory: a hand-off does not report it again
            parts[key] = _Part(s, r, start)
            if on_commit is not None:
                on_commit(r, start, [])
        return parts

    def _committed(self, specs: list[RangeSpec]) -> dict[Key, int | None]:
        """Committed progress of every partition, in one read; an orphaned pending commit of the
        task id is cleared with the task's producer (:func:`read_progress`), and progress behind
        the copies on the target moved up to them (:func:`floor_at_copies`)."""
        progress = read_progress(
            self.cfg,
            self.flow,
            self._progress_consumer(),
            lambda: self._producer,
            [(s.topic, s.target_topic, s.partition) for s in specs],
            self.resolve,
        )
        progress = floor_at_copies(
            self.flow,
            self._scanner(),
            lambda topic, partition: watermarks(self._source_consumer(), TopicPartition(topic, partition), 30)[1],
            lambda: self._producer,
            self._progress_consumer().consumer_group_metadata(),
            progress,
        )
        return {(topic, partition): v for (topic, _, partition), v in progress.items()}

    def _fill(
        self, producer: Producer, source: Consumer, parts: dict[Key, _Part], until: Callable[[], bool]
    ) -> list[_Part]:
        """Read and produce one transaction's records, over every partition: until what was
        fetched is read (a read returned fewer than asked for: the group commit of the
        per-partition copier), ``chunk_records`` are read or ``chunk_seconds`` are up."""
        transform, produce = self.transform, producer.produce
        wait, deadline = self.read_seconds, time.monotonic() + self.chunk_seconds
        touched: list[_Part] = []
        read = 0
        while True:
            msgs = read_fetched(source, wait)
            now_ms = int(self.clock() * 1000)
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    key = (msg.topic(), msg.partition())
                    if err.code() == KafkaError._AUTO_OFFSET_RESET and key in parts:
                        raise _HandOff("offset out of range on the source", reset=key)
                    if permissions.is_denied(err):
                        raise permissions.in_flow(self.flow.name, permissions.read_refused(self.flow.source, key[0]))
                    raise RuntimeError(f"flow {self.flow.name}: reading {key[0]}[{key[1]}]: {err.str()}")
                topic, partition, off = msg.topic(), msg.partition(), msg.offset()
                p = parts[(topic, partition)]
                if p.first < 0:
                    p.first = off
                    touched.append(p)
                p.next = off + 1
                c = p.counts
                c[0] += 1
                read += 1
                out = transform(msg.headers(), topic, partition, off, now_ms)
                if out is None:
                    c[2] += 1
                    continue
                ts = msg.timestamp()[1]
                if not read & 15:
                    p.latencies.append(now_ms - ts)
                key_b, value = msg.key(), msg.value()
                try:
                    produce(p.spec.target_topic, value, key_b, partition, timestamp=ts, headers=out)
                except BufferError:
                    self._produce_when_room(producer, p.spec.target_topic, partition, key_b, value, out, ts)
                except KafkaException as e:
                    if producer_lost(e):
                        raise ProducerLost(
                            f"flow {self.flow.name}: the task's producer was fenced or failed: {e.args[0].str()}"
                        ) from None
                    raise _HandOff(e.args[0].str(), size=size_refusal(e.args[0])) from None
                c[1] += 1
                if value:
                    c[3] += len(value)
                if key_b:
                    c[3] += len(key_b)
            if (
                read >= self.chunk_records
                or time.monotonic() >= deadline
                or (len(msgs) < READ_MAX and read > 0)
                or until()
            ):
                return touched

    @staticmethod
    def _produce_when_room(producer: Producer, topic: str, partition: int, key, value, headers, ts: int) -> None:
        while True:
            try:
                producer.produce(topic, value, key, partition, timestamp=ts, headers=headers)
                return
            except BufferError:
                producer.poll(0.05)

    def _commit(self, producer: Producer, group_meta, touched: list[_Part]) -> None:
        """Commit the transaction: its records acknowledged, then the progress of every partition
        that had records in it, then the commit. A refusal raises :class:`_HandOff`."""
        failures, deadline = self._reports.failures, time.monotonic() + 120
        while True:
            left = producer.flush(0.2)
            if not left or failures or time.monotonic() >= deadline:
                break
        span = ", ".join(f"{p.spec.topic}[{p.spec.partition}] {p.first}..{p.next - 1}" for p in touched)
        if failures:
            err = failures[0]
            if err.code() in PRODUCER_LOST or permissions.is_denied(err):
                abort_quietly(producer)
                topics = [p.spec.target_topic for p in touched]
                refusal = permissions.write_refusal(self.limits.admin(), self.flow.target, topics)
                if refusal is not None:
                    raise permissions.in_flow(self.flow.name, refusal)
                raise ProducerLost(
                    f"flow {self.flow.name}: the task's producer was fenced or failed ({err.str()}); {span} rolled back"
                )
            if err.code() in TARGET_UNAVAILABLE and not any(
                target_missing(producer, p.spec.target_topic) for p in touched
            ):
                abort_quietly(producer)
                raise TimeoutError(
                    f"flow {self.flow.name}: {self.flow.target} did not acknowledge {span} ({err.str()}); rolled back, "
                    f"nothing of them committed; is the target reachable?"
                )
            raise _HandOff(err.str(), size=size_refusal(err))
        if left:
            abort_quietly(producer)
            raise TimeoutError(
                f"flow {self.flow.name}: {left} record(s) of {span} not acknowledged by {self.flow.target} "
                f"within 120s; rolled back, nothing of them committed"
            )
        if self._reports.lost:
            abort_quietly(producer)
            raise ProducerLost(
                f"flow {self.flow.name}: the task's producer lost its connection to {self.flow.target} "
                f"({self._reports.lost[0].str()}); {span} rolled back, redone by a fresh producer"
            )
        now_ms = int(self.clock() * 1000)
        with watched_call(self, OFFSETS_CALL_SECONDS):
            producer.send_offsets_to_transaction(
                [
                    TopicPartition(p.spec.target_topic, p.spec.partition, p.next, encode_metadata(p.spec.topic, now_ms))
                    for p in touched
                ],
                group_meta,
                OFFSETS_CALL_SECONDS,
            )
        with watched_call(self, 60):
            producer.commit_transaction(60)

    @staticmethod
    def _done(p: _Part, on_commit: OnCommit | None) -> None:
        """The transaction that held ``p``'s records committed: count them."""
        r, c = p.result, p.counts
        r.read, r.written, r.filtered, r.bytes = r.read + c[0], r.written + c[1], r.filtered + c[2], r.bytes + c[3]
        r.transactions += 1
        p.position, p.first, p.counts = p.next, -1, [0, 0, 0, 0]
        if on_commit is not None:
            on_commit(r, p.position, p.latencies)  # the callee takes the samples
        else:
            p.latencies.clear()

    def _hand_off(
        self, producer: Producer, source: Consumer, parts: dict[Key, _Part], h: _HandOff, on_commit: OnCommit | None
    ) -> None:
        """Abort the open transaction and copy each of its partitions' records with the
        per-partition copier, over the same offsets; then go on after them."""
        if not abort_quietly(producer):
            resume_abort(producer)  # this producer goes on after the hand-off
        log.warning(
            "flow %s: %s; the records of the rolled-back transaction are copied per partition", self.flow.name, h
        )
        for key, p in parts.items():
            if p.first < 0 and key != h.reset:
                continue
            end = max(p.next, p.position + 1) if key == h.reset else p.next
            r = self.helper.copy(RangeSpec(p.spec.topic, p.spec.partition, p.position, end, p.spec.target_topic))
            res = p.result
            for name in COUNTED:
                setattr(res, name, getattr(res, name) + getattr(r, name))
            if r.lost_first is not None:
                res.lost_first, res.lost_last = r.lost_first, r.lost_last
            p.position, p.first, p.counts, p.latencies = max(r.start, r.end), -1, [0, 0, 0, 0], []
            if on_commit is not None:
                on_commit(res, p.position, [])
        # every partition from where its copy stands (a seek is refused for a partition in the
        # "offset out of range" state; what was fetched for the others is fetched again)
        source.assign([TopicPartition(p.spec.topic, p.spec.partition, p.position) for p in parts.values()])

"""Copy one source partition's offset range to the target, exactly once.

This is the unit of work of the replication job: a Spark task runs one :meth:`RangeCopier.copy`
per source topic-partition per micro-batch, and tests call it directly.

How exactly-once holds:

1. The producer's ``transactional.id`` is fixed per (flow, topic, partition). Creating it
   (``init_transactions``) fences any earlier instance, a zombie task of a killed job
   included, and aborts its unfinished transaction.
2. Only then is the committed progress read (consumer group offsets on the target, read with
   ``require_stable`` semantics); committed progress beats the planned start, so a replayed
   micro-batch does not copy twice.
3. Records are written in chunks; each chunk's transaction also commits the progress offset
   (``send_offsets_to_transaction``). A crash anywhere leaves either the chunk and its
   progress, or neither.

Records are read with ``isolation.level=read_committed``: aborted transactional records on
the source are never copied. Key, value, headers (order, repeats, binary), timestamp and
partition number are kept; the loop policy decides which records are skipped and appends
provenance headers.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.loop import Transform, router_for
from kafka_dr.core.record_batch import own_batch_bytes
from kafka_dr.core.progress import (ProgressLost, decode_metadata, encode_metadata, resume_offset)
from kafka_dr.kafka.clients import SecretResolver, client_config, connect_to_a_known_broker, one_shot_transactional_config
from kafka_dr.kafka.first_run_gap import FirstRunGaps
from kafka_dr.kafka.gc_pause import gc_paused
from kafka_dr.kafka.orphaned_offsets import ProgressUnstable, read_progress, unstable
from kafka_dr.kafka.refusals import Chunk
from kafka_dr.kafka.target_limits import RESIZES, TargetLimits, size_refusal
from kafka_dr.kafka.topic_admin import SETTLING

log = logging.getLogger(__name__)


#: the end of an open range: copy what arrives until told to stop (continuous flows' streaming tasks)
OPEN = 2**62

#: The replication job's records per transaction (``--chunk-records``; a chunk also ends after
#: ``chunk_seconds``, 5 s for fixed ranges, and a streaming chunk as soon as it has caught up).
#: Each commit first waits for every record of the chunk to be acknowledged, so a backlog's
#: copy stalls once per chunk. Measured on the lab (1,000,000 records of 100 B, 8 ranges of
#: 125,000, five runs of each, interleaved): 137,000 records/s on average with 50,000 per
#: chunk, 151,000 with 200,000 (4 of 5 pairs faster); 1 KiB showed no difference beyond
#: noise; the workers' peak RSS grew by about 170 MB. Tests and other callers of
#: :class:`RangeCopier` keep its own default.
JOB_CHUNK_RECORDS = 200_000

#: ``on_commit(result, next_offset, new latency samples)``: see :meth:`RangeCopier.copy`
OnCommit = Callable[["RangeResult", int, list], None]


@dataclass(frozen=True)
class RangeSpec:
    """One source partition's planned range ``[start, end)`` and where it goes (``end`` may
    be :data:`OPEN`)."""

    topic: str
    partition: int
    start: int
    end: int
    target_topic: str


@dataclass
class RangeResult:
    """What one range copy did; one row of the job's metrics."""

    flow: str
    topic: str
    partition: int
    target_topic: str
    planned_start: int
    start: int
    end: int
    read: int = 0
    written: int = 0
    filtered: int = 0
    bytes: int = 0
    lost_to_retention: int = 0
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    transactions: int = 0
    seconds: float = 0.0
    dead_lettered: int = 0
    #: source records beyond this range when it finished (high watermark - end): how far behind
    lag: int = 0
    #: the source offsets of the newest loss counted in ``lost_to_retention`` (inclusive), or None
    lost_first: int | None = None
    lost_last: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def add_lost(self, first: int, last: int) -> None:
        """Count source offsets ``first..last`` as deleted on the source before they were replicated."""
        self.lost_to_retention += last - first + 1
        self.lost_first, self.lost_last = first, last


def read_wait(chunk_seconds: float) -> float:
    """How long one read of the source waits for records (``consume``'s timeout): a quarter of
    the longest a chunk may last, at most 0.1 s."""
    return min(0.1, chunk_seconds / 4)


def streaming_fetch(chunk_seconds: float) -> dict[str, Any]:
    """Source-consumer settings for a streaming copy (an :data:`OPEN` range whose chunks last at
    most ``chunk_seconds``): the broker holds a fetch until 256 KiB are there or a little less
    than the copier's :func:`read_wait` has passed (20 ms by default).

    Why: with librdkafka's defaults (``fetch.min.bytes`` 1) a consumer sends its next fetch as
    soon as the previous one returned anything, so under a steady load each partition's
    consumer fetched as fast as records trickled in: a stream of small requests that the
    brokers answer between the transactions' requests. Measured without Spark (8 partition
    copies, 5,000 records/s, five runs of each, interleaved): latency p99 122-146 ms against
    166-338 ms without, p50 54-63 against 49-107 ms, 5% less CPU. A record now waits at the
    broker rather than in the client's queue, and the copier's read waits for it anyway.

    Not for fixed ranges (backlogs, fixed-range micro-batches): a range's last, small fetch
    would wait out the timeout every time."""
    return {"fetch.wait.max.ms": max(1, round(read_wait(chunk_seconds) * 800)), "fetch.min.bytes": 256 * 1024}


#: How long librdkafka holds off a partition's next fetch once its local queue is full
#: (``fetch.queue.backoff.ms``; 1,000 ms by default). "Full" is ``queued.min.messages``,
#: 100,000 records by default, which a backlog's first fetches pass at once: the copy then
#: read the queue dry and waited out the rest of the second. Measured on the lab (ranges of
#: 125,000 records of 100 B, one consumer per partition as a fixed-range task has): reads
#: waited 0.45-0.59 s per range, about 0.42 s of it in one stall after some 117,500 records;
#: with 20 ms, 0.08-0.18 s. The queue's size limits stay as they are; the fetcher only looks
#: again sooner (a check of its own queue, no request).
FETCH_QUEUE_BACKOFF_MS = 20

#: How long the source broker may hold a fixed range's fetch for records that are not there
#: yet (``fetch.wait.max.ms``; librdkafka's default is 500 ms). A fixed range's records are
#: there, so only the fetch sent after its last record waits; but a broker answers one request
#: of a connection at a time, so the next range's first fetch and a log-start query on the same
#: consumer waited behind it: 0.34-0.35 s before every range but a worker's first, measured on
#: the lab; with 20 ms, 0.00 s. Streaming copies set their own (:func:`streaming_fetch`).
RANGE_FETCH_WAIT_MS = 20


class RecordRejected(RuntimeError):
    """The target refused a record and no dead-letter topic is configured."""


#: delivery errors that mean "the target did not answer in time", not "the target refused this record"
TARGET_UNAVAILABLE = {KafkaError._MSG_TIMED_OUT, KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT,
                      KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND, KafkaError.NOT_LEADER_FOR_PARTITION,
                      KafkaError.LEADER_NOT_AVAILABLE, KafkaError._ALL_BROKERS_DOWN}


#: errors that mean "this producer instance is done" (fenced by a newer one with the same
#: transactional id, or fatal), not that the target refused the record: its queued records come
#: back purged. Happens when Spark runs a partition's task in another Python worker, whose
#: cached copier then fences this one.
PRODUCER_LOST = {KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT, KafkaError._FENCED, KafkaError._FATAL,
                 KafkaError.INVALID_PRODUCER_EPOCH, KafkaError.PRODUCER_FENCED}


class _BelowLogStart(Exception):
    """The source answered "offset out of range": its log now starts after our position."""


#: client errors that mean a connection to the cluster was lost
CONNECTION_LOST = {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN}


#: how long past its own timeout a transactional call may run before the streaming task that
#: watches the copy counts it hung (:func:`watched_call`)
CALL_GRACE_SECONDS = 15.0


@contextlib.contextmanager
def watched_call(holder: Any, timeout: float):
    """Mark ``holder`` (a copier) as inside a Kafka call that should be over within ``timeout``
    seconds: ``holder.hung_after`` is the monotonic time past which it counts as hung.

    Why: librdkafka #5511 (open) can hang ``send_offsets_to_transaction`` after a target
    restart with no regard for its timeout. The streaming task's watchdog
    (:mod:`kafka_dr.spark.streams`) then restarts the query once the call is
    :data:`CALL_GRACE_SECONDS` past its own timeout, instead of after its general 240 s: seen
    in the target-restart drill as 4-5 minutes without replication."""
    holder.hung_after = time.monotonic() + timeout + CALL_GRACE_SECONDS
    try:
        yield
    finally:
        holder.hung_after = None


class ProducerLost(RuntimeError):
    """This copier's producer was fenced or failed fatally; a fresh one can redo the range."""


def producer_lost(e: BaseException) -> bool:
    if isinstance(e, ProducerLost):
        return True
    if isinstance(e, SystemError) and isinstance(e.__cause__, KafkaException):
        # confluent-kafka raises a fatal error (fenced) from the poll or flush that serves it
        # (error_cb in its confluent_kafka.c sets the exception without stashing it); when
        # that call serves a delivery report next, calling Python raises SystemError with the
        # fatal error as its cause (seen in CI: a fenced task copier's flush, 2.16.1)
        return producer_lost(e.__cause__)
    if isinstance(e, SystemError) and e.__cause__ is None and "of 'cimpl.Producer' objects> returned NULL" in str(e):
        # the same race can also leave no exception at all: "<method 'flush' of
        # 'cimpl.Producer' objects> returned NULL without setting an exception" (a fenced
        # producer's flush, 1 in 8 tries on the lab, 2.16.1). Only the binding's error path
        # for that producer returns NULL; a redo with a fresh producer is safe either way
        return True
    if isinstance(e, KafkaException) and e.args and isinstance(e.args[0], KafkaError):
        err = e.args[0]
        return err.code() in PRODUCER_LOST or err.fatal()
    return False


@dataclass
class Reports:
    """What one producer's callbacks reported: the first delivery failure of the current chunk
    (error-only delivery reports) and the first lost connection to the target."""

    failures: list = field(default_factory=list)
    lost: list = field(default_factory=list)

    def delivery(self, err: KafkaError | None, _msg) -> None:
        if err is not None and not self.failures:
            self.failures.append(err)

    def error(self, err: KafkaError) -> None:
        if err.code() in CONNECTION_LOST and not self.lost:
            self.lost.append(err)


def transactional_producer(cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None, txn_id: str, reports: Reports,
                           every_report: bool = False, overrides: dict[str, Any] | None = None) -> Producer:
    """A copier's producer on the flow's target, its transactions initialised (which fences
    every earlier producer of ``txn_id`` and aborts its open transaction)."""
    conf = client_config(
        cfg.cluster(flow.target), resolve,
        **{
            "transactional.id": txn_id,  # librdkafka's sparse connections kept (one_shot_transactional_config)
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 10,
            "batch.size": 1_000_000,  # the copiers size it to the target topics' limits (target_limits.producer_sizing)
            "compression.type": "lz4",
            "transaction.timeout.ms": 60_000,
            "delivery.timeout.ms": 60_000,  # a refused or unreachable target surfaces within a minute
            "queue.buffering.max.messages": 500_000,
            "queue.buffering.max.kbytes": 512 * 1024,
            **(overrides or {}),
        },
    )
    # Delivery reports only for failures (librdkafka): a per-record Python callback was a
    # fifth of a copy's time. A failure is noted; the chunk is then redone with per-record
    # callbacks to name the record (RangeCopier._run_chunks). A seed map needs every record's
    # target offset, so it keeps all reports.
    conf["delivery.report.only.error"] = not every_report
    conf["on_delivery"] = reports.delivery
    # A lost connection to the target marks this producer: its next chunk is redone by a
    # fresh one. librdkafka (2.16, issue #5511) can keep a restarted broker's retired handle
    # as the group coordinator, and send_offsets_to_transaction then hangs (reproduced: 10
    # minutes, every partition, on each target restart).
    conf["error_cb"] = reports.error
    p = Producer(conf)
    connect_to_a_known_broker(p)
    p.init_transactions(30)
    return p


def fence(cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None, txn_ids: list[str]) -> None:
    """Fence every producer of ``txn_ids`` on the flow's target: ``init_transactions`` with each
    id bumps its epoch (an older instance's next call fails) and aborts its open transaction.

    Why: a partition's progress is committed by whichever copier runs it, a per-partition
    one (fixed ranges, ``--tasks`` > 1) or a streaming task's (one id for the flow's
    partitions, :mod:`kafka_dr.kafka.task_copier`). Two ids on one partition fence nothing of
    each other by themselves, so each kind fences the other's ids before it copies."""
    for txn_id in txn_ids:
        p = Producer(one_shot_transactional_config(cfg.cluster(flow.target), resolve, txn_id, **{"transaction.timeout.ms": 60_000}))
        p.init_transactions(30)


class RangeCopier:
    """Copies ranges for one flow. Keeps one producer per source partition and one consumer
    per process, so a long-running Spark Python worker reuses its connections."""

    def __init__(
        self,
        cfg: DrConfig,
        flow: FlowConfig,
        resolve: SecretResolver | None = None,
        chunk_records: int = 50_000,
        chunk_seconds: float = 5.0,
        stall_seconds: float = 120.0,
        allow_reset: bool = False,
        producer_overrides: dict[str, Any] | None = None,
        consumer_overrides: dict[str, Any] | None = None,
        clock: Callable[[], float] = time.time,
        transform: Transform | None = None,
        keep_timestamp: Callable[[int], bool] | None = None,
        seed_map_topic: str | None = None,
        fence_task_streams: bool = True,
        limits: TargetLimits | None = None,
    ) -> None:
        """:param transform: replaces the flow's loop-policy transform (failback's re-seed).
        :param keep_timestamp: records whose timestamp it refuses are filtered (a time window).
        :param seed_map_topic: record runs of (source offset, target offset) in this topic of
            the target, in the same transaction as the records (failback's re-seed).
        :param fence_task_streams: fence the flow's streaming-task transactional id with every
            new producer (:func:`fence`); off only for a task copier's own helper.
        :param consumer_overrides: settings of the source consumer (streaming copies:
            :func:`streaming_fetch`).
        :param limits: the target topics' size limits, shared with a task copier (read here otherwise)."""
        self.cfg = cfg
        self.flow = flow
        self.resolve = resolve
        self.chunk_records = chunk_records
        self.chunk_seconds = chunk_seconds
        self.stall_seconds = stall_seconds
        self.allow_reset = allow_reset
        self.producer_overrides = producer_overrides or {}
        self.consumer_overrides = consumer_overrides or {}
        self.clock = clock
        self.transform = transform or router_for(cfg, flow).transform()
        self.keep_timestamp = keep_timestamp
        self.seed_map_topic = seed_map_topic
        self.group = cfg.names.progress_group(flow.name)
        self._producers: dict[tuple[str, int], Producer] = {}
        self._reports: dict[tuple[str, int], Reports] = {}  #: what each producer's callbacks reported
        self.limits = limits or TargetLimits(cfg.cluster(flow.target), resolve)
        self._sizing: dict[tuple[str, int], dict[str, int]] = {}  #: the batch sizing each producer was built with
        self._source: Consumer | None = None
        self._kept: tuple[str, int, int] | None = None  #: (topic, partition, next offset) still assigned after an open range
        self._meta: Consumer | None = None
        self.fence_task_streams = fence_task_streams
        self.first_run_gaps = FirstRunGaps(cfg, flow, lambda s: last_copied_offset(cfg, flow, s.topic, s.target_topic, s.partition, resolve) is not None)

    # --- clients ---------------------------------------------------------------------

    def _producer(self, spec: RangeSpec) -> Producer:
        topic, partition = key = (spec.topic, spec.partition)
        p = self._producers.get(key)
        if p is None:
            if self.fence_task_streams:
                # A streaming task's copier commits these partitions under the flow's task id: a
                # zombie of it (a query that is gone, a worker that lives on) is fenced first, by
                # every new producer, as a producer of the partition's own id fences that id's
                # zombies: a redo after this copier was fenced by a task copier fences it back,
                # and whichever copies next reads committed progress after the fencing.
                fence(self.cfg, self.flow, self.resolve, [self.cfg.names.task_transactional_id(self.flow.name)])
            reports = self._reports[key] = Reports()
            sizing = self.limits.sizing(self._written_topics(spec))  # batches within the topics' max.message.bytes
            p = transactional_producer(self.cfg, self.flow, self.resolve,
                                       self.cfg.names.transactional_id(self.flow.name, topic, partition), reports,
                                       every_report=self.seed_map_topic is not None, overrides={**sizing, **self.producer_overrides})
            self._producers[key], self._sizing[key] = p, sizing
        return p

    def _written_topics(self, spec: RangeSpec) -> list[str]:
        return [spec.target_topic, *(t for t in (self.flow.dead_letter_topic, self.seed_map_topic) if t)]

    def _resized(self, spec: RangeSpec) -> bool:
        """After a refusal for size: read the limits again; when they changed since the
        partition's producer sized its batches, drop it (the next one sizes them again)."""
        topics = self._written_topics(spec)
        self.limits.refresh(topics)
        sizing = self.limits.sizing(topics)
        if sizing == self._sizing.get((spec.topic, spec.partition)):
            return False
        log.warning("flow %s: %s/%s's max.message.bytes changed while copying %s[%d]; batches sized again (%s)", self.flow.name,
                    self.flow.target, spec.target_topic, spec.topic, spec.partition, sizing)
        self._drop_producer(spec.topic, spec.partition)
        return True

    def _drop_producer(self, topic: str, partition: int) -> None:
        discard(self._producers.pop((topic, partition), None))

    def _source_consumer(self) -> Consumer:
        if self._source is None:
            self._source = Consumer(self.source_consumer_config())
        return self._source

    def source_consumer_config(self) -> dict[str, Any]:
        """The source consumer's settings: ``read_committed``, large fetches that follow each
        other without a pause (:data:`FETCH_QUEUE_BACKOFF_MS`, :data:`RANGE_FETCH_WAIT_MS`), no
        committed offsets of its own (progress lives on the target), plus ``consumer_overrides``."""
        return client_config(
            self.cfg.cluster(self.flow.source), self.resolve,
            **{"group.id": f"{self.group}.reader", "enable.auto.commit": False, "enable.auto.offset.store": False,
               "isolation.level": "read_committed", "enable.partition.eof": True, "auto.offset.reset": "error",
               "fetch.max.bytes": 64 * 1024 * 1024, "max.partition.fetch.bytes": 8 * 1024 * 1024,
               "queued.max.messages.kbytes": 256 * 1024, "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
               "fetch.wait.max.ms": RANGE_FETCH_WAIT_MS, **self.consumer_overrides},
        )

    def _progress_consumer(self) -> Consumer:
        """A group-less-in-practice consumer on the target: it only reads and stamps the
        progress group's offsets, and carries the group metadata transactions need."""
        if self._meta is None:
            self._meta = Consumer(client_config(
                self.cfg.cluster(self.flow.target), self.resolve,
                **{"group.id": self.group, "enable.auto.commit": False, "isolation.level": "read_committed"},
            ))
        return self._meta

    def close(self) -> None:
        for p in self._producers.values():
            discard(p)
        self._producers.clear()
        for c in (self._source, self._meta):
            if c is not None:
                c.close()
        self._source = self._meta = None
        self._kept = None

    # --- progress ----------------------------------------------------------------------

    def committed(self, spec: RangeSpec) -> int | None:
        """The committed next source offset for this partition, or ``None`` if none; an orphaned
        pending commit is cleared with the partition's producer (:func:`read_progress`)."""
        pair = (spec.topic, spec.target_topic, spec.partition)
        return read_progress(self.cfg, self.flow, self._progress_consumer(), lambda: self._producer(spec),
                             [pair], self.resolve)[pair]

    # --- the copy ----------------------------------------------------------------------

    def copy(self, spec: RangeSpec, until: Callable[[], bool] | None = None, on_commit: OnCommit | None = None,
             may_redo: Callable[[], bool] | None = None) -> RangeResult:
        """Copy ``spec``'s range; with ``until``, stop after the first transaction that ends
        once ``until()`` is true (an :data:`OPEN` range only stops that way). The result's
        ``end`` is then where the copy stopped.

        ``on_commit(result, next_offset, latencies)`` is called in this thread once the start is
        known and after every committed transaction (the running result; ``latencies`` are the
        new samples, the callee may take them). ``may_redo()`` false: a fenced or lost producer
        ends the copy (raised) instead of a redo with a fresh producer, which would fence the
        newer owner of the partition back (:mod:`kafka_dr.spark.streams`)."""
        t0 = time.monotonic()
        fresh_producers = 2  # redos with a fresh producer (fenced by another worker, or lost the target)
        log_start: int | None = None  # read only when needed (see _copy)
        partial: RangeResult | None = None
        for _ in range(5):
            try:
                return self._copy(spec, t0, log_start, partial, until, on_commit)
            except _BelowLogStart as e:
                # the source deleted records at or after our position (retention outran
                # replication): read where its log starts now and redo from committed progress
                log_start, partial = self.log_start(spec), getattr(e, "partial_result", partial)
            except Exception as e:
                # Fenced, fatal or mid-transaction: a fresh producer (init_transactions) is the
                # one state known to be clean.
                self._drop_producer(spec.topic, spec.partition)
                if fresh_producers > 0 and producer_lost(e) and (may_redo is None or may_redo()):
                    # another worker's copier took over this partition's transactional id; a
                    # fresh producer fences it back and the range resumes from committed progress
                    log.warning("flow %s: %s[%d]: producer fenced or failed (%s); redoing the range with a fresh one",
                                self.flow.name, spec.topic, spec.partition, e)
                    fresh_producers -= 1
                    partial = getattr(e, "partial_result", partial)
                    continue
                raise
        raise RuntimeError(f"flow {self.flow.name}: {self.flow.source}/{spec.topic}[{spec.partition}]: the log start kept moving past "
                           f"the copy position (retention deleting faster than replication copies?)")

    def lag(self, spec: RangeSpec, position: int) -> int:
        """Source records after ``position``, by the high watermark of the last fetch (no round trip)."""
        _, high = self._source_consumer().get_watermark_offsets(TopicPartition(spec.topic, spec.partition), cached=True)
        return max(0, high - position)

    def planned_start(self, spec: RangeSpec, committed: int | None, low: int) -> int:
        """The start :func:`~kafka_dr.core.progress.resume_offset` is to hold ``spec`` to.

        An open range's (a streaming task's) planned start is where the source *ended* when its
        micro-batch was planned, not where the copy stands. So a partition that has no committed
        progress only because the target was lost before its first commit (found by the
        target-restart drill: the first transaction held two partitions of four, the target
        went down, the next batch planned the other two at 5,300-5,700) would be refused as
        lost progress, stopping the job for good. Decided as the query's start decides it
        (:func:`~kafka_dr.core.progress.lost_progress_starts`): no copy of the partition on the
        target means nothing was copied, so it starts at the log start (``low``); a copy keeps
        the planned start, and the refusal stands."""
        if committed is None and spec.end == OPEN and spec.start > low:
            if last_copied_offset(self.cfg, self.flow, spec.topic, spec.target_topic, spec.partition, self.resolve) is None:
                log.warning("flow %s: %s[%d] has no committed progress and no copy on %s yet: copying from its log start %d, "
                            "not from the planned %d", self.flow.name, spec.topic, spec.partition, self.flow.target, low, spec.start)
                return low
        return spec.start

    def log_start(self, spec: RangeSpec) -> int:
        """Where the source partition's log starts now (a round trip)."""
        low, _ = watermarks(self._source_consumer(), TopicPartition(spec.topic, spec.partition), 30)
        return low

    def _copy(self, spec: RangeSpec, t0: float, log_start: int | None, partial: RangeResult | None,
              until: Callable[[], bool] | None, on_commit: OnCommit | None) -> RangeResult:
        """One attempt at the range.

        The source's log start is only asked for when it decides something: when there is no
        committed progress (first copy, or lost progress), or after the source answered "offset
        out of range" (``auto.offset.reset=error``, so the consumer never skips silently). The
        common case, committed progress inside the log, costs no round trip for it: a
        micro-batch of a continuous flow is mostly such fixed costs."""
        producer = self._producer(spec)  # fences zombies first
        source = self._source_consumer()
        committed = self.committed(spec)
        if committed is None and log_start is None:
            log_start = self.log_start(spec)
        low = log_start if log_start is not None else 0
        try:
            start = resume_offset(committed, self.planned_start(spec, committed, low), low, self.allow_reset)
        except ProgressLost as e:
            raise ProgressLost(f"flow {self.flow.name}: {self.flow.source}/{spec.topic}[{spec.partition}] -> "
                               f"{self.flow.target}/{spec.target_topic}[{spec.partition}]: {e} (was the target topic deleted?)") from None
        result = partial or RangeResult(self.flow.name, spec.topic, spec.partition, spec.target_topic, spec.start, start, spec.end)
        if partial is not None and partial.read == 0:
            result.start = start  # nothing copied before the redo: the copy really starts here
        if committed is not None and committed < low:
            result.add_lost(committed, low - 1)
            log.error("flow %s: %s[%d] records %d..%d were deleted on the source before they were replicated",
                      self.flow.name, spec.topic, spec.partition, committed, low - 1)
        self.first_run_gaps.check(spec, committed, low, start, result)
        if on_commit is not None:
            on_commit(result, start, [])
        if start >= spec.end:
            result.seconds = time.monotonic() - t0
            return result

        # An open range (a streaming task) leaves its partition assigned when it ends: the next
        # task's range starts where it stopped, and the records fetched in between are kept
        # (re-assigning cost ~1-2 s before the first fetch, a pause at every task boundary).
        if self._kept != (spec.topic, spec.partition, start):
            source.assign([TopicPartition(spec.topic, spec.partition, start)])
        self._kept = None
        reached = None
        try:
            latencies, reached = self._run_chunks(spec, producer, source, start, result, until, on_commit)
        except Exception as e:
            if isinstance(e, _BelowLogStart) or producer_lost(e):
                e.partial_result = result  # the redo goes on counting what this attempt committed
            raise
        finally:
            if reached is not None and spec.end == OPEN:
                self._kept = (spec.topic, spec.partition, reached)
            else:
                source.unassign()
        result.end = reached
        result.lag = self.lag(spec, reached)
        if latencies:
            latencies.sort()
            result.latency_p50_ms = float(latencies[len(latencies) // 2])
            result.latency_p99_ms = float(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))])
        result.seconds = time.monotonic() - t0
        return result

    def _run_chunks(self, spec: RangeSpec, producer: Producer, source: Consumer, start: int, result: RangeResult,
                    until: Callable[[], bool] | None = None, on_commit: OnCommit | None = None) -> tuple[list[int], int]:
        """Copy ``[start, end)`` in transactions of at most ``chunk_records``/``chunk_seconds``.

        A chunk the target refuses is aborted whole and redone. Refused for size while the
        topic's limit changed since the producer sized its batches: a fresh producer sizes them
        again (:meth:`_resized`). Otherwise the redo is *precise* (each record with its own
        delivery callback) to learn which record is to blame (:class:`~kafka_dr.kafka.refusals.Chunk`).
        Without a dead-letter topic the copy then stops, naming the record. With one, the refused
        offset is remembered and the chunk is redone from its first offset, routing that record
        to the dead-letter topic.
        """
        key = (spec.topic, spec.partition)
        group_meta = self._progress_consumer().consumer_group_metadata()
        failures = self._reports[key].failures
        latencies: list[int] = []
        dead: dict[int, str] = {}
        next_offset = start
        done, precise, resized = False, self.seed_map_topic is not None, 0
        while not done and not (until is not None and until()):
            chunk = Chunk(first_offset=next_offset, precise=precise, limit=self.limits.limit(spec.target_topic) if precise else None)
            failures.clear()
            producer.begin_transaction()
            with gc_paused():  # the loop makes no cycles; the collector walking its batches was 17% of it
                next_offset, done, counts = self._fill_chunk(spec, producer, source, chunk, dead, latencies, until)
            if next_offset == chunk.first_offset and not failures:
                producer.commit_transaction(30)  # nothing read (an idle open range): an empty transaction ends locally
                continue
            refused = self._commit_chunk(producer, group_meta, spec, chunk, next_offset, failures)
            if refused is not None:
                source.seek(TopicPartition(spec.topic, spec.partition, chunk.first_offset))
                reached, next_offset, done = next_offset, chunk.first_offset, False
                if size_refusal(refused) and resized < RESIZES and self._resized(spec):
                    resized += 1
                    producer, failures = self._producer(spec), self._reports[key].failures
                    continue
                offset = chunk.blamed()
                if offset < 0 and not chunk.precise:  # refused, but which record is unknown: redo this chunk precisely
                    precise = True
                    continue
                if offset < 0:
                    raise RuntimeError(
                        f"flow {self.flow.name}: {self.flow.target} refused {self.flow.source}/{spec.topic}[{spec.partition}] offsets "
                        f"{chunk.first_offset}..{reached - 1} for their size, yet none is larger than {spec.target_topic}'s "
                        f"max.message.bytes ({chunk.limit}) on its own (limits changing while copying?); rolled back, nothing of them committed")
                reason = chunk.reason(self.flow.target, spec.target_topic, self.limits.limit(spec.target_topic))
                gone = target_missing(producer, spec.target_topic)
                if gone or not self.flow.dead_letter_topic or offset in dead:
                    hint = (f"; {self.flow.target}/{spec.target_topic} does not exist (deleted mid-run?): it is not recreated behind "
                            f"the operator's back, restart the flow to have it created again" if gone else
                            ("" if self.flow.dead_letter_topic else "; configure dead_letter_topic to set such records aside"))
                    raise RecordRejected(
                        f"flow {self.flow.name}: {self.flow.target} refused {self.flow.source}/{spec.topic}[{spec.partition}]@{offset} "
                        f"(-> {spec.target_topic}[{spec.partition}]): {reason}; the chunk from offset {chunk.first_offset} was "
                        f"rolled back and nothing after it copied" + hint
                    )
                dead[offset] = reason
                continue
            precise, resized = self.seed_map_topic is not None, 0
            for k, v in counts.items():
                setattr(result, k, getattr(result, k) + v)
            result.transactions += 1
            if on_commit is not None:
                on_commit(result, next_offset, latencies)
        return latencies, next_offset

    def _fill_chunk(self, spec: RangeSpec, producer: Producer, source: Consumer, chunk: Chunk, dead: dict[int, str], latencies: list[int],
                    until: Callable[[], bool] | None = None):
        """Read and produce one chunk's records; returns (next offset, range done, counts).

        This loop is where a copy spends its time: per record it does only what it must (the
        loop policy's header decision and one ``produce``); counters are locals."""
        transform, produce, delivered = self.transform, producer.produce, chunk.delivered
        target_topic, topic, partition, end = spec.target_topic, spec.topic, spec.partition, spec.end
        read = written = filtered = nbytes = dead_lettered = 0
        keep_ts, precise = self.keep_timestamp, chunk.precise
        wait = read_wait(self.chunk_seconds)

        next_offset, done = chunk.first_offset, False
        deadline = time.monotonic() + self.chunk_seconds
        last_progress = time.monotonic()
        # Group commit: an open range (a streaming task's copy) ends its chunk as soon as it has
        # read every record fetched so far (a read returned fewer than asked for), not only
        # when chunk_seconds are up. Under a steady load a record then waits for about one read
        # (``wait``) and one commit instead of a whole chunk plus a commit: p99 977 -> 145 ms in
        # an 8-partition test at 5,000 records/s. Under a backlog reads come back full and
        # chunks fill up as before. The cost is more transactions at low rates, at most one per
        # ``wait`` and commit per partition (about 2.7x at that load, +17% broker CPU), which
        # a larger --commit-seconds bounds. (Partition EOF cannot be the signal: librdkafka
        # does not emit it under a steady load.)
        caught_up = False
        while True:
            # consume() waits for num_messages or the timeout: asking for no more than the range
            # still holds, with a short timeout, returns as soon as the range's records are in
            # (a fixed 0.5 s wait per range once dominated a continuous flow's micro-batches)
            want = max(1, min(5000, end - next_offset))
            msgs = source.consume(num_messages=want, timeout=wait)
            if end == OPEN and len(msgs) < want:
                caught_up = True
            if msgs:
                last_progress = time.monotonic()
            elif end < OPEN and time.monotonic() - last_progress > self.stall_seconds:  # an open range may just be idle
                abort_quietly(producer)
                raise TimeoutError(
                    f"flow {self.flow.name}: no records from {self.flow.source}/{topic}[{partition}] for "
                    f"{self.stall_seconds:.0f}s at offset {next_offset} (range ends at {end}); is the source reachable?"
                )
            now_ms = int(self.clock() * 1000)
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        # EOF at offset >= end: everything up to the end is seen (what was not
                        # delivered below it are transaction markers and aborted records). An
                        # EOF below the end is stale (from before this assignment): go on.
                        if msg.offset() >= end:
                            next_offset, done = end, True
                            break
                        continue
                    abort_quietly(producer)
                    if err.code() == KafkaError._AUTO_OFFSET_RESET:
                        raise _BelowLogStart("offset out of range on the source")
                    raise RuntimeError(f"flow {self.flow.name}: reading {topic}[{partition}] at offset {next_offset}: {err.str()}")
                off = msg.offset()
                if off >= end:
                    next_offset, done = end, True
                    break
                read += 1
                next_offset = off + 1
                ts = msg.timestamp()[1]
                if keep_ts is not None and not keep_ts(ts):
                    filtered += 1
                    continue
                out = transform(msg.headers(), topic, partition, off, now_ms)
                if out is None:
                    filtered += 1
                    continue
                key, value = msg.key(), msg.value()
                if dead and off in dead:
                    self._dead_letter(producer, spec, off, key, value, out, ts, dead[off])
                    dead_lettered += 1
                    continue
                if not read & 15:
                    latencies.append(now_ms - ts)
                try:  # the common case inline
                    if precise:
                        produce(target_topic, value, key, partition, on_delivery=functools.partial(delivered, off, out), timestamp=ts,
                                headers=out)
                    else:
                        produce(target_topic, value, key, partition, timestamp=ts, headers=out)
                    refusal = None
                except (BufferError, KafkaException):  # queue full, or refused on the spot: the slow path
                    refusal = self._produce(producer, target_topic, partition, key, value, out, ts,
                                            functools.partial(delivered, off, out) if precise else None)
                if refusal is not None:  # the chunk ends here; _run_chunks decides as for a refusal by the target
                    chunk.refused_at_produce(off, refusal, own_batch_bytes(key, value, out))
                    return next_offset, False, {}
                written += 1
                if value:
                    nbytes += len(value)
                if key:
                    nbytes += len(key)
            if not done and next_offset >= end:
                done = True
            if (done or read >= self.chunk_records or time.monotonic() >= deadline or (caught_up and read > 0)
                    or (until is not None and until())):
                counts = {"read": read, "written": written, "filtered": filtered, "bytes": nbytes, "dead_lettered": dead_lettered}
                return next_offset, done, counts

    def _produce(self, producer: Producer, topic: str, partition: int, key, value, headers, ts: int, cb) -> KafkaError | None:
        """Queue one record; returns the error when librdkafka refuses it on the spot."""
        while True:
            try:
                producer.produce(topic, value=value, key=key, headers=headers, partition=partition, timestamp=ts,
                                 **({} if cb is None else {"on_delivery": cb}))
                return None
            except BufferError:
                producer.poll(0.05)
            except KafkaException as e:
                if producer_lost(e):
                    raise ProducerLost(f"flow {self.flow.name}: producer for {topic}[{partition}] fenced or failed: {e.args[0].str()}") from None
                return e.args[0]

    def _dead_letter(self, producer: Producer, spec: RangeSpec, off: int, key, value, headers, ts: int, reason: str) -> None:
        """Set a refused record aside, in the same transaction, with where it came from and why.

        The value is kept when it fits; a record refused for its size keeps key and headers
        only (``dr.dlq.value.bytes`` says how big it was), so the dead-letter write cannot fail
        for the same reason."""
        size = len(value) if value else 0
        too_big = "too large" in reason.lower() or "size" in reason.lower()
        extra = [("dr.dlq.reason", reason.encode()), ("dr.dlq.source", f"{self.flow.source}/{spec.topic}[{spec.partition}]@{off}".encode()),
                 ("dr.dlq.value.bytes", str(size).encode())]
        log.error("flow %s: %s/%s[%d]@%d set aside in %s: %s", self.flow.name, self.flow.source, spec.topic, spec.partition, off,
                  self.flow.dead_letter_topic, reason)
        producer.produce(self.flow.dead_letter_topic, key=key, value=None if too_big else value, headers=[*headers, *extra], timestamp=ts)

    def _commit_chunk(self, producer: Producer, group_meta, spec: RangeSpec, chunk: Chunk, next_offset: int,
                      failures: list[KafkaError]) -> KafkaError | None:
        """Commit the chunk and its progress; on a refused record, abort and return the refusal
        (which record it is blamed on: ``chunk.blamed()``)."""
        deadline = time.monotonic() + 120
        # until all is acknowledged, or the first failure: the chunk is lost then, and abort purges
        # the rest (with error-only reports, records queued behind a refused one otherwise sat
        # out delivery.timeout.ms, a minute, before flush returned)
        while True:
            left = producer.flush(0.2)
            if not left or chunk.error is not None or failures or time.monotonic() >= deadline:
                break
        if chunk.error is None and failures:
            chunk.error = failures[0]
        if chunk.error is not None:
            aborted = abort_quietly(producer)
            if chunk.error.code() in PRODUCER_LOST:
                raise ProducerLost(f"flow {self.flow.name}: the producer for {spec.topic}[{spec.partition}] was fenced or failed "
                                   f"({chunk.error.str()}); offsets {chunk.first_offset}..{next_offset - 1} rolled back")
            if chunk.error.code() in TARGET_UNAVAILABLE and not target_missing(producer, spec.target_topic):
                # the target was down or cut off longer than delivery.timeout.ms: not the record's
                # fault, so no refusal and no dead letter; the job restarts the query with backoff
                raise TimeoutError(
                    f"flow {self.flow.name}: {self.flow.target} did not acknowledge {self.flow.source}/{spec.topic}[{spec.partition}] "
                    f"offsets {chunk.first_offset}..{next_offset - 1} ({chunk.error.str()}); rolled back, nothing of them "
                    f"committed; is the target reachable?"
                )
            if not aborted:  # the redo begins a transaction with this producer: see the abort through first
                resume_abort(producer)
            return chunk.error
        if left:
            abort_quietly(producer)
            raise TimeoutError(
                f"flow {self.flow.name}: {left} record(s) of {spec.topic}[{spec.partition}] offsets {chunk.first_offset}..{next_offset - 1} "
                f"not acknowledged by {self.flow.target} within 120s; rolled back, nothing of them committed"
            )
        if self.seed_map_topic and chunk.pairs:
            from kafka_dr.core.failback import runs_from_pairs, seed_map_key, seed_map_value

            for run in runs_from_pairs(chunk.pairs):
                producer.produce(self.seed_map_topic, key=seed_map_key(spec.target_topic, spec.partition, run.source_start),
                                 value=seed_map_value(run))
            if producer.flush(60):
                abort_quietly(producer)
                raise TimeoutError(f"flow {self.flow.name}: seed map of {spec.topic}[{spec.partition}] not acknowledged; rolled back")
        lost = self._reports[(spec.topic, spec.partition)].lost
        if lost:
            abort_quietly(producer)
            raise ProducerLost(f"flow {self.flow.name}: the producer for {spec.topic}[{spec.partition}] lost its connection to "
                               f"{self.flow.target} ({lost[0].str()}); offsets "
                               f"{chunk.first_offset}..{next_offset - 1} rolled back, redone by a fresh producer")
        meta = encode_metadata(spec.topic, int(self.clock() * 1000))
        with watched_call(self, 30):
            producer.send_offsets_to_transaction([TopicPartition(spec.target_topic, spec.partition, next_offset, meta)], group_meta, 30)
        with watched_call(self, 60):
            producer.commit_transaction(60)
        return None



def target_missing(producer: Producer, topic: str) -> bool:
    """Is the target topic gone? (A refused chunk then is no record's fault: no dead letter.)"""
    try:
        t = producer.list_topics(topic, timeout=10).topics.get(topic)
    except KafkaException:
        return False
    return t is None or (t.error is not None and t.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART)


def discard(producer: Producer | None) -> None:
    """Let go of a copier's producer without sending what it still holds.

    Every committed transaction was flushed by ``commit_transaction``, so whatever is still
    queued belongs to a transaction that is open, aborted or fenced: writing it could only
    add records to be aborted. So nothing is flushed and no callback is served: a flush of a
    fenced producer raises its fatal error, or ``SystemError`` caused by it (see
    ``producer_lost``), which from a ``close`` in a ``finally`` would hide the error that
    matters. A transaction left open on the broker is aborted by the next producer of the
    same id (``init_transactions``) or by ``transaction.timeout.ms``; an abort here could
    block such a ``close`` on an unreachable target."""
    if producer is not None:
        try:
            producer.purge()
        except KafkaException:
            pass


def abort_quietly(producer: Producer) -> bool:
    """Abort the open transaction; False when that failed, which is fine for a producer that is
    dropped: the next ``init_transactions`` (a fresh producer of the same id) aborts it for
    certain. A producer that goes on needs :func:`resume_abort`."""
    try:
        producer.abort_transaction(30)
        return True
    except KafkaException:
        return False


def resume_abort(producer: Producer, timeout: float = 90.0) -> None:
    """See through an abort that timed out, before the producer begins another transaction:
    librdkafka goes on with it, any other transactional call fails meanwhile ("Conflicting
    abort_transaction API call is already in progress"), and calling it again resumes it. Seen
    on a freshly started lab: the first refused chunk's abort, with batches in flight behind the
    refused one, took over 30 s."""
    producer.abort_transaction(timeout)


def read_committed_progress(cfg: DrConfig, flow: FlowConfig, partitions: list[tuple[str, int]], resolve: SecretResolver | None = None,
                            timeout: float = 60.0) -> dict[tuple[str, int], dict]:
    """Committed progress for ``partitions`` ((target topic, partition) pairs): offset + metadata.

    Read with a consumer's ``committed()`` (which waits out a coordinator that is still
    loading), not with the admin ListConsumerGroupOffsets call: librdkafka 2.16's admin path
    crashes the process (SIGSEGV in rd_kafka_cgrp_op) on some coordinator errors, which a
    freshly started cluster answers for a while.
    """
    if not partitions:
        return {}
    c = Consumer(client_config(cfg.cluster(flow.target), resolve, **{
        "group.id": cfg.names.progress_group(flow.name), "enable.auto.commit": False,
        "isolation.level": "read_committed"}))
    try:
        tps = committed_with_retry(c, [TopicPartition(t, p) for t, p in partitions], timeout)
    except KafkaException as e:
        if unstable(e):
            raise ProgressUnstable(
                f"flow {flow.name}: reading progress on {flow.target}: no stable answer within {timeout:.0f}s for "
                f"{', '.join(f'{t}[{p}]' for t, p in partitions[:10])}{' ...' if len(partitions) > 10 else ''} (a pending "
                f"transactional commit no transaction owns? the replication job clears its own when it starts)") from None
        raise RuntimeError(f"flow {flow.name}: reading progress on {flow.target}: {e.args[0].str()}") from None
    finally:
        c.close()
    out = {}
    for tp in tps:
        if tp.error is not None:
            raise RuntimeError(f"flow {flow.name}: reading progress of {tp.topic}[{tp.partition}] on {flow.target}: {tp.error.str()}")
        if tp.offset >= 0:
            out[(tp.topic, tp.partition)] = {"next_offset": tp.offset, **decode_metadata(tp.metadata)}
    return out


#: Answers of a group coordinator that is moving or still loading: worth waiting for.
COORDINATOR_BUSY = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE}


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


def watermarks(consumer: Consumer, tp: TopicPartition, timeout: float) -> tuple[int, int]:
    """(low, high) of ``tp`` from its leader, waiting up to ``timeout`` seconds while the
    partition's leadership settles (a topic just created, by the planner or anyone else;
    :data:`~kafka_dr.kafka.topic_admin.SETTLING`)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return consumer.get_watermark_offsets(tp, timeout=max(1.0, deadline - time.monotonic()), cached=False)
        except KafkaException as e:
            if e.args[0].code() not in SETTLING or time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


def last_copied_offset(cfg: DrConfig, flow: FlowConfig, source_topic: str, target_topic: str, partition: int,
                       resolve: SecretResolver | None = None, scan: int = 10_000, timeout: float = 60.0) -> int | None:
    """The highest source offset of ``source_topic[partition]`` found replicated by this flow
    in the last ``scan`` records of ``target_topic[partition]`` (provenance headers), or None.

    Only asked for partitions without committed progress, to tell a first run (no copies)
    from lost progress (copies, no progress). Copies sit in source order, so the newest is
    the highest; a target whose last ``scan`` records are all local writes is not looked past.
    """
    from kafka_dr.core.provenance import ORIGIN, ORIGIN_OFFSET, ORIGIN_PARTITION, ORIGIN_TOPIC

    c = Consumer(client_config(cfg.cluster(flow.target), resolve, **{
        "group.id": cfg.names.progress_scan_group(flow.name), "enable.auto.commit": False,
        "isolation.level": "read_committed", "enable.partition.eof": True}))
    try:
        low, high = watermarks(c, TopicPartition(target_topic, partition), timeout)
        if high <= low:
            return None
        c.assign([TopicPartition(target_topic, partition, max(low, high - scan))])
        best, deadline = None, time.monotonic() + timeout
        src, part = flow.source.encode(), str(partition).encode()
        while time.monotonic() < deadline:
            msgs = c.consume(num_messages=5000, timeout=0.5)
            done = False
            for m in msgs:
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        done = True
                        continue
                    raise RuntimeError(f"flow {flow.name}: scanning {flow.target}/{target_topic}[{partition}]: {m.error().str()}")
                h = dict(m.headers() or ())
                if h.get(ORIGIN) == src and h.get(ORIGIN_TOPIC) == source_topic.encode() and h.get(ORIGIN_PARTITION) == part:
                    best = max(best or -1, int(h[ORIGIN_OFFSET]))
                if m.offset() + 1 >= high:
                    done = True
            if done or (not msgs and c.position([TopicPartition(target_topic, partition)])[0].offset >= high):
                return best
        raise TimeoutError(f"flow {flow.name}: scanning {flow.target}/{target_topic}[{partition}] for copies took over {timeout:.0f}s")
    finally:
        c.close()

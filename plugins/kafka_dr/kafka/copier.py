"""Copy one source partition's offset range to the target, exactly once.

The unit of work of the replication job (a Spark task copies its share of a micro-batch's
ranges, one per source partition, one after another; a streaming task open ones); failback
and the tests call it directly. Exactly-once holds so:

1. The producer's ``transactional.id`` is fixed per (flow, topic, partition): creating it
   fences any earlier instance, a zombie task included, and aborts its open transaction.
2. Only then is committed progress read (:mod:`~kafka_dr.kafka.progress_store`); it beats the
   planned start, so a replayed micro-batch does not copy twice.
3. Each chunk's transaction also commits the progress offset (:mod:`~kafka_dr.kafka.chunk_loop`):
   a crash leaves either the chunk and its progress, or neither.

Records are read ``read_committed``; key, value, headers, timestamp and partition are kept; the
loop policy decides which records are skipped and appends provenance headers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.loop import router_for
from kafka_dr.core.progress import ProgressLost, resume_offset
from kafka_dr.kafka.chunk_loop import ChunkLoop
from kafka_dr.kafka.clients import SecretResolver, client_config
from kafka_dr.kafka.copy_errors import BelowLogStart, producer_lost
from kafka_dr.kafka.copy_spec import OPEN, OnCommit, RangeResult, RangeSpec, Reseed
from kafka_dr.kafka.copy_tuning import CopyTuning, source_consumer_config
from kafka_dr.kafka.first_run_gap import FirstRunGaps
from kafka_dr.kafka.orphaned_offsets import read_progress
from kafka_dr.kafka.progress_floor import floor_at_copies
from kafka_dr.kafka.progress_store import copy_scanner, last_copy
from kafka_dr.kafka.target_limits import TargetLimits
from kafka_dr.kafka.transactions import PartitionProducers
from kafka_dr.kafka.watermarks import watermarks

log = logging.getLogger(__name__)


class RangeCopier:
    """Copies ranges for one flow. Keeps one producer per source partition and one consumer
    per process, so a long-running Spark Python worker reuses its connections."""

    def __init__(
        self,
        cfg: DrConfig,
        flow: FlowConfig,
        resolve: SecretResolver | None = None,
        *,
        tuning: CopyTuning | None = None,
        reseed: Reseed | None = None,
        allow_reset: bool = False,
        clock: Callable[[], float] = time.time,
        fence_task_streams: bool = True,
        limits: TargetLimits | None = None,
    ) -> None:
        """:param tuning: transaction sizes and client settings (default: :class:`CopyTuning`'s).
        :param reseed: failback's re-seed (another transform, a time window, a seed map).
        :param allow_reset: a partition whose progress was lost is copied from its planned
            start, not refused (``--reset-progress``; :func:`~kafka_dr.core.progress.resume_offset`).
        :param clock: the wall clock (progress metadata, latency samples).
        :param fence_task_streams: fence the flow's streaming-task transactional id with every
            new producer (:class:`~kafka_dr.kafka.transactions.PartitionProducers`); off only for a
            task copier's own helper.
        :param limits: the target topics' size limits, shared with a task copier (read here otherwise)."""
        self.cfg, self.flow, self.resolve = cfg, flow, resolve
        self.tuning = tuning or CopyTuning()
        self.reseed = reseed or Reseed()
        self.allow_reset, self.clock = allow_reset, clock
        self.transform = self.reseed.transform or router_for(cfg, flow).transform()
        self.group = cfg.names.progress_group(flow.name)
        self.limits = limits or TargetLimits(cfg.cluster(flow.target), resolve)
        seed_map = self.reseed.seed_map_topic
        self.producers = PartitionProducers(
            cfg,
            flow,
            resolve,
            self.limits,
            [t for t in (flow.dead_letter_topic, seed_map) if t],
            every_report=seed_map is not None,
            overrides=self.tuning.producer_overrides,
            fence_task_streams=fence_task_streams,
        )
        self.hung_after: float | None = None  #: set while inside a transactional call (transactions.watched_call)
        self._source: Consumer | None = None
        #: (topic, partition, next offset) still assigned after an open range
        self._kept: tuple[str, int, int] | None = None
        self._meta: Consumer | None = None
        self._scan: Consumer | None = None  #: reads the target's newest copies (kafka_dr.kafka.progress_floor)
        self.first_run_gaps = FirstRunGaps(cfg, flow, self._has_copy)

    # --- clients ---------------------------------------------------------------------

    def _source_consumer(self) -> Consumer:
        if self._source is None:
            self._source = Consumer(self.source_consumer_config())
        return self._source

    def source_consumer_config(self) -> dict[str, Any]:
        """The source consumer's settings (:func:`~kafka_dr.kafka.copy_tuning.source_consumer_config`)."""
        return source_consumer_config(
            self.cfg.cluster(self.flow.source), self.resolve, self.group, self.tuning.consumer_overrides
        )

    def _progress_consumer(self) -> Consumer:
        """A group-less-in-practice consumer on the target: it only reads and stamps the
        progress group's offsets, and carries the group metadata transactions need."""
        if self._meta is None:
            conf = {"group.id": self.group, "enable.auto.commit": False, "isolation.level": "read_committed"}
            self._meta = Consumer(client_config(self.cfg.cluster(self.flow.target), self.resolve, **conf))
        return self._meta

    def _scanner(self) -> Consumer:
        if self._scan is None:
            self._scan = copy_scanner(self.cfg, self.flow, self.resolve)
        return self._scan

    def release(self) -> None:
        """Let the producers go, keeping the consumers (see ``TaskCopier.release``)."""
        self.producers.close()

    def close(self) -> None:
        self.producers.close()
        for c in (self._source, self._meta, self._scan):
            if c is not None:
                c.close()
        self._source = self._meta = self._scan = None
        self._kept = None

    # --- progress ----------------------------------------------------------------------

    def committed(self, spec: RangeSpec) -> int | None:
        """The committed next source offset for this partition, or ``None`` if none; an orphaned
        pending commit is cleared with the partition's producer (:func:`read_progress`), and
        progress behind the copies on the target moved up to them (:func:`floor_at_copies`)."""
        pair = (spec.topic, spec.target_topic, spec.partition)
        meta = self._progress_consumer()
        progress = read_progress(self.cfg, self.flow, meta, lambda: self.producers.get(spec), [pair], self.resolve)
        return floor_at_copies(
            self.flow,
            self._scanner(),
            lambda topic, partition: watermarks(self._source_consumer(), TopicPartition(topic, partition), 30)[1],
            lambda: self.producers.get(spec),
            meta.consumer_group_metadata(),
            progress,
        )[pair]

    def _has_copy(self, spec: RangeSpec) -> bool:
        """Does the target hold a copy of ``spec``'s partition made by this flow? (a scan)"""
        pair = (spec.topic, spec.target_topic, spec.partition)
        return last_copy(self._scanner(), self.flow, pair, 10_000, 60) is not None

    # --- the copy ----------------------------------------------------------------------

    def copy(
        self,
        spec: RangeSpec,
        until: Callable[[], bool] | None = None,
        on_commit: OnCommit | None = None,
        may_redo: Callable[[], bool] | None = None,
    ) -> RangeResult:
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
            except BelowLogStart as e:
                # the source deleted records at or after our position (retention outran
                # replication): read where its log starts now and redo from committed progress
                log_start, partial = self.log_start(spec), getattr(e, "partial_result", partial)
            except Exception as e:
                # fenced, fatal or mid-transaction: a fresh producer (init_transactions) is the one state known clean
                self.producers.drop(spec)
                if fresh_producers > 0 and producer_lost(e) and (may_redo is None or may_redo()):
                    # another worker's copier took over this partition's transactional id; a
                    # fresh producer fences it back and the range resumes from committed progress
                    log.warning(
                        "flow %s: %s[%d]: producer fenced or failed (%s); redoing the range with a fresh one",
                        self.flow.name,
                        spec.topic,
                        spec.partition,
                        e,
                    )
                    fresh_producers -= 1
                    partial = getattr(e, "partial_result", partial)
                    continue
                raise
        raise RuntimeError(
            f"flow {self.flow.name}: {self.flow.source}/{spec.topic}[{spec.partition}]: the log start kept moving past "
            f"the copy position (retention deleting faster than replication copies?)"
        )

    def lag(self, spec: RangeSpec, position: int) -> int:
        """Source records after ``position``, by the high watermark of the last fetch (no round trip)."""
        _, high = self._source_consumer().get_watermark_offsets(TopicPartition(spec.topic, spec.partition), cached=True)
        return max(0, high - position)

    def planned_start(self, spec: RangeSpec, committed: int | None, low: int) -> int:
        """The start :func:`~kafka_dr.core.progress.resume_offset` is to hold ``spec`` to.

        An open range's (a streaming task's) planned start is where the source *ended* when its
        micro-batch was planned, not where the copy stands. So a partition without committed
        progress only because the target was lost before its first commit would be refused as
        lost progress, stopping the job for good. Decided as the query's start decides it
        (:func:`~kafka_dr.core.progress.lost_progress_starts`): no copy of the partition on the
        target means nothing was copied, so it starts at the log start (``low``); a copy keeps
        the planned start, and the refusal stands."""
        if committed is None and spec.end == OPEN and spec.start > low and not self._has_copy(spec):
            log.warning(
                "flow %s: %s[%d] has no committed progress and no copy on %s yet: copying from its log start %d, "
                "not from the planned %d",
                self.flow.name,
                spec.topic,
                spec.partition,
                self.flow.target,
                low,
                spec.start,
            )
            return low
        return spec.start

    def log_start(self, spec: RangeSpec) -> int:
        """Where the source partition's log starts now (a round trip)."""
        low, _ = watermarks(self._source_consumer(), TopicPartition(spec.topic, spec.partition), 30)
        return low

    def _copy(
        self,
        spec: RangeSpec,
        t0: float,
        log_start: int | None,
        partial: RangeResult | None,
        until: Callable[[], bool] | None,
        on_commit: OnCommit | None,
    ) -> RangeResult:
        """One attempt at the range.

        The source's log start is only asked for when it decides something: when there is no
        committed progress (first copy, or lost progress), or after the source answered "offset
        out of range" (``auto.offset.reset=error``, so the consumer never skips silently). The
        common case, committed progress inside the log, costs no round trip for it."""
        self.producers.get(spec)  # fences zombies first
        source = self._source_consumer()
        committed = self.committed(spec)
        if committed is None and log_start is None:
            log_start = self.log_start(spec)
        low = log_start if log_start is not None else 0
        try:
            start = resume_offset(committed, self.planned_start(spec, committed, low), low, self.allow_reset)
        except ProgressLost as e:
            raise ProgressLost(
                f"flow {self.flow.name}: {self.flow.source}/{spec.topic}[{spec.partition}] -> "
                f"{self.flow.target}/{spec.target_topic}[{spec.partition}]: {e} (was the target topic deleted?)"
            ) from None
        result = partial or RangeResult(
            self.flow.name, spec.topic, spec.partition, spec.target_topic, spec.start, start, spec.end
        )
        if partial is not None and partial.read == 0:
            result.start = start  # nothing copied before the redo: the copy really starts here
        if committed is not None and committed < low:
            result.add_lost(committed, low - 1)
            log.error(
                "flow %s: %s[%d] records %d..%d were deleted on the source before they were replicated",
                self.flow.name,
                spec.topic,
                spec.partition,
                committed,
                low - 1,
            )
        self.first_run_gaps.check(spec, committed, low, start, result)
        if on_commit is not None:
            on_commit(result, start, [])
        if start >= spec.end:
            result.seconds = time.monotonic() - t0
            return result

        # an open range leaves its partition assigned when it ends, so the next task's range keeps
        # what was fetched in between: re-assigning pauses every task boundary (docs/benchmarks.md#settings)
        if self._kept != (spec.topic, spec.partition, start):
            source.assign([TopicPartition(spec.topic, spec.partition, start)])
        self._kept = None
        reached = None
        try:
            group_meta = self._progress_consumer().consumer_group_metadata()
            latencies, reached = ChunkLoop(self, spec, source, group_meta, result, until, on_commit).run(start)
        except Exception as e:
            if isinstance(e, BelowLogStart) or producer_lost(e):
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

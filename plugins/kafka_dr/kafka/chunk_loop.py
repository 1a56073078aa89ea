"""One range copy's transactions (chunks): fill one, commit it with its progress, redo it if refused.

A chunk holds at most ``chunk_records`` records and lasts at most ``chunk_seconds``; an open
range's ends as soon as a read returns fewer records than asked for (group commit,
docs/replication.md#continuous-flows-streaming-tasks). Its progress offset commits in the same
transaction. A chunk the target refuses is aborted whole and redone: with a fresh producer when
a topic's size limit changed since its batches were sized, otherwise *precisely* (each record
with its own delivery callback) to learn which record is to blame
(:class:`~kafka_dr.kafka.refusals.Chunk`). Without a dead-letter topic the copy then stops,
naming the record; with one, the chunk is redone from its first offset with that record set aside.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import NoReturn, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from kafka_dr.core.config import FlowConfig
from kafka_dr.core.failback import runs_from_pairs, seed_map_key, seed_map_value
from kafka_dr.core.loop import Transform
from kafka_dr.core.progress import encode_metadata
from kafka_dr.core.record_batch import own_batch_bytes
from kafka_dr.kafka import permissions
from kafka_dr.kafka.copy_errors import (
    PRODUCER_LOST,
    TARGET_UNAVAILABLE,
    BelowLogStart,
    ProducerLost,
    RecordRejected,
    producer_lost,
    target_missing,
)
from kafka_dr.kafka.copy_spec import OPEN, OnCommit, RangeResult, RangeSpec, Reseed
from kafka_dr.kafka.copy_tuning import CopyTuning, read_wait
from kafka_dr.kafka.gc_pause import gc_paused
from kafka_dr.kafka.refusals import Chunk
from kafka_dr.kafka.target_limits import RESIZES, TargetLimits, size_refusal
from kafka_dr.kafka.transactions import (
    OFFSETS_CALL_SECONDS,
    PartitionProducers,
    abort_quietly,
    resume_abort,
    watched_call,
)

log = logging.getLogger(__name__)


class Owner(Protocol):
    """What a chunk loop uses of its :class:`~kafka_dr.kafka.copier.RangeCopier`."""

    flow: FlowConfig
    tuning: CopyTuning
    reseed: Reseed
    transform: Transform
    clock: Callable[[], float]
    limits: TargetLimits
    producers: PartitionProducers
    #: set while inside a transactional call (:func:`~kafka_dr.kafka.transactions.watched_call`)
    hung_after: float | None


class ChunkLoop:
    """The transactions of one attempt at a range, for ``owner`` (module docstring)."""

    def __init__(
        self,
        owner: Owner,
        spec: RangeSpec,
        source: Consumer,
        group_meta,
        result: RangeResult,
        until: Callable[[], bool] | None = None,
        on_commit: OnCommit | None = None,
    ) -> None:
        self.owner, self.flow, self.spec, self.source, self.group_meta = owner, owner.flow, spec, source, group_meta
        self.result, self.until, self.on_commit = result, until, on_commit
        self.latencies: list[int] = []  #: latency samples (ms) of records copied by committed chunks
        self.dead: dict[int, str] = {}  #: source offsets to set aside, with why the target refused them

    def run(self, start: int) -> tuple[list[int], int]:
        """Copy ``[start, end)`` (until ``until()``); returns the latency samples and where the copy stopped."""
        spec, result, until, producers = self.spec, self.result, self.until, self.owner.producers
        producer, failures = producers.get(spec), producers.reports(spec).failures
        next_offset, seed_map = start, self.owner.reseed.seed_map_topic is not None
        done, precise, resized = False, seed_map, 0
        while not done and not (until is not None and until()):
            limit = self.owner.limits.limit(spec.target_topic) if precise else None
            chunk = Chunk(first_offset=next_offset, precise=precise, limit=limit)
            failures.clear()
            producer.begin_transaction()
            with gc_paused():  # the loop makes no cycles, and collecting is costly (kafka_dr.kafka.gc_pause)
                next_offset, done, counts = self._fill(producer, chunk)
            if next_offset == chunk.first_offset and not failures:
                producer.commit_transaction(30)  # nothing read (an idle open range): an empty transaction ends locally
                continue
            refused = self._commit(producer, chunk, next_offset, failures)
            if refused is not None:
                result.aborted += 1
                self.source.seek(TopicPartition(spec.topic, spec.partition, chunk.first_offset))
                reached, next_offset, done = next_offset, chunk.first_offset, False
                if size_refusal(refused) and resized < RESIZES and producers.resized(spec):
                    result.refused += 1
                    resized += 1
                    producer, failures = producers.get(spec), producers.reports(spec).failures
                    continue
                offset = chunk.blamed()
                if offset < 0 and not chunk.precise:  # refused, but which record is unknown: redo this chunk precisely
                    precise = True
                    continue
                self.dead[offset] = self._dead_letter_reason(producer, chunk, offset, reached)
                result.refused += 1
                continue
            precise, resized = seed_map, 0
            for k, v in counts.items():
                setattr(result, k, getattr(result, k) + v)
            result.transactions += 1
            if self.on_commit is not None:
                self.on_commit(result, next_offset, self.latencies)
        return self.latencies, next_offset

    def _fill(self, producer: Producer, chunk: Chunk) -> tuple[int, bool, dict[str, int]]:
        """Read and produce one chunk's records; returns (next offset, range done, counts).

        Where a copy spends its time: per record only the loop policy's decision and one
        ``produce``, counters in locals; each rare case is a method of its own."""
        owner, spec, source, dead, latencies = self.owner, self.spec, self.source, self.dead, self.latencies
        transform, produce, delivered = owner.transform, producer.produce, chunk.delivered
        target_topic, topic, partition, end = spec.target_topic, spec.topic, spec.partition, spec.end
        keep_ts, precise = owner.reseed.keep_timestamp, chunk.precise
        wait, stall_seconds = read_wait(owner.tuning.chunk_seconds), owner.tuning.stall_seconds
        read = written = filtered = nbytes = dead_lettered = 0
        next_offset, done, caught_up = chunk.first_offset, False, False
        deadline = time.monotonic() + owner.tuning.chunk_seconds
        last_progress = time.monotonic()
        while True:
            want = max(1, min(5000, end - next_offset))  # no more than the range holds: returns once they are in
            msgs = source.consume(num_messages=want, timeout=wait)
            if end == OPEN and len(msgs) < want:
                caught_up = True  # group commit (module docstring); partition EOF is no such signal under load
            if msgs:
                last_progress = time.monotonic()
            elif end < OPEN and time.monotonic() - last_progress > stall_seconds:  # an open range may just be idle
                self._stalled(producer, next_offset)
            now_ms = int(owner.clock() * 1000)
            for msg in msgs:
                if msg.error() is not None:
                    if self._at_range_end(producer, msg, next_offset):
                        next_offset, done = end, True
                        break
                    continue
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
                    self._dead_letter(producer, off, key, value, out, ts, dead[off])
                    dead_lettered += 1
                    continue
                if not read & 15:
                    latencies.append(now_ms - ts)
                try:  # the common case inline
                    if precise:
                        produce(
                            target_topic,
                            value,
                            key,
                            partition,
                            on_delivery=functools.partial(delivered, off, out),
                            timestamp=ts,
                            headers=out,
                        )
                    else:
                        produce(target_topic, value, key, partition, timestamp=ts, headers=out)
                except (BufferError, KafkaException):  # queue full, or refused on the spot: the slow path
                    if self._produce_slowly(producer, chunk, off, key, value, out, ts):
                        return next_offset, False, {}  # refused: run() decides as for a refusal by the target
                written += 1
                if value:
                    nbytes += len(value)
                if key:
                    nbytes += len(key)
            if not done and next_offset >= end:
                done = True
            if done or self._chunk_full(read, deadline, caught_up):
                counts = {
                    "read": read,
                    "written": written,
                    "filtered": filtered,
                    "bytes": nbytes,
                    "dead_lettered": dead_lettered,
                }
                return next_offset, done, counts

    # --- the rare cases of a chunk -------------------------------------------------------

    def _chunk_full(self, read: int, deadline: float, caught_up: bool) -> bool:
        """Does the chunk end before its range does: ``chunk_records`` read, ``chunk_seconds`` up,
        an open range caught up with what was fetched (group commit), or told to stop?"""
        return (
            read >= self.owner.tuning.chunk_records
            or time.monotonic() >= deadline
            or (caught_up and read > 0)
            or (self.until is not None and self.until())
        )

    def _stalled(self, producer: Producer, position: int) -> NoReturn:
        spec = self.spec
        abort_quietly(producer)
        raise TimeoutError(
            f"flow {self.flow.name}: no records from {self.flow.source}/{spec.topic}[{spec.partition}] for "
            f"{self.owner.tuning.stall_seconds:.0f}s at offset {position} (range ends at {spec.end}); "
            f"is the source reachable?"
        )

    def _at_range_end(self, producer: Producer, msg, position: int) -> bool:
        """A consumer event instead of a record. The partition's end at or past the range's end:
        everything up to it is seen (what was not delivered are transaction markers and aborted
        records). An end below it is stale (from before this assignment): go on. Errors raise."""
        err = msg.error()
        if err.code() == KafkaError._PARTITION_EOF:
            return msg.offset() >= self.spec.end
        abort_quietly(producer)
        if err.code() == KafkaError._AUTO_OFFSET_RESET:
            raise BelowLogStart("offset out of range on the source")
        if permissions.is_denied(err):
            raise permissions.in_flow(self.flow.name, permissions.read_refused(self.flow.source, self.spec.topic))
        raise RuntimeError(
            f"flow {self.flow.name}: reading {self.spec.topic}[{self.spec.partition}] at offset {position}: {err.str()}"
        )

    def _produce_slowly(self, producer: Producer, chunk: Chunk, off: int, key, value, headers, ts: int) -> bool:
        """Queue a record whose ``produce`` raised, waiting while the queue is full; True when
        librdkafka refuses it on the spot (noted in ``chunk``, which ends there)."""
        topic, partition = self.spec.target_topic, self.spec.partition
        cb = {"on_delivery": functools.partial(chunk.delivered, off, headers)} if chunk.precise else {}
        while True:
            try:
                producer.produce(topic, value=value, key=key, headers=headers, partition=partition, timestamp=ts, **cb)
                return False
            except BufferError:
                producer.poll(0.05)
            except KafkaException as e:
                if producer_lost(e):
                    raise ProducerLost(
                        f"flow {self.flow.name}: producer for {topic}[{partition}] fenced or failed: {e.args[0].str()}"
                    ) from None
                chunk.refused_at_produce(off, e.args[0], own_batch_bytes(key, value, headers))
                return True

    def _dead_letter_reason(self, producer: Producer, chunk: Chunk, offset: int, reached: int) -> str:
        """Why the record at ``offset`` (-1: none could be blamed) was refused, for the dead-letter
        topic; raises when the copy must stop instead: no record to blame, the target topic gone,
        no dead-letter topic, or the record refused again after it was set aside."""
        flow, spec = self.flow, self.spec
        where = f"{flow.source}/{spec.topic}[{spec.partition}]"
        if offset < 0:
            raise RuntimeError(
                f"flow {flow.name}: {flow.target} refused {where} offsets {chunk.first_offset}..{reached - 1} for "
                f"their size, yet none is larger than {spec.target_topic}'s max.message.bytes ({chunk.limit}) on its "
                f"own (limits changing while copying?); rolled back, nothing of them committed"
            )
        reason = chunk.reason(flow.target, spec.target_topic, self.owner.limits.limit(spec.target_topic))
        gone = target_missing(producer, spec.target_topic)
        if gone or not flow.dead_letter_topic or offset in self.dead:
            hint = (
                f"; {flow.target}/{spec.target_topic} does not exist (deleted mid-run?): it is not recreated behind "
                f"the operator's back, restart the flow to have it created again"
                if gone
                else ("" if flow.dead_letter_topic else "; configure dead_letter_topic to set such records aside")
            )
            raise RecordRejected(
                f"flow {flow.name}: {flow.target} refused {where}@{offset} (-> {spec.target_topic}[{spec.partition}]): "
                f"{reason}; the chunk from offset {chunk.first_offset} was rolled back and nothing after it copied"
                + hint
            )
        return reason

    def _dead_letter(self, producer: Producer, off: int, key, value, headers, ts: int, reason: str) -> None:
        """Set a refused record aside, in the same transaction, with where it came from and why.

        The value is kept when it fits; a record refused for its size keeps key and headers
        only (``dr.dlq.value.bytes`` says how big it was), so the dead-letter write cannot fail
        for the same reason."""
        flow, spec = self.flow, self.spec
        size = len(value) if value else 0
        too_big = "too large" in reason.lower() or "size" in reason.lower()
        extra = [
            ("dr.dlq.reason", reason.encode()),
            ("dr.dlq.source", f"{flow.source}/{spec.topic}[{spec.partition}]@{off}".encode()),
            ("dr.dlq.value.bytes", str(size).encode()),
        ]
        log.error(
            "flow %s: %s/%s[%d]@%d set aside in %s: %s",
            flow.name,
            flow.source,
            spec.topic,
            spec.partition,
            off,
            flow.dead_letter_topic,
            reason,
        )
        producer.produce(
            flow.dead_letter_topic, key=key, value=None if too_big else value, headers=[*headers, *extra], timestamp=ts
        )

    # --- the end of a chunk --------------------------------------------------------------

    def _commit(
        self, producer: Producer, chunk: Chunk, next_offset: int, failures: list[KafkaError]
    ) -> KafkaError | None:
        """Commit the chunk and its progress; on a refused record, abort and return the refusal
        (which record it is blamed on: ``chunk.blamed()``)."""
        flow, spec = self.flow, self.spec
        span = f"{spec.topic}[{spec.partition}] offsets {chunk.first_offset}..{next_offset - 1}"
        deadline = time.monotonic() + 120
        # until all is acknowledged, or the first failure: the chunk is lost then, and abort purges the
        # rest (records queued behind a refused one would otherwise sit out delivery.timeout.ms)
        while True:
            left = producer.flush(0.2)
            if not left or chunk.error is not None or failures or time.monotonic() >= deadline:
                break
        if chunk.error is None and failures:
            chunk.error = failures[0]
        if chunk.error is not None:
            aborted = abort_quietly(producer)
            if permissions.is_denied(chunk.error):  # no record's fault: never dead-lettered
                raise permissions.in_flow(flow.name, permissions.write_refused(flow.target, spec.target_topic))
            if chunk.error.code() in PRODUCER_LOST:
                refusal = permissions.write_refusal(self.owner.limits.admin(), flow.target, [spec.target_topic])
                if refusal is not None:
                    raise permissions.in_flow(flow.name, refusal)
                raise ProducerLost(
                    f"flow {flow.name}: the producer for {spec.topic}[{spec.partition}] was fenced or failed "
                    f"({chunk.error.str()}); offsets {chunk.first_offset}..{next_offset - 1} rolled back"
                )
            if chunk.error.code() in TARGET_UNAVAILABLE and not target_missing(producer, spec.target_topic):
                # the target was down or cut off longer than delivery.timeout.ms: not the record's
                # fault, so no refusal and no dead letter; the job restarts the query with backoff
                raise TimeoutError(
                    f"flow {flow.name}: {flow.target} did not acknowledge {flow.source}/{span} "
                    f"({chunk.error.str()}); rolled back, nothing of them committed; is the target reachable?"
                )
            if not aborted:  # the redo begins a transaction with this producer: see the abort through first
                resume_abort(producer)
            return chunk.error
        if left:
            abort_quietly(producer)
            raise TimeoutError(
                f"flow {flow.name}: {left} record(s) of {span} not acknowledged by {flow.target} "
                f"within 120s; rolled back, nothing of them committed"
            )
        if self.owner.reseed.seed_map_topic and chunk.pairs:
            self._write_seed_map(producer, chunk)
        lost = self.owner.producers.reports(spec).lost
        if lost:
            abort_quietly(producer)
            raise ProducerLost(
                f"flow {flow.name}: the producer for {spec.topic}[{spec.partition}] lost its connection to "
                f"{flow.target} ({lost[0].str()}); offsets "
                f"{chunk.first_offset}..{next_offset - 1} rolled back, redone by a fresh producer"
            )
        meta = encode_metadata(spec.topic, int(self.owner.clock() * 1000))
        with watched_call(self.owner, OFFSETS_CALL_SECONDS):
            producer.send_offsets_to_transaction(
                [TopicPartition(spec.target_topic, spec.partition, next_offset, meta)],
                self.group_meta,
                OFFSETS_CALL_SECONDS,
            )
        with watched_call(self.owner, 60):
            producer.commit_transaction(60)
        return None

    def _write_seed_map(self, producer: Producer, chunk: Chunk) -> None:
        """The chunk's (source offset, target offset) runs, in its transaction (failback's re-seed)."""
        spec, topic = self.spec, self.owner.reseed.seed_map_topic
        for run in runs_from_pairs(chunk.pairs):
            producer.produce(
                topic, key=seed_map_key(spec.target_topic, spec.partition, run.source_start), value=seed_map_value(run)
            )
        if producer.flush(60):
            abort_quietly(producer)
            raise TimeoutError(
                f"flow {self.flow.name}: seed map of {spec.topic}[{spec.partition}] not acknowledged; rolled back"
            )

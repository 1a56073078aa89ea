"""The copiers' transactional producers: building one, fencing, aborting, letting go.

A copier's ``transactional.id`` is fixed (per flow, topic and partition, or per flow for a
streaming task's copier), so ``init_transactions`` of a new producer fences every earlier one
of that id and aborts its open transaction. Committed progress is read only after that.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.kafka import permissions
from kafka_dr.kafka.clients import (
    SecretResolver,
    client_config,
    connect_to_a_known_broker,
    one_shot_transactional_config,
)
from kafka_dr.kafka.copy_errors import CONNECTION_LOST
from kafka_dr.kafka.copy_spec import RangeSpec
from kafka_dr.kafka.target_limits import TargetLimits

log = logging.getLogger(__name__)

#: how long past its own timeout a transactional call may run before the streaming task that
#: watches the copy counts it hung (:func:`watched_call`)
CALL_GRACE_SECONDS = 5.0
#: ``send_offsets_to_transaction``'s own timeout: a healthy call takes milliseconds, one that
#: meets a group coordinator moving after a broker's restart a few seconds; a hung one
#: (librdkafka#5511) is given up 20 s after it began
OFFSETS_CALL_SECONDS = 15.0


@contextlib.contextmanager
def watched_call(holder: Any, timeout: float):
    """Mark ``holder`` (a copier) as inside a Kafka call that should be over within ``timeout``
    seconds: ``holder.hung_after`` is the monotonic time past which it counts as hung.

    Why: librdkafka can hang ``send_offsets_to_transaction`` after a target restart with no
    regard for its timeout; the streaming task's watchdog (:mod:`kafka_dr.spark.streams`) then
    restarts the query :data:`CALL_GRACE_SECONDS` past that timeout, not after its general
    limit (docs/replication.md#failures)."""
    holder.hung_after = time.monotonic() + timeout + CALL_GRACE_SECONDS
    try:
        yield
    finally:
        holder.hung_after = None


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


def transactional_producer(
    cfg: DrConfig,
    flow: FlowConfig,
    resolve: SecretResolver | None,
    txn_id: str,
    reports: Reports,
    every_report: bool = False,
    overrides: dict[str, Any] | None = None,
) -> Producer:
    """A copier's producer on the flow's target, its transactions initialised (which fences
    every earlier producer of ``txn_id`` and aborts its open transaction)."""
    timeout_ms = flow.transaction_timeout_seconds * 1000
    conf = client_config(
        cfg.cluster(flow.target),
        resolve,
        **{
            "transactional.id": txn_id,  # librdkafka's sparse connections kept (one_shot_transactional_config)
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 10,
            "batch.size": 1_000_000,  # the copiers size it to the target topics' limits (target_limits.producer_sizing)
            "compression.type": "lz4",
            "transaction.timeout.ms": timeout_ms,
            # a refused or unreachable target surfaces within a minute; librdkafka wants a
            # transactional producer's delivery timeout within its transaction timeout
            "delivery.timeout.ms": min(60_000, timeout_ms),
            "queue.buffering.max.messages": 500_000,
            "queue.buffering.max.kbytes": 512 * 1024,
            **(overrides or {}),
        },
    )
    # Delivery reports only for failures, as a per-record Python callback is costly
    # (docs/benchmarks.md#settings); a refused chunk is redone with one per record to name the
    # record. A seed map needs every record's target offset, so it keeps all reports.
    conf["delivery.report.only.error"] = not every_report
    conf["on_delivery"] = reports.delivery
    # A lost connection to the target marks this producer: its next chunk is redone by a fresh
    # one, as librdkafka can keep a restarted broker's retired handle as the group coordinator
    # and hang send_offsets_to_transaction then (docs/replication.md#failures).
    conf["error_cb"] = reports.error
    p = Producer(conf)
    connect_to_a_known_broker(p)
    init_transactions(p, flow, txn_id)
    return p


def init_transactions(producer: Producer, flow: FlowConfig, txn_id: str) -> None:
    """``init_transactions``, a refusal by the target's authorizer named as such."""
    try:
        producer.init_transactions(30)
    except KafkaException as e:
        if permissions.is_denied(e):
            what = permissions.denied(
                flow.target, f"use transactional id {txn_id!r}", "WRITE", permissions.transactional_id(txn_id)
            )
            raise permissions.PermissionDenied(f"flow {flow.name}: {what}") from None
        raise


def fence(cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None, txn_ids: list[str]) -> None:
    """Fence every producer of ``txn_ids`` on the flow's target: ``init_transactions`` with each
    id bumps its epoch (an older instance's next call fails) and aborts its open transaction.

    Why: a partition's progress is committed by whichever copier runs it, a per-partition
    one (fixed ranges, ``--tasks`` > 1) or a streaming task's (one id for the flow's
    partitions, :mod:`kafka_dr.kafka.task_copier`). Two ids on one partition fence nothing of
    each other by themselves, so each kind fences the other's ids before it copies."""
    timeout_ms = flow.transaction_timeout_seconds * 1000
    for txn_id in txn_ids:
        conf = one_shot_transactional_config(
            cfg.cluster(flow.target), resolve, txn_id, **{"transaction.timeout.ms": timeout_ms}
        )
        init_transactions(Producer(conf), flow, txn_id)


def discard(producer: Producer | None) -> None:
    """Let go of a copier's producer without sending what it still holds.

    Every committed transaction was flushed by ``commit_transaction``, so whatever is still
    queued belongs to a transaction that is open, aborted or fenced: writing it could only
    add records to be aborted. So nothing is flushed and no callback is served: a flush of a
    fenced producer raises its fatal error, or ``SystemError`` caused by it (see
    :func:`~kafka_dr.kafka.copy_errors.producer_lost`), which from a ``close`` in a ``finally``
    would hide the error that matters. A transaction left open on the broker is aborted by the
    next producer of the same id (``init_transactions``) or by ``transaction.timeout.ms``; an
    abort here could block such a ``close`` on an unreachable target."""
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
    abort_transaction API call is already in progress"), and calling it again resumes it. An
    abort with batches in flight behind a refused one can outlive its 30 s on a fresh cluster."""
    producer.abort_transaction(timeout)


class PartitionProducers:
    """A range copier's producers: one per source partition, of the partition's fixed
    ``transactional.id``, its batches sized to the limits of the topics it writes
    (:mod:`~kafka_dr.kafka.target_limits`).

    :param topics: the topics every producer writes besides its target topic (dead letters, seed map)
    :param every_report: a delivery report for every record, not only for failures (a seed map)
    :param fence_task_streams: fence the flow's streaming-task transactional id with every new
        producer (:func:`fence`); off only for a task copier's own helper"""

    def __init__(
        self,
        cfg: DrConfig,
        flow: FlowConfig,
        resolve: SecretResolver | None,
        limits: TargetLimits,
        topics: list[str],
        every_report: bool,
        overrides: Mapping[str, Any],
        fence_task_streams: bool,
    ) -> None:
        self.cfg, self.flow, self.resolve, self.limits, self.topics = cfg, flow, resolve, limits, topics
        self.every_report, self.overrides, self.fence_task_streams = every_report, overrides, fence_task_streams
        self.held: dict[tuple[str, int], Producer] = {}  #: by (source topic, partition)
        self._reports: dict[tuple[str, int], Reports] = {}  #: what each producer's callbacks reported
        self._sizing: dict[tuple[str, int], dict[str, int]] = {}  #: the batch sizing each producer was built with

    def get(self, spec: RangeSpec) -> Producer:
        """The partition's producer, built (and its zombies fenced) when there is none."""
        topic, partition = key = (spec.topic, spec.partition)
        p = self.held.get(key)
        if p is None:
            if self.fence_task_streams:
                # a streaming task's copier commits these partitions under the flow's task id: every
                # new producer fences that id too, so whichever copies next reads progress after it
                fence(self.cfg, self.flow, self.resolve, [self.cfg.names.task_transactional_id(self.flow.name)])
            reports = self._reports[key] = Reports()
            sizing = self.limits.sizing(
                [spec.target_topic, *self.topics]
            )  # batches within the topics' max.message.bytes
            txn_id = self.cfg.names.transactional_id(self.flow.name, topic, partition)
            overrides = {**sizing, **self.overrides}
            p = transactional_producer(self.cfg, self.flow, self.resolve, txn_id, reports, self.every_report, overrides)
            self.held[key], self._sizing[key] = p, sizing
        return p

    def reports(self, spec: RangeSpec) -> Reports:
        """What the partition's current producer reported (a new producer has new reports)."""
        return self._reports[(spec.topic, spec.partition)]

    def resized(self, spec: RangeSpec) -> bool:
        """After a refusal for size: read the limits again; when they changed since the
        partition's producer sized its batches, drop it (the next one sizes them again)."""
        topics = [spec.target_topic, *self.topics]
        self.limits.refresh(topics)
        sizing = self.limits.sizing(topics)
        if sizing == self._sizing.get((spec.topic, spec.partition)):
            return False
        log.warning(
            "flow %s: %s/%s's max.message.bytes changed while copying %s[%d]; batches sized again (%s)",
            self.flow.name,
            self.flow.target,
            spec.target_topic,
            spec.topic,
            spec.partition,
            sizing,
        )
        self.drop(spec)
        return True

    def drop(self, spec: RangeSpec) -> None:
        """Let the partition's producer go (:func:`discard`); the next :meth:`get` builds a fresh one."""
        discard(self.held.pop((spec.topic, spec.partition), None))

    def close(self) -> None:
        for p in self.held.values():
            discard(p)
        self.held.clear()

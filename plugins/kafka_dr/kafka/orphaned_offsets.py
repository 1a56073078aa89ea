"""Clear a transactional progress commit that no open transaction owns.

Progress is committed with ``send_offsets_to_transaction``: the coordinator holds the offset
*pending* until the transaction's marker arrives, and a ``read_committed`` progress read answers
"unstable" meanwhile. A broker restart with commits in flight can leave a pending offset whose
transaction is gone, so no marker ever comes (``tests/kafka_wire.py`` recreates it).

The cure: pending offsets are keyed by producer id, which belongs to the partition's fixed
``transactional.id`` (or the task id, :meth:`~kafka_dr.core.naming.InternalNames.task_transactional_id`).
A producer with that id begins a transaction, adds an offset for the same group and partition,
and aborts it; the abort drops every pending offset of that id. A pending offset of another
producer id is not ours: the read fails naming the partition (``kafka-transactions.sh``).

A pending commit may belong to a transaction that *committed* its records: :func:`repair_progress`
then sets progress to just after the last copy found on the target (records of a committed
transaction are the truth; an aborted one's are not readable ``read_committed``). See
docs/replication.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.kafka.clients import SecretResolver, client_config, one_shot_transactional_config
from kafka_dr.kafka.progress_floor import commit_moved
from kafka_dr.kafka.progress_store import ProgressUnstable, committed_with_retry, last_copied_offset, unstable
from kafka_dr.kafka.watermarks import watermarks

log = logging.getLogger(__name__)

#: a progress read still "unstable" after this long is taken for an orphaned commit: our own
#: transactions commit or abort in milliseconds, and a copier reads progress only after its
#: ``init_transactions`` aborted anything of its own still open
UNSTABLE_SECONDS = 15.0
#: when a query starts, progress still unstable after this long is held by a predecessor's open
#: transaction (the task of a killed driver): the new job's copiers fence its transactional ids
#: anyway, so the planner clears it at once rather than waiting out ``UNSTABLE_SECONDS``
START_UNSTABLE_SECONDS = 3.0


def abort_offsets_transaction(producer: Producer, group_meta, tps: list[TopicPartition]) -> None:
    """Begin, add offsets for ``tps`` to the progress group, abort: the abort marker drops every
    pending offset of this producer id. ``producer`` has no transaction open."""
    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition(tp.topic, tp.partition, 0) for tp in tps], group_meta, 30)
    producer.abort_transaction(30)


#: (source topic, target topic, partition): what a flow's progress is kept for
Pair = tuple[str, str, int]


def read_progress(
    cfg: DrConfig,
    flow: FlowConfig,
    consumer: Consumer,
    producer: Callable[[], Producer],
    pairs: list[Pair],
    resolve: SecretResolver | None = None,
) -> dict[Pair, int | None]:
    """The committed progress (next source offset, or None) of each of ``pairs``, read
    ``read_committed`` with ``consumer`` (of the flow's progress group).

    A copier calls it once its producer exists (``init_transactions`` aborted anything of its
    own still open), so a read that stays unstable for :data:`UNSTABLE_SECONDS` is an orphaned
    pending commit: it is cleared once with an aborted transaction of ``producer()`` (called
    only then: the range copier makes its producers lazily), the progress read again, and
    progress behind the copies on the target repaired (:func:`repair_progress`)."""
    tps = [TopicPartition(t, p) for _, t, p in pairs]
    named = ", ".join(f"{t}[{p}]" for _, t, p in pairs[:10]) + (" ..." if len(pairs) > 10 else "")
    cleared = False
    try:
        got = committed_with_retry(consumer, tps, UNSTABLE_SECONDS)
    except KafkaException as e:
        if not unstable(e):
            raise
        log.warning(
            "flow %s: progress of %s on %s stayed unstable for %.0fs (a pending transactional commit no transaction "
            "owns?); clearing it with an aborted transaction of the same transactional id",
            flow.name,
            named,
            flow.target,
            UNSTABLE_SECONDS,
        )
        abort_offsets_transaction(producer(), consumer.consumer_group_metadata(), tps)
        cleared = True
        try:
            got = committed_with_retry(consumer, tps, 60)
        except KafkaException as again:
            if not unstable(again):
                raise
            raise ProgressUnstable(
                f"flow {flow.name}: progress of {flow.target}/{named} stays unstable "
                f"after this flow's own pending commit was cleared: another producer's transaction holds it "
                f"(kafka-transactions.sh find-hanging / abort on {flow.target})"
            ) from None
    progress: dict[Pair, int | None] = {}
    for pair, tp in zip(pairs, got):
        if tp.error is not None:
            raise KafkaException(tp.error)
        progress[pair] = tp.offset if tp.offset >= 0 else None
    if cleared:
        progress = repair_progress(cfg, flow, producer(), consumer.consumer_group_metadata(), progress, resolve)
    return progress


def repair_progress(
    cfg: DrConfig,
    flow: FlowConfig,
    producer: Producer,
    group_meta,
    committed: dict[Pair, int | None],
    resolve: SecretResolver | None = None,
    why: str = "the cleared commit was of a committed transaction",
) -> dict[Pair, int | None]:
    """After a pending commit was cleared: the progress of each (source topic, target topic,
    partition) of ``committed`` (its committed next offset, or None), moved up to just after
    the last copy of that partition on the target where that is ahead, and committed in one
    offsets-only transaction of ``producer`` (initialised, no transaction open). Returns the
    progress as it now stands (module docstring).

    A copy past the source's end offset means the source topic is not the one copied (it was
    recreated); the progress is then left as it is, for the copier to report."""
    source = Consumer(
        client_config(
            cfg.cluster(flow.source),
            resolve,
            **{"group.id": cfg.names.progress_group(flow.name), "enable.auto.commit": False},
        )
    )
    moved: dict[Pair, int] = {}
    try:
        for (topic, target_topic, partition), done in committed.items():
            try:
                last = last_copied_offset(cfg, flow, topic, target_topic, partition, resolve)
            except TimeoutError as e:  # another producer's open transaction holds the read: leave it
                log.warning("flow %s: %s", flow.name, e)
                continue
            if last is None or (done is not None and last < done):
                continue
            end = watermarks(source, TopicPartition(topic, partition), 30)[1]
            if last + 1 > end:
                log.warning(
                    "flow %s: %s/%s[%d] holds a copy of offset %d, past the end of %s/%s[%d] (%d): "
                    "progress left as it is",
                    flow.name,
                    flow.target,
                    target_topic,
                    partition,
                    last,
                    flow.source,
                    topic,
                    partition,
                    end,
                )
                continue
            moved[(topic, target_topic, partition)] = last + 1
    finally:
        source.close()
    if moved:
        commit_moved(flow, producer, group_meta, committed, moved, why)
    return {**committed, **moved}


def _progress_reader(cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None) -> Consumer:
    """A consumer of the flow's progress group on its target that only reads (``read_committed``)."""
    group = cfg.names.progress_group(flow.name)
    conf = {"group.id": group, "enable.auto.commit": False, "isolation.level": "read_committed"}
    return Consumer(client_config(cfg.cluster(flow.target), resolve, **conf))


def clear_flow_orphans(
    cfg: DrConfig, flow: FlowConfig, pairs: list[Pair], resolve: SecretResolver | None = None
) -> None:
    """Clear orphaned progress commits of ``pairs`` ((source topic, target topic, partition)),
    one short-lived producer per transactional id. Fences a running copier of these
    partitions (it redoes its chunk from committed progress), so it is for a job's start.
    Progress behind the copies on the target is then repaired (:func:`repair_progress`)."""
    target = cfg.cluster(flow.target)
    meta = _progress_reader(cfg, flow, resolve)
    try:
        group_meta = meta.consumer_group_metadata()
        for source_topic, target_topic, partition in pairs:
            p = Producer(
                one_shot_transactional_config(
                    target, resolve, cfg.names.transactional_id(flow.name, source_topic, partition)
                )
            )
            p.init_transactions(30)
            abort_offsets_transaction(p, group_meta, [TopicPartition(target_topic, partition)])  # synchronous
        # a whole streaming task commits every partition's progress under the flow's task id
        p = Producer(one_shot_transactional_config(target, resolve, cfg.names.task_transactional_id(flow.name)))
        p.init_transactions(30)
        abort_offsets_transaction(p, group_meta, [TopicPartition(t, q) for _, t, q in pairs])
        log.warning(
            "flow %s: cleared pending progress commits no transaction owned on %s (%d partition(s)); "
            "progress reads were unstable",
            flow.name,
            flow.target,
            len(pairs),
        )
        try:
            got = committed_with_retry(meta, [TopicPartition(t, q) for _, t, q in pairs], 60)
        except KafkaException:
            return  # still unstable: the caller's read names what holds it
        repair_progress(
            cfg,
            flow,
            p,
            group_meta,
            {pair: (tp.offset if tp.offset >= 0 else None) for pair, tp in zip(pairs, got) if tp.error is None},
            resolve,
        )
    finally:
        meta.close()


def floor_progress_at_copies(
    cfg: DrConfig, flow: FlowConfig, pairs: list[Pair], resolve: SecretResolver | None = None
) -> dict[Pair, int | None]:
    """The committed progress of ``pairs``, first moved up to just after the target's last copy
    of each partition where it is behind (:func:`repair_progress`), without clearing anything.

    For a copy that follows an unclean restart of the target's brokers (a failback): their
    replay of the progress group has been seen to answer a stable progress half an hour behind
    the copies, and a copy from there duplicates everything since. Progress never moves
    backwards past what the target holds. Uses the flow's task transactional id, so a streaming
    task of the flow still running would be fenced: call it while the flow is stopped."""
    meta = _progress_reader(cfg, flow, resolve)
    try:
        try:
            got = committed_with_retry(meta, [TopicPartition(t, q) for _, t, q in pairs], 60)
        except KafkaException as e:
            if not unstable(e):
                raise
            return {}  # a pending commit: the copier's own read clears it and repairs (read_progress)
        committed = {pair: (tp.offset if tp.offset >= 0 else None) for pair, tp in zip(pairs, got) if tp.error is None}
        p = Producer(
            one_shot_transactional_config(cfg.cluster(flow.target), resolve, cfg.names.task_transactional_id(flow.name))
        )
        p.init_transactions(30)
        why = "progress replayed by the target's brokers behind the copies they hold"
        return repair_progress(cfg, flow, p, meta.consumer_group_metadata(), committed, resolve, why)
    finally:
        meta.close()

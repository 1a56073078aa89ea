"""Clear a transactional progress commit that no open transaction owns.

The flow's progress is committed with ``send_offsets_to_transaction``: the group coordinator
holds the offset *pending* until the transaction's marker arrives, and a ``read_committed``
(``require_stable``) read of that partition answers "unstable" meanwhile. Seen once in CI,
after the target broker restarted while commits were in flight: the pending commit stayed,
no transaction was ongoing (``kafka-transactions.sh list``), so no marker would ever come,
and every progress read of the partition timed out; the flow could neither start nor
restart. ``tests/kafka_wire.py`` recreates that state on the lab.

The cure uses Kafka's own bookkeeping: the coordinator keys pending offsets by producer id,
and the producer id belongs to the partition's fixed ``transactional.id`` (or the flow's
task id, :func:`~kafka_dr.core.progress.task_transactional_id`, for a whole streaming task). A producer with
that id (``init_transactions`` first: it fences and aborts whatever is really open) begins a
transaction, adds an offset for the same group and partition, and aborts it. The abort marker
carries the producer id, and the coordinator drops every pending offset of that id: the
orphan with it. Nothing is committed; the committed progress is untouched.

A pending offset of another producer id (not one of ours) is not cleared; the read then
fails naming the partition, and ``kafka-transactions.sh find-hanging``/``abort`` is the tool.
"""

from __future__ import annotations

import logging

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.progress import progress_group, task_transactional_id, transactional_id
from kafka_dr.kafka.clients import SecretResolver, client_config, one_shot_transactional_config

log = logging.getLogger(__name__)

#: a progress read still "unstable" after this long is taken for an orphaned commit: our own
#: transactions commit or abort in milliseconds, and a copier reads progress only after its
#: ``init_transactions`` aborted anything of its own still open
UNSTABLE_SECONDS = 15.0


class ProgressUnstable(RuntimeError):
    """A ``read_committed`` progress read kept timing out (a pending transactional commit)."""


def unstable(e: KafkaException) -> bool:
    """Did a ``committed()`` read time out (how librdkafka reports UNSTABLE_OFFSET_COMMIT
    answers that never settle)?"""
    return e.args[0].code() == KafkaError._TIMED_OUT


def abort_offsets_transaction(producer: Producer, group_meta, tps: list[TopicPartition]) -> None:
    """Begin, add offsets for ``tps`` to the progress group, abort: the abort marker drops every
    pending offset of this producer id. ``producer`` has no transaction open."""
    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition(tp.topic, tp.partition, 0) for tp in tps], group_meta, 30)
    producer.abort_transaction(30)


def clear_flow_orphans(cfg: DrConfig, flow: FlowConfig, pairs: list[tuple[str, str, int]], resolve: SecretResolver | None = None) -> None:
    """Clear orphaned progress commits of ``pairs`` ((source topic, target topic, partition)),
    one short-lived producer per transactional id. Fences a running copier of these
    partitions (it redoes its chunk from committed progress), so it is for a job's start."""
    target = cfg.cluster(flow.target)
    meta = Consumer(client_config(target, resolve, **{"group.id": progress_group(cfg.internal_prefix, flow.name),
                                                      "enable.auto.commit": False}))
    try:
        group_meta = meta.consumer_group_metadata()
        for source_topic, target_topic, partition in pairs:
            p = Producer(one_shot_transactional_config(target, resolve, transactional_id(cfg.internal_prefix, flow.name, source_topic, partition)))
            p.init_transactions(30)
            abort_offsets_transaction(p, group_meta, [TopicPartition(target_topic, partition)])  # synchronous
        # a whole streaming task commits every partition's progress under the flow's task id
        p = Producer(one_shot_transactional_config(target, resolve, task_transactional_id(cfg.internal_prefix, flow.name)))
        p.init_transactions(30)
        abort_offsets_transaction(p, group_meta, [TopicPartition(t, q) for _, t, q in pairs])
        log.warning("flow %s: cleared pending progress commits no transaction owned on %s (%d partition(s)); "
                    "progress reads were unstable", flow.name, flow.target, len(pairs))
    finally:
        meta.close()

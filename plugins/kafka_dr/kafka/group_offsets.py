"""A group's positions on the source: its commits there, or what the offset sync last recorded
of them on the target when the source is gone (``<internal_prefix>.offset-sync``).

Committed offsets are read with ``Consumer.committed`` (never the admin
ListConsumerGroupOffsets, which crashes librdkafka 2.16 while a coordinator loads).
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaException, TopicPartition

from kafka_dr.core import offsets as core
from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.loop import router_for
from kafka_dr.kafka import clients, permissions
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.partition_probe import TIMEOUT
from kafka_dr.kafka.progress_store import committed_with_retry

log = logging.getLogger(__name__)


def read_group_offsets(
    cfg: DrConfig,
    flow: FlowConfig,
    group: str,
    resolve: SecretResolver | None = None,
    timeout: float = 60.0,
    skip_synced: bool = False,
) -> dict[tuple[str, int], int]:
    """The group's committed offsets on ``flow.source`` for every partition of the topics the
    flow replicates (partitions without a commit are left out; with ``skip_synced`` also those
    the offset sync wrote, see ``core.offsets.is_sync_commit``)."""
    router = router_for(cfg, flow)
    c = clients.consumer(cfg.cluster(flow.source), group, resolve)
    try:
        try:
            md = c.list_topics(timeout=TIMEOUT)
        except KafkaException as e:
            raise clients.ClusterUnreachable(
                f"flow {flow.name}: reading group {group!r} on {flow.source}: {e.args[0]}; "
                f"if {flow.source} is down pass source_offsets (last_synced_offsets)"
            ) from None
        tps = [
            TopicPartition(t, p)
            for t, meta in md.topics.items()
            if meta.error is None and router.target_topic(t) is not None and t != cfg.names.heartbeat_topic
            for p in meta.partitions
        ]
        if not tps:
            return {}
        try:
            got = committed_with_retry(c, tps, timeout)
        except KafkaException as e:
            if permissions.is_denied(e):
                raise permissions.in_flow(flow.name, permissions.group_offsets_refused(flow.source, group)) from None
            raise RuntimeError(
                f"flow {flow.name}: reading committed offsets of group {group!r} on {flow.source}: {e.args[0].str()}"
            ) from None
    finally:
        c.close()
    out = {}
    for tp in got:
        if tp.error is not None:
            if permissions.is_denied(tp.error):
                raise permissions.in_flow(flow.name, permissions.group_offsets_refused(flow.source, group))
            raise RuntimeError(f"group {group!r} on {flow.source}/{tp.topic}[{tp.partition}]: {tp.error.str()}")
        if tp.offset >= 0 and skip_synced and core.is_sync_commit(tp.metadata):
            log.info(
                "flow %s: group %s on %s/%s[%d]@%d was committed by the offset sync, not by a consumer: "
                "not synced onward",
                flow.name,
                group,
                flow.source,
                tp.topic,
                tp.partition,
                tp.offset,
            )
            continue
        if tp.offset >= 0:
            out[(tp.topic, tp.partition)] = tp.offset
    return out


def last_synced_offsets(
    cfg: DrConfig, flow: FlowConfig, group: str, resolve: SecretResolver | None = None
) -> dict[tuple[str, int], int]:
    """The source offsets of ``group`` last recorded by the offset sync on the target
    (``<internal_prefix>.offset-sync``): what to translate when the source is gone."""
    return core.latest_synced(offset_sync_records(cfg, flow, "offset-translation", resolve), flow.name, group)


def offset_sync_records(
    cfg: DrConfig, flow: FlowConfig, reader: str, resolve: SecretResolver | None = None
) -> list[tuple]:
    """Every ``(key, value)`` on the flow's target offset-sync topic (none when it does not exist);
    ``reader`` names the consumer group suffix of the caller."""
    from kafka_dr.kafka.reading import read_partitions
    from kafka_dr.kafka.topics import partition_count

    topic = cfg.names.offset_sync_topic
    tgt = cfg.cluster(flow.target)
    n = partition_count(clients.admin(tgt, resolve), topic)
    if n is None:
        return []
    c = clients.consumer(tgt, cfg.names.reader_group(reader), resolve)
    try:
        records = read_partitions(c, topic, list(range(n)), timeout=60)
    finally:
        c.close()
    return [(r.key, r.value) for r in records]

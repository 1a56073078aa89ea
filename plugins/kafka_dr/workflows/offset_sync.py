"""The periodic group-offset sync (MirrorMaker 2's ``sync.group.offsets.enabled``), run per
incremental flow by ``dr_offset_sync`` (a continuous flow's job syncs its groups itself, within
seconds: :mod:`kafka_dr.kafka.group_sync`).

Every source group that the allow/deny regexes select is translated
(:mod:`kafka_dr.kafka.offset_translation`) and committed on the target under the same group
id, only while the group has no active member there, never backwards
(:mod:`kafka_dr.kafka.consumer_groups`). Each translation, and what the flow has not copied yet
per source partition (:mod:`kafka_dr.kafka.source_tails`), is recorded in
``<internal_prefix>.offset-sync`` on the target: what a failover reads once the source is gone.
"""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka import KafkaException

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.group_offsets import read_group_offsets
from kafka_dr.kafka.group_sync import GroupSync

TIMEOUT = 30.0


def list_source_groups(cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None) -> list[str]:
    admin = clients.admin(cfg.cluster(flow.source), resolve)
    try:
        res = admin.list_consumer_groups(request_timeout=TIMEOUT).result(timeout=TIMEOUT)
    except KafkaException as e:
        raise RuntimeError(f"flow {flow.name}: listing consumer groups on {flow.source}: {e.args[0].str()}") from None
    return sorted(g.group_id for g in res.valid)


def sync_group_offsets(
    cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None, groups: Iterable[str] | None = None
) -> list[dict]:
    """Translate every selected source group's offsets and commit them on the target.

    Groups: the config's ``consumer_groups`` (full-match ``allow`` regexes minus ``deny``; the
    product's own groups and those starting with ``_`` are always left out), narrowed to
    ``groups`` when given. A group is committed only while it has no active member on the
    target; an offset is never moved backwards. Every translation is recorded in
    ``<internal_prefix>.offset-sync`` on the target, and so are the records the flow has not
    copied yet per source partition (``kafka_dr.kafka.source_tails``). Returns one dict per
    partition: the translation plus ``committed`` (bool), ``action`` (why) and ``flow``.
    """
    names = list(groups) if groups is not None else list_source_groups(cfg, flow, resolve)
    sync = GroupSync(cfg, flow, resolve)
    report: list[dict] = []
    try:
        for group in sync.selected(names):
            offsets = read_group_offsets(cfg, flow, group, resolve, skip_synced=True)
            if offsets:
                report += sync.group(group, offsets)
        sync.record_tails()
    finally:
        sync.close()
    sync.flush()
    return report

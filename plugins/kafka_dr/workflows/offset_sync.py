"""The periodic group-offset sync (MirrorMaker 2's ``sync.group.offsets.enabled``), run per flow
by ``dr_offset_sync``.

Every source group that the allow/deny regexes select is translated
(:mod:`kafka_dr.kafka.offset_translation`) and committed on the target under the same group
id, only while the group has no active member there, never backwards
(:mod:`kafka_dr.kafka.consumer_groups`). Each translation, and what the flow has not copied yet
per source partition (:mod:`kafka_dr.kafka.source_tails`), is recorded in
``<internal_prefix>.offset-sync`` on the target: what a failover reads once the source is gone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from confluent_kafka import KafkaException

from kafka_dr.core import offsets as core
from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.consumer_groups import commit_translations, group_state
from kafka_dr.kafka.group_position import GroupPlacer
from kafka_dr.kafka.offset_translation import Translator, read_group_offsets
from kafka_dr.kafka.source_tails import record_source_tails
from kafka_dr.kafka.topics import ensure_topic

log = logging.getLogger(__name__)

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
    allow, deny = core.configured_groups(cfg.consumer_groups.allow, cfg.consumer_groups.deny, cfg.internal_prefix)
    names = list(groups) if groups is not None else list_source_groups(cfg, flow, resolve)
    selected = [g for g in names if core.group_selected(g, allow, deny)]
    tgt = cfg.cluster(flow.target)
    t_admin = clients.admin(tgt, resolve)
    topic = cfg.names.offset_sync_topic
    ensure_topic(t_admin, topic, 1, {"cleanup.policy": "compact"})
    producer = clients.producer(tgt, resolve)
    report: list[dict] = []
    with Translator(cfg, flow, resolve, source_available=True) as tr:
        placer = GroupPlacer(cfg, flow, tr, resolve)
        for group in selected:
            offsets = read_group_offsets(cfg, flow, group, resolve, skip_synced=True)
            if not offsets:
                continue
            translations = placer.place(tr.translate(group, offsets))
            state = group_state(t_admin, group, flow.target)
            rows = commit_translations(
                tgt,
                group,
                translations,
                state,
                resolve,
                metadata=lambda t: core.sync_commit_metadata(flow.name, t.source_offset),
            )
            now = int(time.time() * 1000)
            for t, ok, why in rows:
                producer.produce(
                    topic, key=core.sync_key(flow.name, group, t.topic, t.partition), value=core.sync_value(t, ok, now)
                )
                report.append(
                    {"flow": flow.name, **t.to_dict(), "committed": ok, "action": why, "target_group_state": state}
                )
            log.info(
                "flow %s: group %s (%s on %s): %d partition(s), %d committed",
                flow.name,
                group,
                state,
                flow.target,
                len(rows),
                sum(1 for _, ok, _ in rows if ok),
            )
        placer.close()
        # what the failover's RPO report knows of the source once it is gone
        record_source_tails(cfg, flow, tr, lambda k, v: producer.produce(topic, key=k, value=v), resolve)
    left = producer.flush(30)
    if left:
        raise TimeoutError(f"flow {flow.name}: {left} offset-sync record(s) not acknowledged by {flow.target}/{topic}")
    return report

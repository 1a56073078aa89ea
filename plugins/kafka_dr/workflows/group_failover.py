"""Move consumer groups onto the survivor during a failover.

With the failed cluster gone, the groups' last positions there are the source offsets that the
offset sync (a continuous flow's job, or ``dr_offset_sync``) recorded on the survivor
(``<prefix>.offset-sync``); when it still answers (a forced failover), their commits there now. They are translated
again *now*, against what the survivor holds at failover time (exact, by provenance), and
committed with the same rules as the periodic sync: only groups with no active member on the
survivor, never backwards. In active/active the sync also recorded which of the survivor's
own records the group had read, so the group resumes at the earliest position that skips
none it had not (:mod:`kafka_dr.kafka.group_position`). A consumer that committed after the last
sync re-reads what it consumed since: a continuous flow's job syncs every few seconds
(``consumer_groups.sync_interval_seconds``), and each row says when its position was synced.
"""

from __future__ import annotations

import json
import re
import time

from kafka_dr.core import offsets as core
from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.loop import router_for
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.consumer_groups import commit_translations, group_state
from kafka_dr.kafka.offset_translation import offset_sync_records, read_group_offsets, translate_group
from kafka_dr.kafka.reading import read_partitions
from kafka_dr.kafka.topics import partition_count


def last_synced_positions(cfg: DrConfig, flow: FlowConfig, group: str, resolve: SecretResolver | None = None) -> dict:
    """``{(topic, partition): SyncedPosition}`` of ``group`` as the offset sync last recorded it on the target."""
    return core.latest_synced_positions(offset_sync_records(cfg, flow, "failover-reader", resolve), flow.name, group)


def synced_groups(cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None) -> list[str]:
    """Groups of ``flow`` that have positions recorded on its target."""
    topic = cfg.names.offset_sync_topic
    tgt = cfg.cluster(flow.target)
    admin = clients.admin(tgt, resolve)
    n = partition_count(admin, topic)
    if n is None:
        return []
    c = clients.consumer(tgt, cfg.names.reader_group("failover-reader"), resolve)
    try:
        records = read_partitions(c, topic, list(range(n)), timeout=60)
    finally:
        c.close()
    groups = set()
    for r in records:
        try:
            k = json.loads(r.key or b"")
        except ValueError:
            continue
        if isinstance(k, list) and len(k) == 4 and k[0] == flow.name:
            groups.add(str(k[1]))
    return sorted(groups)


def move_groups(
    cfg: DrConfig,
    flow: FlowConfig,
    pattern: re.Pattern,
    dry_run: bool,
    resolve: SecretResolver | None = None,
    source_answers: bool | None = None,
    now_ms: int | None = None,
) -> list[dict]:
    """Move each selected group the offset sync knows to the target. ``source_answers``: whether
    the source is up, when known (``None``: each translation probes it). A source that answers
    (a forced failover) gives each group's commit there now: the move re-reads only what the
    placement reports. Otherwise each row says when its position was synced (``synced_at_ms``,
    ``synced_age_s``): a consumer that read on the source after that re-reads what it read since."""
    tgt = cfg.cluster(flow.target)
    admin = clients.admin(tgt, resolve)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    report: list[dict] = []
    allow, deny = core.configured_groups(cfg.consumer_groups.allow, cfg.consumer_groups.deny, cfg.internal_prefix)
    router = router_for(cfg, flow)
    for group in synced_groups(cfg, flow, resolve):
        # the run's pattern narrows the configured selection; it never widens it
        if not (pattern.fullmatch(group) and core.group_selected(group, allow, deny)):
            continue
        if source_answers:
            live = read_group_offsets(cfg, flow, group, resolve, skip_synced=True)
            if not live:
                continue
            translations = translate_group(cfg, flow, group, resolve, source_offsets=live, source_available=True)
            when: dict[tuple[str, int], dict] = {}
        else:
            # positions on topics the flow no longer replicates (config changed since) are left alone
            synced = {
                k: v for k, v in last_synced_positions(cfg, flow, group, resolve).items() if router.target_topic(k[0])
            }
            if not synced:
                continue
            # the offset in records: trailing markers and filtered records below it taken off
            source_offsets = {
                k: v.effective_offset if v.effective_offset is not None else v.source_offset for k, v in synced.items()
            }
            translations = translate_group(
                cfg, flow, group, resolve, source_offsets=source_offsets, synced=synced, source_available=source_answers
            )
            when = {k: _synced_when(v, now_ms) for k, v in synced.items()}
        state = group_state(admin, group, flow.target)
        rows = commit_translations(tgt, group, translations, state, resolve, dry_run=dry_run)
        for t, ok, why in rows:
            position = {"position_from": f"{flow.source} now"} if source_answers else when[(t.topic, t.partition)]
            report.append(
                {
                    "flow": flow.name,
                    **t.to_dict(),
                    "committed": ok,
                    "action": why,
                    "target_group_state": state,
                    **position,
                }
            )
    return report


def _synced_when(position: core.SyncedPosition, now_ms: int) -> dict:
    at = position.synced_at_ms
    return {
        "position_from": "last sync",
        "synced_at_ms": at,
        "synced_age_s": None if at is None else round(max(0, now_ms - at) / 1000, 1),
    }

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

import logging
import re
import time

from kafka_dr.core import offsets as core
from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.failover import rereads_since_sync_at_most
from kafka_dr.core.loop import router_for
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.consumer_groups import commit_translations, group_state
from kafka_dr.kafka.group_offsets import offset_sync_records, read_group_offsets
from kafka_dr.kafka.group_position import GroupPlacer
from kafka_dr.kafka.offset_translation import MOVE_PROBE_THREADS, Translator

log = logging.getLogger(__name__)


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
    the source is up, when known (``None``: the translation probes it). A source that answers
    (a forced failover) gives each group's commit there now: the move re-reads only what the
    placement reports. Otherwise each row says when its position was synced (``synced_at_ms``,
    ``synced_age_s``): a consumer that read on the source after that re-reads what it read since.

    The offset-sync topic is read once per flow, not once per group, and one translator (with
    its clients and what its searches found) serves every group."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    allow, deny = core.configured_groups(cfg.consumer_groups.allow, cfg.consumer_groups.deny, cfg.internal_prefix)
    began = time.monotonic()
    recorded = core.synced_positions_by_group(offset_sync_records(cfg, flow, "failover-reader", resolve), flow.name)
    log.info(
        "flow %s: read the offset sync's positions of %d group(s) in %.1fs",
        flow.name,
        len(recorded),
        time.monotonic() - began,
    )
    # the run's pattern narrows the configured selection; it never widens it
    groups = [g for g in sorted(recorded) if pattern.fullmatch(g) and core.group_selected(g, allow, deny)]
    if not groups:
        return []
    move = _GroupMove(cfg, flow, resolve, source_answers, now_ms)
    try:
        return [row for g in groups for row in move.one(g, recorded[g], dry_run)]
    finally:
        move.close()


class _GroupMove:
    """The clients one flow's group moves share: the target's admin, a translator, a placer."""

    def __init__(self, cfg: DrConfig, flow: FlowConfig, resolve, source_answers: bool | None, now_ms: int):
        self.cfg, self.flow, self.resolve, self.now_ms = cfg, flow, resolve, now_ms
        self.source_answers = source_answers
        self.router = router_for(cfg, flow)
        self.admin = clients.admin(cfg.cluster(flow.target), resolve)
        self.tr = Translator(
            cfg,
            flow,
            resolve,
            source_available=True if source_answers else source_answers,
            probe_threads=MOVE_PROBE_THREADS,
        )
        self.placer = GroupPlacer(cfg, flow, self.tr, resolve)

    def close(self) -> None:
        self.placer.close()
        self.tr.close()

    def one(self, group: str, recorded: dict, dry_run: bool) -> list[dict]:
        cfg, flow = self.cfg, self.flow
        if self.source_answers:
            source_offsets = read_group_offsets(cfg, flow, group, self.resolve, skip_synced=True)
            synced = None
        else:
            # positions on topics the flow no longer replicates (config changed since) are left alone
            synced = {k: v for k, v in recorded.items() if self.router.target_topic(k[0])}
            # the offset in records: trailing markers and filtered records below it taken off
            source_offsets = {
                k: v.effective_offset if v.effective_offset is not None else v.source_offset for k, v in synced.items()
            }
        if not source_offsets:
            return []
        translations = self.placer.place(self.tr.translate(group, source_offsets), synced)
        when = {} if synced is None else self._since_sync(synced, translations)
        state = group_state(self.admin, group, flow.target)
        rows = commit_translations(cfg.cluster(flow.target), group, translations, state, self.resolve, dry_run=dry_run)
        return [
            {
                "flow": flow.name,
                **t.to_dict(),
                "committed": ok,
                "action": why,
                "target_group_state": state,
                **({"position_from": f"{flow.source} now"} if self.source_answers else when[(t.topic, t.partition)]),
            }
            for t, ok, why in rows
        ]

    def _since_sync(self, synced: dict, translations: list[core.Translation]) -> dict[tuple[str, int], dict]:
        """When the group's position on each partition was synced, and what the group can read
        again because of it, per origin (after :meth:`Translator.translate`, which read the
        flow's progress, and the placement, which counted the survivor's own records since)."""
        placed = {(t.topic, t.partition): t for t in translations if t.local_read_below is not None}
        out = {}
        for k, position in synced.items():
            at = position.synced_at_ms
            bounds = {self.flow.source: rereads_since_sync_at_most(position.source_offset, self.tr.progress.get(k))}
            if k in placed:
                bounds[self.flow.target] = placed[k].local_since_sync
            out[k] = {
                "position_from": "last sync",
                "synced_at_ms": at,
                "synced_age_s": None if at is None else round(max(0, self.now_ms - at) / 1000, 1),
                "reread_since_sync_at_most": None if None in bounds.values() else sum(bounds.values()),
                "reread_since_sync_at_most_by_origin": bounds,
            }
        return out

"""A group's position on the target of an active/active pair: the reads behind
:mod:`kafka_dr.core.group_position`, which decides.

For each partition translated by provenance (``a``), ``u`` (the target records the group
had read on the source) comes from the offset sync's record, or is read on the source when it
answers: the reverse flow's progress first, then the source from ``X`` to its end for the
first copy of a target record. Then the target is read between ``a`` and ``u`` to place the
group at the first record it has not read and count what it reads again. In a caught-up
active/active pair both boundaries sit near each other, so the reads are short.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from confluent_kafka import TopicPartition

from kafka_dr.core import group_position as core
from kafka_dr.core.config import DrConfig, FlowConfig, LoopPolicy
from kafka_dr.core.offsets import APPROXIMATE, EXACT, SyncedPosition, Translation
from kafka_dr.core.provenance import Provenance, origin_cluster
from kafka_dr.kafka import clients
from kafka_dr.kafka.progress_store import progress_reader, read_committed_progress
from kafka_dr.kafka.range_reads import FAST_EOF, first_copy_from, read_ranges
from kafka_dr.kafka.topics import partition_ranges

log = logging.getLogger(__name__)

#: target offsets past a synced ``u`` read to count the target's own records since the sync
#: (a failover with the source gone); the rest of the partition counts as offsets
SINCE_SYNC_SCAN = 200_000


def reverse_flow(cfg: DrConfig, flow: FlowConfig) -> FlowConfig | None:
    """The flow that copies the target's own records into the source's topics of the same
    name (active/active with provenance or copy flags), or ``None``: then the target's own
    records never reach the source, and the group's position concerns the source's only."""
    if flow.loop_policy is LoopPolicy.PREFIX:
        return None
    return next(
        (
            f
            for f in cfg.flows
            if f.source == flow.target and f.target == flow.source and f.loop_policy is not LoopPolicy.PREFIX
        ),
        None,
    )


def _placeable(t: Translation) -> bool:
    # by provenance only: the timestamp fallback knows no origins
    return t.target_offset is not None and t.status in (EXACT, APPROXIMATE) and "no provenance" not in t.reason


class GroupPlacer:
    """Places a group's translations of one flow (see the module doc); uses ``tr``'s clients."""

    def __init__(self, cfg: DrConfig, flow: FlowConfig, tr, resolve=None):
        self.cfg, self.flow, self.tr, self.resolve = cfg, flow, tr, resolve
        self.reverse = reverse_flow(cfg, flow)
        self._s_reader = None
        self._progress = None  #: reads the reverse flow's progress, made on first use

    def close(self) -> None:
        for c in (self._s_reader, self._progress):
            if c is not None:
                c.close()
        self._s_reader = self._progress = None

    def _source_reader(self):
        if self._s_reader is None:
            self._s_reader = clients.consumer(
                self.cfg.cluster(self.flow.source),
                self.cfg.names.reader_group("offset-translation"),
                self.resolve,
                **FAST_EOF,
            )
        return self._s_reader

    def place(
        self, translations: list[Translation], synced: dict[tuple[str, int], SyncedPosition] | None = None
    ) -> list[Translation]:
        """``translations`` with each placeable one moved to where the group skips nothing."""
        todo = [t for t in translations if _placeable(t)] if self.reverse is not None else []
        if not todo:
            return translations
        known = {(t.topic, t.partition): (synced or {}).get((t.topic, t.partition)) for t in todo}
        live = [
            t
            for t in todo
            if (known[(t.topic, t.partition)] is None or known[(t.topic, t.partition)].local_read_below is None)
        ]
        u_live = self._read_below_on_source(live) if live and self.tr.s_admin is not None else {}
        t_ranges = partition_ranges(
            self.tr.t_admin, [TopicPartition(t.target_topic, t.partition) for t in todo], self.flow.target
        )

        def one(t: Translation, readers) -> Translation:
            k = (t.topic, t.partition)
            synced_u = known[k].local_read_below if known[k] is not None else None
            u = synced_u if synced_u is not None else u_live.get(k)
            return self._place_one(t, u, t_ranges[(t.target_topic, t.partition)], readers.target, synced_u is not None)

        placed = {id(t): p for t, p in zip(todo, self.tr.per_partition(one, todo), strict=True)}
        return [placed.get(id(t), t) for t in translations]

    def _read_below_on_source(self, translations: list[Translation]) -> dict[tuple[str, int], int]:
        """``u`` per partition, read on the source: reverse progress first, then the source's end."""
        keys = [(t.topic, t.partition) for t in translations]
        if self._progress is None:
            self._progress = progress_reader(self.cfg, self.reverse, self.resolve)
        progress = read_committed_progress(self.cfg, self.reverse, keys, self.resolve, consumer=self._progress)
        ends = partition_ranges(self.tr.s_admin, [TopicPartition(t, p) for t, p in keys], self.flow.source)
        out = {}
        for t in translations:
            k = (t.topic, t.partition)
            x = t.source_offset
            first = first_copy_from(
                self._source_reader(), self.flow.source, t.topic, t.partition, x, ends[k][1], self.flow.target
            )
            out[k] = core.local_read_below(first, progress.get(k, {}).get("next_offset"))
        return out

    def _place_one(
        self, t: Translation, u: int | None, t_range: tuple[int, int], reader, u_synced: bool = False
    ) -> Translation:
        """``reader``: a consumer of the target that this thread alone uses. ``u_synced``: ``u``
        is the last sync's, so the read goes on to the target's end (at most
        :data:`SINCE_SYNC_SCAN` offsets past ``u``) to count the target's own records the group
        can have read since."""
        a = t.target_offset
        t_low, t_end = t_range
        lo, hi = core.window(a, u if u is not None else t_low)
        hi = min(hi, t_end)
        scan_to = min(t_end, max(hi, u + SINCE_SYNC_SCAN)) if u_synced else hi
        records = []
        for _, msg in read_ranges(reader, self.flow.target, {(t.target_topic, t.partition): (lo, scan_to)}):
            records.append((msg.offset(), self._kind(msg, t)))
        since = None
        if u_synced:
            # offsets beyond the scan count as records: a bound, never an undercount
            since = sum(1 for off, kind in records if kind == core.LOCAL and off >= u) + max(0, t_end - scan_to)
            t = replace(t, local_since_sync=since)
        placed = core.place(a, u, [r for r in records if r[0] < hi])
        reread = {self.flow.source: placed.reread_source, self.flow.target: placed.reread_local}
        where = f"{t.target_topic}[{t.partition}]"
        if placed.reread_local is None:
            why = (
                f"; which of {self.flow.target}'s own records the group had read on {self.flow.source} "
                f"is not known: at {where}@{placed.target_offset}, before every one of them (re-reads "
                f"{placed.reread_source} of {self.flow.source}'s, an unknown number of {self.flow.target}'s)"
            )
            return replace(
                t, target_offset=placed.target_offset, status=APPROXIMATE, reason=t.reason + why, reread=reread
            )
        if placed.target_offset == a and not placed.reread_local:
            why = f"; every {self.flow.target} record the group had not read is after it"
            if u is None:
                return replace(t, reason=t.reason + why, reread=reread)
        else:
            why = (
                f"; earliest position that skips nothing: {where}@{placed.target_offset} (the group had read "
                f"{self.flow.target}'s records below {u}), re-reads {placed.reread_source} record(s) "
                f"of {self.flow.source} and {placed.reread_local} of {self.flow.target}"
            )
        log.info(
            "flow %s: group %s %s[%d]: origin position %d, local read below %d -> %d",
            self.flow.name,
            t.group,
            t.topic,
            t.partition,
            a,
            u,
            placed.target_offset,
        )
        return replace(t, target_offset=placed.target_offset, reason=t.reason + why, reread=reread, local_read_below=u)

    def _kind(self, msg, t: Translation) -> str:
        headers = msg.headers()
        origin = origin_cluster(headers)
        if origin is None:
            return core.LOCAL
        if origin != self.flow.source:
            return core.OTHER
        try:
            prov = Provenance.from_headers(headers)
        except ValueError as e:
            raise RuntimeError(f"{self.flow.target}/{t.target_topic}[{t.partition}]@{msg.offset()}: {e}") from None
        return (
            core.SOURCE if prov is not None and prov.topic == t.topic and prov.partition == t.partition else core.OTHER
        )

"""One window's comparison, kept as running figures while both sides are read once, in order.

A data-quality task reads the source's ``[start, end)`` of one flow topic-partition, then
the target's ``[target_start, target_end)``, and feeds every record here; what comes out is the
window's row of the comparison (:data:`~kafka_dr.core.dq.COMPARISON_COLUMNS`), never a
per-record table. The figures:

- **source**: the flow's eligible records (what the loop policy copies), their count and the
  sum of their digests;
- **target**: a record is *matched* when its identity (:func:`~kafka_dr.core.dq.identity`) is
  that of an eligible source record of the window, and an *unexpected candidate* when its
  provenance names this window's source partition at an offset the flow has not copied
  (inside the window but not eligible, at or past ``limit``, or already verified by an
  earlier run). The compared records are the matched ones and the candidates: their count and
  digest sum; ``unexpected`` are the candidates that are not matched, except copies of a
  verified record, which are duplicates across runs (``recopied``);
- **missing** = eligible records without a copy; **duplicated** = copies beyond the first of
  each record, plus ``recopied``; **out of order**: a matched copy naming a lower source
  offset than the compared record right before it on the target (when that one is matched);
- **latency**: first replication time minus record timestamp, over the matched copies first
  made at or after ``latency_since_ms``; p50 and p99 exact, from a per-millisecond histogram;
- over every target record: records whose provenance names the target itself, malformed
  provenance, and the first target offset of a copy still in flight (``[end, limit)``).

**Compacted topics.** Each cluster's log cleaner drops superseded values on its own schedule,
so record counts and checksums of a compacted partition differ between two clusters that
agree. What must agree is the latest record of every key the source holds in the window. Per
key, the target agrees when its latest copy is of the same source record, or when it holds none
and the source's latest is a tombstone (a cleaner removes a tombstone, and every older value of
its key, after ``delete.retention.ms``). An older copy is the newest value missing; a copy of a
newer source offset is a record the source never had. Keys whose latest record on the target
came from elsewhere (written there after a failover, or by another flow) or after planning are
not judged: the cleaner may have dropped the copy under it. Duplicates and order are still
checked record by record: a cleaner keeps the order of what it keeps, and a duplicate copy
survives until it is superseded.

**Memory.** Records that are their own identity (no provenance on the source: the usual
case) cost one byte per source offset of the window (eligible, and copies seen so far);
records the source itself received with provenance (a later hop of a chain) cost a map entry
each; compacted windows add one entry per key. Nothing else grows with the window.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from kafka_dr.core.dq import Origin, PartitionWindow

Identity = tuple[str, str, int, int]
_MANY = 255  # a byte counts copies up to here; more go to a map


class WindowTally:
    """Running figures of one :class:`~kafka_dr.core.dq.PartitionWindow`. Feed every eligible
    source record (:meth:`source`, ascending offsets), then every target record
    (:meth:`target`, ascending offsets); :meth:`row` gives the window's comparison row."""

    def __init__(self, window: PartitionWindow, latency_since_ms: int = 0) -> None:
        w = self.window = window
        self._since = latency_since_ms
        self._own_key = (w.source, w.topic, w.partition)
        # per source offset in the window: 0 not an eligible record of its own identity, else 1 + copies
        self._seen = bytearray(max(w.end - w.start, 0))
        self._many: Counter[int] = Counter()  # copies of own-identity records beyond _MANY - 1
        self._chained: dict[Identity, list[int]] = {}  # identity -> eligible source offsets carrying it
        self._chained_copies: Counter[int] = Counter()
        self.source_count = self.target_count = 0
        self.source_sum = self.target_sum = 0
        self.copies = self.distinct_copies = self.recopied = self.unexpected = self.out_of_order = 0
        self.self_origin = self.malformed = 0
        self.first_in_flight: int | None = None
        self._prev: int | None = None  # source offset of the compared target record before, if matched
        self._latency: Counter[int] = Counter()
        self._src_keys: dict[int | None, tuple[int, int, bool]] = {}  # compacted: key -> (offset, digest, tombstone)
        self._tgt_keys: dict[int, tuple[int, int, bool]] = {}  # compacted: key -> (named offset, digest, ours)

    # --- the source --------------------------------------------------------------------

    def source(self, offset: int, ident: Identity, digest: int, key_hash: int | None = None, tombstone: bool = False):
        """One eligible source record."""
        self.source_count += 1
        self.source_sum += digest
        i = offset - self.window.start
        if ident[3] == offset and (ident[0], ident[1], ident[2]) == self._own_key and 0 <= i < len(self._seen):
            self._seen[i] = 1
        else:
            self._chained.setdefault(ident, []).append(offset)
        if self.window.compacted:
            self._src_keys[key_hash] = (offset, digest, tombstone)

    # --- the target --------------------------------------------------------------------

    def target(
        self,
        offset: int,
        origin: Origin,
        ident: Identity,
        digest: int,
        timestamp_ms: int,
        key_hash: int | None = None,
    ) -> None:
        """One target record (provenance naming the target itself is a loop: ``self_origin``)."""
        w = self.window
        if origin.present:
            if origin.malformed:
                self.malformed += 1
            if origin.cluster == w.target:
                self.self_origin += 1
        ours = (
            origin.present
            and not origin.malformed
            and origin.cluster == w.source
            and origin.topic == w.topic
            and origin.partition == w.partition
            and offset < w.target_end
        )
        verified_copy = candidate = False
        if ours:
            o: int = origin.offset  # type: ignore[assignment]
            verified_copy = w.verified_end is not None and o < w.verified_end
            candidate = verified_copy or w.start <= o < w.end or o >= w.limit
            if w.end <= o < w.limit and self.first_in_flight is None:
                self.first_in_flight = offset
        matches = self._matches(ident)
        for src_offset in matches:
            self._matched(src_offset, origin, digest, timestamp_ms)
        if not matches and candidate:
            self.target_count += 1
            self.target_sum += digest
            self._prev = None
            if verified_copy:
                self.recopied += 1
            else:
                self.unexpected += 1
        if w.compacted and key_hash is not None:
            named = matches[-1] if matches else ident[3]
            self._tgt_keys[key_hash] = (named, digest, bool(matches) or candidate)

    def _matches(self, ident: Identity) -> list[int]:
        """The eligible source offsets carrying ``ident`` (usually none or one)."""
        out = []
        if (ident[0], ident[1], ident[2]) == self._own_key:
            i = ident[3] - self.window.start
            if 0 <= i < len(self._seen) and self._seen[i]:
                out.append(ident[3])
        if self._chained:
            out.extend(self._chained.get(ident, ()))
        return out

    def _matched(self, src_offset: int, origin: Origin, digest: int, timestamp_ms: int) -> None:
        self.target_count += 1
        self.target_sum += digest
        if self._prev is not None and src_offset < self._prev:
            self.out_of_order += 1
        self._prev = src_offset
        self.copies += 1
        if self._count_copy(src_offset) == 1:
            self.distinct_copies += 1
        first = origin.first_replicated_ms
        if first is not None and first >= self._since:
            self._latency[max(first - timestamp_ms, 0)] += 1

    def _count_copy(self, src_offset: int) -> int:
        """Count one more copy of ``src_offset``; the number of copies so far."""
        i = src_offset - self.window.start
        c = self._seen[i] if 0 <= i < len(self._seen) else 0
        if c:
            if c < _MANY:
                self._seen[i] = c + 1
                return c
            self._many[i] += 1
            return c - 1 + self._many[i]
        self._chained_copies[src_offset] += 1
        return self._chained_copies[src_offset]

    # --- the result --------------------------------------------------------------------

    def row(self) -> dict[str, Any]:
        """The window's comparison row (``kind = 'partition'``)."""
        w = self.window
        row: dict[str, Any] = {
            "kind": "partition",
            "flow": w.flow,
            "source": w.source,
            "target": w.target,
            "topic": w.topic,
            "target_topic": w.target_topic,
            "partition": w.partition,
            "window_start": w.start,
            "window_end": w.end,
            "source_count": self.source_count,
            "target_count": self.target_count,
            "missing": self.source_count - self.distinct_copies,
            "duplicated": self.copies - self.distinct_copies + self.recopied,
            "unexpected": self.unexpected,
            "out_of_order": self.out_of_order,
            "source_checksum": str(self.source_sum),
            "target_checksum": str(self.target_sum),
            "latency_p50_ms": percentile(self._latency, 0.5),
            "latency_p99_ms": percentile(self._latency, 0.99),
            "self_origin": self.self_origin,
            "malformed_provenance": self.malformed,
            "differences": None,
            "detail": None,
            "first_in_flight": self.first_in_flight,
        }
        if w.compacted:
            row.update(latest_per_key(self._src_keys, self._tgt_keys))
        return row


def latest_per_key(
    src: Mapping[int | None, tuple[int, int, bool]], tgt: Mapping[int, tuple[int, int, bool]]
) -> dict[str, Any]:
    """A compacted window's counts, checksums, missing and unexpected over the latest record
    of each key (see the module's docstring).

    :param src: key digest -> (source offset, digest, tombstone) of the latest eligible record
    :param tgt: key digest -> (source offset it names, digest, ours) of the target's latest
        record; ``ours``: a copy or an unexpected candidate of this flow
    """
    count = held_count = missing = unexpected = s_sum = t_sum = 0
    for key, (s_pos, s_digest, tombstone) in src.items():
        t = tgt.get(key) if key is not None else None
        if t is not None and not t[2]:
            continue  # written there by someone else or after planning: not judged
        count += 1
        s_sum += s_digest
        if t is not None:
            held_count += 1
            t_sum += t[1]
            missing += t[0] < s_pos
            unexpected += t[0] > s_pos
        elif tombstone:  # the target's cleaner already removed it: held, with the source's digest
            held_count += 1
            t_sum += s_digest
        else:
            missing += 1
    return {
        "source_count": count,
        "target_count": held_count,
        "missing": missing,
        "unexpected": unexpected,
        "source_checksum": str(s_sum),
        "target_checksum": str(t_sum),
    }


def percentile(histogram: Mapping[int, int], p: float) -> float | None:
    """The exact ``p`` quantile of the values counted in ``histogram`` (value -> count): the
    smallest value with at least ``p`` of all values at or below it; ``None`` when empty."""
    total = sum(histogram.values())
    if not total:
        return None
    rank = max(math.ceil(p * total), 1)
    seen = 0
    for value in sorted(histogram):
        seen += histogram[value]
        if seen >= rank:
            return float(value)
    return None  # unreachable: seen reaches total

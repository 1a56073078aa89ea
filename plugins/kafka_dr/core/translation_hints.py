"""Records of one origin a translator has already found on a target partition, kept to narrow
its next searches there (the continuous offset sync translates the same partitions every few
seconds, at positions close to the last ones).

Origin offsets rise with target offsets on a target partition, so a known record below the
wanted origin offset bounds the search from below and one at or above it bounds it from above:
the search reads only the target offsets between them. A bound whose record retention or
compaction removed since is still a bound (the records around it did not move).
"""

from __future__ import annotations

from bisect import bisect_left, insort

from kafka_dr.core.offsets import Hit

#: hits kept per target partition (the lowest origin offsets go first)
KEEP = 256


class Hints:
    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._by_partition: dict[tuple[str, int], list[tuple[int, int]]] = {}

    def add(self, where: tuple[str, int], *hits: Hit | None) -> None:
        known = self._by_partition.setdefault(where, [])
        for h in hits:
            if h is not None and (h.origin_offset, h.target_offset) not in known:
                insort(known, (h.origin_offset, h.target_offset))
        del known[: max(0, len(known) - self.keep)]

    def around(self, where: tuple[str, int], origin_offset: int) -> tuple[Hit | None, Hit | None]:
        """The known record with the highest origin offset below ``origin_offset`` and the one
        with the lowest at or above it (``None`` where none is known)."""
        known = self._by_partition.get(where, [])
        i = bisect_left(known, (origin_offset, -1))
        below = Hit(known[i - 1][1], known[i - 1][0]) if i > 0 else None
        above = Hit(known[i][1], known[i][0]) if i < len(known) else None
        return below, above


def narrowed(lo: int, hi: int, below: Hit | None, above: Hit | None) -> tuple[int, int, Hit | None, Hit | None]:
    """The search range ``[lo, hi)`` narrowed by the hints that fall inside it, and those hints."""
    if below is not None and lo <= below.target_offset < hi:
        lo = below.target_offset + 1
    else:
        below = None
    if above is not None and lo <= above.target_offset < hi:
        hi = above.target_offset + 1
    else:
        above = None
    return lo, hi, below, above

"""Where a consumer group resumes on a target that holds records of two origins (active/active).

With the provenance or copy-flag loop policies both clusters hold the same topic names, so a
group on the source reads a *merged* partition: the source's own records and copies of the
target's. The target holds the same two kinds, interleaved differently::

    source (east)   e0 e1 W0 e2 W1 e3 | X       (W = copies of west's own records)
    target (west)   w0 E0 E1 w1 w2 E2 E3 ...    (E = copies of east's own records)

The group committed ``X`` on the source: it has read the source's own records below ``X``
(translation by provenance gives ``a``, the target offset of the first one it has not read)
and the target's own records whose copies sit below ``X`` on the source (all of them below
``u``, a target offset: :func:`local_read_below`). No single target offset is exact when
the two orders differ, so the group resumes at the **earliest position that skips
nothing**: the first record of either origin it has not read. Every record it had read at
or after that position is read again, and the count is reported per origin, exactly.

``u`` is read on the source while it is up (the offset sync records it with the group's
offset), since the failover itself runs with the source down. Records of a third cluster
(N-cluster trees) are positioned by nobody here; the docs say so.
"""

from __future__ import annotations

from dataclasses import dataclass

#: kinds of records in the window the adapter scans on the target
LOCAL = "local"  #: produced on the target (no provenance)
SOURCE = "source"  #: a copy of a record of the flow's source partition
OTHER = "other"  #: anything else (another origin)


@dataclass(frozen=True)
class Placement:
    """The group's resume position on the target and what it reads again from there."""

    target_offset: int
    reread_source: int  #: copies of source records the group had read, at or after the position
    reread_local: int | None  #: target records it had read there; None when ``u`` is not known


def local_read_below(first_copy_at_or_after_x: int | None, reverse_progress: int | None) -> int:
    """``u``: the group had read every record of the target's own with target offset < u.

    :param first_copy_at_or_after_x: the target offset (origin offset, as the reverse flow
        wrote it) of the first copy of a target record at source offset >= X: every target
        record the reverse flow copied before it sits below X on the source, so was read.
    :param reverse_progress: the reverse flow's committed progress (next target offset it
        copies), read *before* the source's end: used when no copy lies at or after X (every
        copied record lies below X; those not copied yet were not read). ``None``: the reverse
        flow never copied this partition, so the group read none of the target's records.
    """
    if first_copy_at_or_after_x is not None:
        return first_copy_at_or_after_x
    return reverse_progress if reverse_progress is not None else 0


def window(origin_target: int, u: int) -> tuple[int, int]:
    """The target offsets ``[lo, hi)`` the adapter scans to place the group: between the two
    boundaries. Below ``lo`` every record was read; from ``hi`` on none was."""
    return min(origin_target, u), max(origin_target, u)


def place(origin_target: int, u: int | None, records: list[tuple[int, str]]) -> Placement:
    """The earliest target position that skips nothing, and the exact re-reads.

    :param origin_target: the translated offset of the source's records (``a``): the first
        copy of a source record the group had not read (or the target end).
    :param u: :func:`local_read_below`; ``None`` when it is not known: then none of the
        target's own records below ``a`` counts as read (nothing is skipped; what is re-read
        of them is not known). None above ``a`` can have been read: its copy would have
        reached the source after the record at ``a``, so after ``X``.
    :param records: ``(target offset, kind)`` of every record in :func:`window`, in order
        (``kind`` one of ``LOCAL``, ``SOURCE``, ``OTHER``).
    """
    a = origin_target
    known = u is not None
    if u is None:
        u = records[0][0] if records else a
    if u < a:
        # a target record the group had not read may sit before a: the first one wins
        first_unread_local = next((off for off, kind in records if kind == LOCAL and u <= off < a), None)
        if first_unread_local is None:
            return Placement(a, 0, 0)
        again = sum(1 for off, kind in records if kind == SOURCE and first_unread_local <= off < a)
        return Placement(first_unread_local, again, 0 if known else None)
    # u >= a: target records in [a, u) were read on the source and come again (the flows copy
    # each partition in order, so this needs the target's records to have been rewritten, as
    # by a re-seed)
    again = sum(1 for off, kind in records if kind == LOCAL and a <= off < u)
    return Placement(a, 0, again)

"""What a group's moves made it read again, against what the moves reported: the game day's
re-read checks (pure)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from kafka_dr.gameday.model import Read
from kafka_dr.gameday.proof import Check


def reported_rereads(
    group: str, entries: Iterable[Mapping], topics: Collection[str] | None = None
) -> dict[str, int | None]:
    """What a failover (or failback) summary says ``group`` reads again, by origin, summed over
    its partitions (the summary's ``consumer_groups`` entries; ``None``: not known); ``topics``:
    only theirs."""
    out: dict[str, int | None] = {}
    for e in entries:
        if e.get("group") != group or (topics is not None and e.get("topic") not in topics):
            continue
        for origin, n in (e.get("reread") or {}).items():
            out[origin] = None if n is None or (origin in out and out[origin] is None) else out.get(origin, 0) + n
    return out


def reported_since_sync(group: str, entries: Iterable[Mapping]) -> int | None:
    """What a move's summary bounds ``group``'s re-reads since its last synced position by,
    summed over its partitions; ``None`` when no row gives a bound (the old cluster answered,
    or a flow recorded no progress: nothing bounds them)."""
    bounds = [e.get("reread_since_sync_at_most") for e in entries if e.get("group") == group]
    return None if not bounds or any(b is None for b in bounds) else sum(bounds)


def reported_since_sync_by_origin(group: str, entries: Iterable[Mapping]) -> dict[str, int]:
    """:func:`reported_since_sync` per origin, summed over the partitions whose rows give one
    (``reread_since_sync_at_most_by_origin``); an origin any row leaves unbounded is left out."""
    out: dict[str, int] = {}
    unbounded: set[str] = set()
    for e in entries:
        if e.get("group") != group:
            continue
        for origin, n in (e.get("reread_since_sync_at_most_by_origin") or {}).items():
            if n is None:
                unbounded.add(origin)
            else:
                out[origin] = out.get(origin, 0) + n
    return {o: n for o, n in out.items() if o not in unbounded}


def consumption_before(reads: Iterable[Read], group: str, cluster: str, until: float, window_s: float) -> int:
    """The records ``group`` read for the first time on ``cluster`` in the ``window_s`` seconds
    up to its last read there before ``until``: what a position synced that long before it left
    can have missed."""
    seen: set[str] = set()
    firsts = []
    for r in sorted((r for r in reads if r.group == group), key=lambda r: r.at):
        if r.gd_id not in seen:
            seen.add(r.gd_id)
            if r.cluster == cluster and r.at < until:
                firsts.append(r.at)
    if not firsts:
        return 0
    last = firsts[-1]
    return sum(1 for at in firsts if at > last - window_s)


def compare_rereads(
    name: str,
    observed: Mapping[str, int],
    reported: Mapping[str, int | None],
    since_sync: int | None = None,
    at_most: Mapping[str, int | None] | None = None,
    reported_since_sync: int | None = None,
    reported_since_sync_by_origin: Mapping[str, int] | None = None,
    interval_worth: int | None = None,
) -> Check:
    """Re-reads seen after a move against the figures reported for it. A group re-reads at
    least what the report counts; more by what it read after its position was last synced,
    at most ``since_sync`` (what it consumed in one sync interval before it left the old
    cluster: ``beyond_bound`` counts the rest). Fewer means the report claimed re-reads that
    did not happen, except for the part of the report in ``at_most`` (compacted topics: the
    cleaner may remove a counted record before the group reaches it again). A move from a
    cluster that could not be asked reports its own bound on the re-reads since the last sync
    (``reported_since_sync``): ``beyond_reported_bound`` counts what exceeds it, and
    ``beyond_reported_origin_bound`` what exceeds it origin by origin
    (``reported_since_sync_by_origin``). ``interval_worth``, what the group consumed in the sync
    interval alone before it left, is reported beside them."""
    bounded = at_most or {}
    below = sum(max(0, (reported.get(o) or 0) - (bounded.get(o) or 0) - observed.get(o, 0)) for o in reported)
    known = sum(n for n in reported.values() if n is not None)
    total = sum(observed.values())
    beyond = 0 if since_sync is None else max(0, total - known - since_sync)
    beyond_reported = 0 if reported_since_sync is None else max(0, total - known - reported_since_sync)
    by_origin = reported_since_sync_by_origin or {}
    beyond_origin = sum(
        max(0, observed.get(o, 0) - (reported.get(o) or 0) - n)
        for o, n in by_origin.items()
        if reported.get(o, 0) is not None
    )
    per_origin = {
        o: {"observed": observed.get(o, 0), "reported": reported.get(o), "since_sync_at_most": by_origin.get(o)}
        for o in sorted({*observed, *reported})
    }
    return Check(
        f"{name} re-reads",
        {
            "observed": total,
            "reported": known,
            "reported_unknown": sum(1 for n in reported.values() if n is None),
            "sync_window_worth": since_sync,
            "sync_interval_worth": interval_worth,
            "reported_since_sync_at_most": reported_since_sync,
            "below_reported": below,
            "beyond_bound": beyond,
            "beyond_reported_bound": beyond_reported,
            "beyond_reported_origin_bound": beyond_origin,
        },
        ("below_reported", "beyond_bound", "beyond_reported_bound", "beyond_reported_origin_bound"),
        details={"by_origin": per_origin},
    )

"""Consumer offset translation as pure decisions: source committed offset -> target offset.

A consumer group committed offset ``X`` on ``source/topic[p]``: it has read every record
below ``X`` there. On the target, the flow wrote the records of ``topic[p]`` into
``target_topic[p]`` in order, each carrying its origin offset (in its ``dr.prov`` header). The
translated offset is the target offset of the **first record from this origin (cluster,
topic, partition) whose origin offset is >= X**: everything from this origin before it was
read on the source, everything from it onwards was not. The adapter
(``kafka_dr.kafka.offset_translation``) finds that record with a binary search over the target
partition and hands the facts to :func:`translate_from_candidates`, which decides.

Statuses (``Translation.status``):

``exact``
    the position is right for every record of this origin the target holds or will get.
``approximate``
    a usable position that may re-read records: the replica had not reached ``X`` yet
    (``behind_records``: records the flow copies in source offsets ``progress..X-1``, which
    the consumer already read on the source but the target does not hold; if they are copied
    later the consumer reads them again; if the source is gone for good they never arrive and
    nothing is re-read), or the timestamp fallback (no provenance on the target) was used.
    Source offsets that hold no record the flow copies (transaction markers, aborted records,
    records the loop policy filters) do not count: when the source can be read they are told
    apart (``behind_copied``); when it cannot, ``behind_records`` is ``X - progress``, at most.
``untranslatable``
    the facts do not determine a position; ``target_offset`` is ``None`` and ``reason``
    says why. Never a guess.

What "exact" covers: this origin's records. In active/active the target's own records sit
between them; a *group's* position among those is decided by
:mod:`kafka_dr.core.group_position` (the earliest position that skips nothing, with the
records read again counted in ``reread``). Compaction gaps on either side are harmless: a
removed record is read by nobody.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from kafka_dr.core.formats import readable, stamped

EXACT = "exact"
APPROXIMATE = "approximate"
UNTRANSLATABLE = "untranslatable"


@dataclass(frozen=True)
class Translation:
    """One group's offset on one source topic-partition, translated to the target."""

    group: str
    topic: str
    partition: int
    source_offset: int
    target_topic: str
    target_offset: int | None
    status: str  # "exact" | "approximate" | "untranslatable"
    reason: str
    behind_records: int = 0
    #: records read again from ``target_offset`` on, per origin cluster (``None`` inside: not
    #: known); ``None`` when the target holds no records of a second origin for this group
    reread: dict | None = None
    #: the group had read the target's own records below this target offset (active/active)
    local_read_below: int | None = None
    #: the target's own records from ``local_read_below`` to the target's end, when that came
    #: from the last sync: what the group can have read of them since (active/active)
    local_since_sync: int | None = None
    #: ``source_offset`` less the offsets below it that hold no record the flow copies (markers,
    #: aborted, filtered): the same position, in records; ``None`` when the source was not read
    effective_offset: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Translation:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


@dataclass(frozen=True)
class Hit:
    """A replicated record of this origin found on the target: where it sits, what it was."""

    target_offset: int
    origin_offset: int


def next_probe(lo: int, hi: int) -> int:
    """The binary search's next target offset to read in ``[lo, hi)``."""
    return lo + (hi - lo) // 2


def search(first_from, lo: int, hi: int, source_offset: int) -> tuple[Hit | None, Hit | None, int]:
    """Binary search over target offsets ``[lo, hi)`` for the first record of this origin with
    origin offset >= ``source_offset``.

    ``first_from(m)`` returns the first record of this origin at target offset >= m (the
    adapter seeks to ``m`` and reads forward past local and other-origin records), or ``None``
    when there is none before ``hi``. Origin offsets rise with target offsets, so the answer
    is found with O(log n) probes. Returns ``(found, earlier, probes)``: ``earlier`` is a
    record of this origin seen with origin offset < X (``None`` if the search saw none).
    """
    found: Hit | None = None
    earlier: Hit | None = None
    probes = 0
    while lo < hi:
        mid = next_probe(lo, hi)
        hit = first_from(mid)
        probes += 1
        if hit is None or hit.origin_offset >= source_offset:
            if hit is not None:
                found = hit  # each new one sits at a lower target offset
            hi = mid
        else:
            earlier = hit
            lo = hit.target_offset + 1
    return found, earlier, probes


def translate_from_candidates(
    *,
    group: str,
    topic: str,
    partition: int,
    source_offset: int,
    target_topic: str,
    target_range: tuple[int, int],
    progress: int | None,
    found: Hit | None,
    earlier: Hit | None,
    source_range: tuple[int, int] | None = None,
    origin: str = "source",
    behind_copied: int | None = None,
) -> Translation:
    """Decide the target offset for committed ``source_offset`` (X) from what was found.

    :param target_range: ``(log start, last stable offset)`` of ``target_topic[partition]``.
    :param progress: the flow's next source offset not yet copied (``None``: none committed).
    :param found: the first record of this origin on the target with origin offset >= X.
    :param earlier: any record of this origin on the target before ``found`` (or anywhere,
        when nothing was found) with origin offset < X: proof that the target still holds this
        origin's records from below X, so retention on the target removed nothing needed.
    :param source_range: ``(log start, last stable offset)`` on the source, ``None`` when the
        source cannot be asked (it is down).
    :param behind_copied: when ``progress < X``: the records the flow copies among source
        offsets ``progress..X-1``, counted on the source (read_committed, loop policy
        applied); ``None`` when the source could not be read.
    """
    x = source_offset
    t_low, t_end = target_range
    where = f"{origin}/{topic}[{partition}]@{x}"

    def out(status: str, target_offset: int | None, reason: str, behind: int = 0) -> Translation:
        return Translation(group, topic, partition, x, target_topic, target_offset, status, reason, behind)

    if x < 0:
        return out(UNTRANSLATABLE, None, f"{where}: not a committed offset")
    if source_range is not None and x > source_range[1]:
        return out(
            UNTRANSLATABLE,
            None,
            f"{where} is beyond the source's end offset {source_range[1]}: the commit does not belong to this log",
        )
    if progress is not None and found is not None and found.origin_offset >= progress:
        return out(
            UNTRANSLATABLE,
            None,
            f"{where}: target {target_topic}[{partition}]@{found.target_offset} holds origin offset "
            f"{found.origin_offset} but the flow's progress is {progress}: progress and data disagree",
        )

    if found is not None:
        y, t = found.origin_offset, found.target_offset
        if y == x:
            return out(EXACT, t, f"record {x} is at {target_topic}[{partition}]@{t}")
        if earlier is not None or t_low == 0:
            return out(
                EXACT,
                t,
                f"first record at or after {x} is origin offset {y} at {target_topic}[{partition}]@{t} "
                f"(offsets {x}..{y - 1} are compacted away, filtered by the loop policy or were never on the source)",
            )
        return out(
            UNTRANSLATABLE,
            None,
            f"{where}: the first record of it on {target_topic}[{partition}] is origin offset {y} "
            f"at the target's log start region (log start {t_low}); origin offsets {x}..{y - 1} "
            f"may have been deleted by retention on the target, so the position is not known",
        )

    # Nothing from this origin at or after X on the target.
    if progress is None:
        if source_range is not None and source_range[0] == source_range[1] == x:
            return out(
                EXACT, t_end, f"{where}: the source partition is empty and nothing was copied; the target end {t_end}"
            )
        return out(
            UNTRANSLATABLE,
            None,
            f"{where}: the flow has no progress for {target_topic}[{partition}] and the target "
            f"holds no record of this origin at or after it",
        )
    if progress < x:
        gap = x - progress
        if behind_copied == 0:
            return out(
                EXACT,
                t_end,
                f"replica caught up with the group: source offsets {progress}..{x - 1} hold no record the "
                f"flow copies (transaction markers, aborted or loop-filtered records): the target end {t_end}",
            )
        if behind_copied is not None:
            return out(
                APPROXIMATE,
                t_end,
                f"replica behind: {behind_copied} record(s) in source offsets {progress}..{x - 1} are "
                f"not copied yet; at the target end {t_end} the group re-reads them if they are copied later",
                behind=behind_copied,
            )
        return out(
            APPROXIMATE,
            t_end,
            f"replica behind: source offsets {progress}..{x - 1} ({gap}) are not copied yet (at most "
            f"{gap} record(s): the source cannot be read to tell records from transaction markers); at the target end "
            f"{t_end} the group re-reads them if they are copied later",
            behind=gap,
        )
    if progress == x:
        return out(EXACT, t_end, f"replica caught up with the group at {x}: the target end {t_end}")
    # progress > X but no record >= X on the target: filtered/compacted, or deleted by retention.
    if earlier is not None or t_low == 0:
        return out(
            EXACT,
            t_end,
            f"source offsets {x}..{progress - 1} were copied but none is on the target "
            f"(compacted or filtered): the target end {t_end}",
        )
    return out(
        UNTRANSLATABLE,
        None,
        f"{where}: copied up to {progress - 1}, but {target_topic}[{partition}] (log start {t_low}) "
        f"holds no record of it at or after {x}; they may have been deleted by retention on the target",
    )


def timestamp_target(source_ts_ms: int, margin_seconds: float) -> int:
    """The timestamp to look up on the target: the source record's, minus the safety margin."""
    return source_ts_ms - int(margin_seconds * 1000)


def translate_by_timestamp(
    *,
    group: str,
    topic: str,
    partition: int,
    source_offset: int,
    target_topic: str,
    target_end: int,
    source_ts_ms: int | None,
    margin_seconds: float,
    offset_for_ts: int | None,
    origin: str = "source",
) -> Translation:
    """The fallback without provenance (data copied by another tool): the first target record
    whose timestamp is >= (timestamp of source record X - margin). Always ``approximate``: the
    margin trades re-reads for safety (records within it are read again), and timestamps are
    not unique or ordered across producers.

    :param source_ts_ms: timestamp of source record X (or of X-1 when X is the end), ``None``
        when it cannot be read.
    :param offset_for_ts: the target's answer to the timestamp lookup; ``None``/negative when
        no record is that recent (then the target end).
    """
    x = source_offset
    if source_ts_ms is None:
        return Translation(
            group,
            topic,
            partition,
            x,
            target_topic,
            None,
            UNTRANSLATABLE,
            f"{origin}/{topic}[{partition}]@{x}: no provenance on {target_topic}[{partition}] and no source record "
            f"timestamp to fall back on (source down or record gone)",
        )
    ts = timestamp_target(source_ts_ms, margin_seconds)
    t = offset_for_ts if offset_for_ts is not None and offset_for_ts >= 0 else target_end
    return Translation(
        group,
        topic,
        partition,
        x,
        target_topic,
        t,
        APPROXIMATE,
        f"approximate: no provenance on {target_topic}[{partition}]; first record with timestamp >= {ts} "
        f"(source record time {source_ts_ms} minus {margin_seconds:g}s margin) is at {t}; "
        f"records within the margin are re-read",
    )


# --- group offset sync: what to write, pure -----------------------------------------------

INACTIVE_GROUP_STATES = frozenset({"EMPTY", "DEAD", "UNKNOWN", "NOT_FOUND"})


def default_group_deny(internal_prefix: str) -> tuple[str, ...]:
    """Groups never synced: the product's own (``<internal_prefix>...``) and any starting with ``_``."""
    import re

    return (re.escape(internal_prefix) + ".*", "_.*")


def configured_groups(
    allow: tuple[str, ...], deny: tuple[str, ...], internal_prefix: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ``consumer_groups`` selection of the config, with the groups that are never synced
    added to its deny list: ``(allow, deny)`` for :func:`group_selected`."""
    return tuple(allow), default_group_deny(internal_prefix) + tuple(deny)


def group_selected(group: str, allow: tuple[str, ...], deny: tuple[str, ...]) -> bool:
    """Full-match regexes; deny wins over allow."""
    import re

    if any(re.fullmatch(p, group) for p in deny):
        return False
    return any(re.fullmatch(p, group) for p in allow)


def commit_decision(translation: Translation, current_target: int | None, group_state: str) -> tuple[bool, str]:
    """Whether the sync commits ``translation`` on the target, and why (not).

    Only while the group has no active member on the target (state Empty/Dead/unknown), only a
    translated offset, and never backwards of what the target group already committed.
    """
    if group_state.upper() not in INACTIVE_GROUP_STATES:
        return False, f"group is {group_state} on the target (active members): not touched"
    if translation.target_offset is None:
        return False, f"untranslatable: {translation.reason}"
    if current_target is not None and current_target >= translation.target_offset:
        return False, f"target already at {current_target} >= {translation.target_offset}: never moved backwards"
    return True, "committed"


SYNC_MARK = "kafka_dr.offset_sync"


def sync_commit_metadata(flow: str, source_offset: int) -> str:
    """Commit metadata of an offset the sync wrote on a target: says who wrote it and from what."""
    import json

    return json.dumps(stamped({SYNC_MARK: flow, "src": source_offset}), separators=(",", ":"))


def is_sync_commit(metadata: str | None) -> bool:
    """Whether a committed offset was written by the sync, not by a consumer. Such offsets are
    never synced onward: in active/active the reverse flow would otherwise translate them back
    onto the cluster they came from (a ping-pong that can move a group past unread records).
    A consumer that resumes there and commits replaces the metadata, and is synced again."""
    import json

    try:
        d = json.loads(metadata or "")
    except ValueError:
        return False
    return isinstance(d, dict) and SYNC_MARK in readable(d, "an offset the sync committed")


def sync_key(flow: str, group: str, topic: str, partition: int) -> bytes:
    import json

    return json.dumps([flow, group, topic, partition], separators=(",", ":")).encode()


def synced_at(records: list[tuple[bytes | None, bytes | None, int]]) -> dict[tuple[str, str], int]:
    """From offset-sync records (key, value, timestamp ms): when each (flow, group) was last
    recorded; tombstones and records that are not ours are left out."""
    import json

    out: dict[tuple[str, str], int] = {}
    for key, value, ts in records:
        try:
            k = json.loads(key or b"")
        except ValueError:
            continue
        if isinstance(k, list) and len(k) == 4 and value is not None:
            at = (str(k[0]), str(k[1]))
            out[at] = max(out.get(at, 0), ts)
    return out


def sync_value(translation: Translation, committed: bool, ts_ms: int) -> bytes:
    import json

    extra = {
        k: getattr(translation, k)
        for k in ("effective_offset", "local_read_below")
        if getattr(translation, k) is not None
    }
    return json.dumps(
        stamped(
            {
                "source_offset": translation.source_offset,
                "target_offset": translation.target_offset,
                "status": translation.status,
                "committed": committed,
                "ts": ts_ms,
                **extra,
            }
        ),
        separators=(",", ":"),
    ).encode()


@dataclass(frozen=True)
class SyncedPosition:
    """What the offset sync last recorded of a group on one source partition: its committed
    offset, that offset in records (``effective_offset``) and the target records it had read
    (``local_read_below``); the last two are ``None`` when the sync did not know them."""

    source_offset: int
    effective_offset: int | None = None
    local_read_below: int | None = None
    #: when the sync recorded it (ms since the epoch); ``None`` in records without the time
    synced_at_ms: int | None = None


def latest_synced(
    records: list[tuple[bytes | None, bytes | None]], flow: str, group: str
) -> dict[tuple[str, int], int]:
    """From the offset-sync topic's records (key, value) in order: the last source offset
    recorded per (topic, partition) for ``flow`` and ``group``; tombstones remove the entry,
    records that are not ours are ignored."""
    return {k: v.source_offset for k, v in latest_synced_positions(records, flow, group).items()}


def latest_synced_positions(
    records: list[tuple[bytes | None, bytes | None]], flow: str, group: str
) -> dict[tuple[str, int], SyncedPosition]:
    """:func:`latest_synced` with everything the record holds."""
    return synced_positions_by_group(records, flow).get(group, {})


def synced_positions_by_group(
    records: list[tuple[bytes | None, bytes | None]], flow: str
) -> dict[str, dict[tuple[str, int], SyncedPosition]]:
    """Every group of ``flow`` in one pass over the records: what :func:`latest_synced_positions`
    gives for each (a group whose every entry was removed is there, empty)."""
    import json

    def opt(v: dict, k: str) -> int | None:
        return int(v[k]) if v.get(k) is not None else None

    out: dict[str, dict[tuple[str, int], SyncedPosition]] = {}
    for key, value in records:
        try:
            k = json.loads(key or b"")
        except ValueError:
            continue
        if not (isinstance(k, list) and len(k) == 4 and k[0] == flow):
            continue
        positions = out.setdefault(str(k[1]), {})
        tp = (str(k[2]), int(k[3]))
        if value is None:
            positions.pop(tp, None)
            continue
        try:
            v = readable(json.loads(value), "an offset-sync record")
            positions[tp] = SyncedPosition(
                int(v["source_offset"]), opt(v, "effective_offset"), opt(v, "local_read_below"), opt(v, "ts")
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return out

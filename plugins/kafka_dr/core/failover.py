"""Failover decisions that need no cluster: the recovery-point report and the summary.

The report counts *records the flow would copy* that the survivor lacks: transaction markers,
aborted records and records the loop policy filters (copies that came from the survivor) are
not missing. When the failed cluster still answers they are counted exactly, reading it from
the copy position to its end (``exact``). When it is gone, what is known comes from the
survivor: the flow's committed copy progress, the last count the offset sync made on the
source while it answered (a *tail*: records the flow copies between the progress and the
end then), the last source ends the replication job reported, and the newest heartbeat of the
failed cluster that reached the survivor. Then the figure is a lower bound
(``approximate``), the offsets after the last count whose content is unknown are given
apart, and records produced after that are bounded by the time window only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from kafka_dr.core.formats import readable, stamped

EXACT = "exact"
APPROXIMATE = "approximate"


@dataclass(frozen=True)
class RpoEntry:
    flow: str
    topic: str
    partition: int
    copied_up_to: int | None  #: next source offset the survivor has (committed progress)
    last_known_source_end: int | None  #: the source's end when counted, else the last one reported
    missing_at_least: int | None  #: records the flow copies known to be on the failed cluster and not copied
    status: str = APPROXIMATE  #: "exact": counted on the failed cluster now; "approximate": a lower bound
    unaccounted_offsets: int = 0  #: source offsets after the last count, up to the last known end: content unknown

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class SourceTail:
    """The offset sync's count on the source (while it answered): ``records`` the flow copies
    in source offsets ``[copied_up_to, end)``; ``end`` is the source's end then, or where a
    capped count stopped."""

    copied_up_to: int
    end: int
    records: int
    ts: int = 0


def tail_key(flow: str, topic: str, partition: int) -> bytes:
    # a JSON object, never a list: offset-sync readers of group positions skip it
    return json.dumps({"tail": [flow, topic, partition]}, separators=(",", ":")).encode()


def tail_value(tail: SourceTail) -> bytes:
    return json.dumps(stamped(tail.__dict__), separators=(",", ":")).encode()


def latest_tails(records: list[tuple[bytes | None, bytes | None]], flow: str) -> dict[tuple[str, int], SourceTail]:
    """The last tail recorded per (source topic, partition) of ``flow``; other records are ignored."""
    out: dict[tuple[str, int], SourceTail] = {}
    for key, value in records:
        try:
            k = json.loads(key or b"")
            name, topic, partition = k["tail"]
            if name != flow:
                continue
            v = readable(json.loads(value or b""), "a source tail")
            out[(str(topic), int(partition))] = SourceTail(
                int(v["copied_up_to"]), int(v["end"]), int(v["records"]), int(v.get("ts", 0))
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return out


def cluster_pair_problem(known: list[str], first: tuple[str, str], second: tuple[str, str]) -> str | None:
    """What is wrong with the two clusters an operator run names (``(role, name)`` each), or
    None: both must be configured and differ. Shared by failover and failback."""
    for role, name in (first, second):
        if name not in known:
            return f"unknown {role} cluster {name!r} (known: {', '.join(known)})"
    if first[1] == second[1]:
        return f"the {first[0]} and the {second[0]} cluster are both {first[1]!r}"
    return None


def rpo_entry(
    flow: str,
    topic: str,
    partition: int,
    copied_up_to: int | None,
    last_known_end: int | None,
    counted: int | None = None,
    tail: SourceTail | None = None,
) -> RpoEntry:
    """One partition's figure.

    :param counted: records the flow copies in ``[copied_up_to, last_known_end)``, counted on
        the failed cluster now (``last_known_end`` is then its current end): exact.
    :param tail: the offset sync's last count, when the failed cluster cannot be read.
    """
    if counted is not None:
        return RpoEntry(flow, topic, partition, copied_up_to, last_known_end, counted, EXACT)
    copied = copied_up_to if copied_up_to is not None else 0
    known, counted_to = 0, copied
    if tail is not None:
        # each offset copied since the count holds at most one of its records
        known = max(0, tail.records - max(0, copied - tail.copied_up_to)) if copied < tail.end else 0
        counted_to = max(copied, tail.end)
    end = (
        max(e for e in (last_known_end, tail.end if tail else None, copied_up_to) if e is not None)
        if (last_known_end is not None or tail is not None or copied_up_to is not None)
        else None
    )
    if end is None:
        return RpoEntry(flow, topic, partition, copied_up_to, None, None, APPROXIMATE)
    return RpoEntry(flow, topic, partition, copied_up_to, end, known, APPROXIMATE, max(0, end - counted_to))


def selected_partitions(keys, selects) -> list[tuple[str, int]]:
    """The (source topic, partition) keys of the current flow's selection: figures recorded
    under an earlier config with the same flow name are not this flow's."""
    return sorted(k for k in keys if selects(k[0]))


def rpo_seconds(now_ms: int, newest_heartbeat_ms: int | None) -> float | None:
    """Upper bound of the window of writes the survivor may lack: time since the newest
    heartbeat of the failed cluster that reached the survivor (None: never reached)."""
    return None if newest_heartbeat_ms is None else max(0.0, (now_ms - newest_heartbeat_ms) / 1000.0)


def last_known_ends(metric_rows: list[dict], flow: str) -> dict[tuple[str, int], int]:
    """Per (source topic, partition), the largest source end the job reported: range end plus
    the lag it saw after copying."""
    out: dict[tuple[str, int], int] = {}
    for r in metric_rows:
        if r.get("flow") != flow or "topic" not in r or "partition" not in r:
            continue
        end = int(r.get("end") or 0) + int(r.get("lag") or 0)
        k = (r["topic"], int(r["partition"]))
        out[k] = max(out.get(k, 0), end)
    return out


def rereads_since_sync_at_most(synced_offset: int, copied_below: int | None) -> int | None:
    """What a group moved from a cluster that cannot be asked reads again at most: whatever it
    read there after its synced position is a copy at or after that position and below what
    the flow had copied (``copied_below``, the flow's next source offset); what the flow never
    copied is lost, not re-read. Counted in source offsets, so markers and filtered records
    count too. ``None`` when the flow recorded no progress."""
    return None if copied_below is None else max(0, copied_below - synced_offset)

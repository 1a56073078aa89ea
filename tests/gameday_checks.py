"""An independent check of a game day, by the suite's own means: the records the game day's apps
produced and were handed (the files it keeps, :mod:`kafka_dr.gameday.records`) against what both
clusters hold, read here record by record. Nothing the game day concluded is used.

- every acknowledged record is held exactly once by each cluster, and no record of an aborted
  transaction is visible (read_committed);
- every consumer group was handed every acknowledged record at least once: a group whose
  position a failover or failback moved past a record it had not read would never get it;
- records handed to a group again are counted per window between the group's moves.

The compacted topic is left out: the cleaner may remove a superseded value before anyone reads it.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

GD_ID = "gd.id"


@dataclass(frozen=True)
class AppRecords:
    acked: dict[str, str]  #: gd.id -> topic, every acknowledged record outside the compacted topic
    aborted: frozenset[str]
    reads: dict[str, list[tuple[float, str]]]  #: group -> (time, gd.id) in the order handed
    moves: dict[str, list[float]] = field(default_factory=dict)  #: group -> when it moved, in order
    #: group -> (time, gd.id, cluster) in the order handed; group -> the cluster each move left
    reads_where: dict[str, list[tuple[float, str, str]]] = field(default_factory=dict)
    moves_from: dict[str, list[str]] = field(default_factory=dict)


def load_app_records(folder: Path, compacted_topic: str) -> AppRecords:
    acked, aborted = {}, set()
    for line in (folder / "produced.jsonl").read_text().splitlines():
        p = json.loads(line)
        if p["fate"] == "acked" and p["topic"] != compacted_topic:
            acked[p["gd_id"]] = p["topic"]
        elif p["fate"] == "aborted":
            aborted.add(p["gd_id"])
    reads: dict[str, list[tuple[float, str, str]]] = {}
    for line in (folder / "reads.jsonl").read_text().splitlines():
        r = json.loads(line)
        reads.setdefault(r["group"], []).append((r["at"], r["gd_id"], r["cluster"]))
    moves: dict[str, list[tuple[float, str]]] = {}
    for m in json.loads((folder / "moves.json").read_text()):
        moves.setdefault(m["group"], []).append((m["at"], m["source"]))
    where = {g: sorted(r, key=lambda x: x[0]) for g, r in reads.items()}
    return AppRecords(
        acked,
        frozenset(aborted),
        {g: [(at, gd) for at, gd, _ in r] for g, r in where.items()},
        {g: [at for at, _ in sorted(t)] for g, t in moves.items()},
        where,
        {g: [src for _, src in sorted(t)] for g, t in moves.items()},
    )


def gd_ids(records: Iterable) -> Counter:
    """How often each ``gd.id`` occurs in records read from a cluster (``kafka_checks.read_topic``)."""
    held: Counter = Counter()
    for r in records:
        gd = next((v.decode() for k, v in r.headers or () if k == GD_ID and v is not None), None)
        if gd is not None:
            held[gd] += 1
    return held


def cluster_figures(apps: AppRecords, held: Mapping[str, int]) -> dict[str, int]:
    """``lost``: acknowledged, not held; ``duplicated``: held more than once; ``aborted_present``."""
    return {
        "acked": len(apps.acked),
        "lost": sum(1 for gd in apps.acked if not held.get(gd)),
        "duplicated": sum(n - 1 for gd, n in held.items() if gd in apps.acked and n > 1),
        "aborted_present": sum(1 for gd in apps.aborted if held.get(gd)),
    }


def group_figures(apps: AppRecords, group: str) -> dict:
    """``skipped``: acknowledged records never handed to ``group``; ``aborted_delivered``;
    ``rereads_by_window``: records handed again, before the first move, after it, and so on."""
    handed = apps.reads.get(group, [])
    moves = apps.moves.get(group, [])
    seen: set[str] = set()
    again = [0] * (len(moves) + 1)
    for at, gd in handed:
        if gd in seen:
            again[bisect_right(moves, at)] += 1
        seen.add(gd)
    return {
        "handed": len(handed),
        "skipped": sum(1 for gd in apps.acked if gd not in seen),
        "aborted_delivered": sum(1 for gd in apps.aborted if gd in seen),
        "rereads_by_window": again,
    }


def move_rereads(apps: AppRecords, group: str, window_s: float) -> list[dict[str, int]]:
    """Per move of ``group``: ``observed``, the records handed to it again between that move and
    the next; ``window_worth``, the records it was first handed on the cluster it left in the
    ``window_s`` seconds up to its last read there (what a position synced that long before it
    left can miss)."""
    handed = apps.reads_where.get(group, [])
    moves = apps.moves.get(group, [])
    seen: set[str] = set()
    again = [0] * (len(moves) + 1)
    firsts: list[tuple[float, str]] = []  #: (time, cluster) of each first hand-over
    for at, gd, cluster in handed:
        if gd in seen:
            again[bisect_right(moves, at)] += 1
        else:
            seen.add(gd)
            firsts.append((at, cluster))
    out = []
    for i, (at, left) in enumerate(zip(moves, apps.moves_from.get(group, []))):
        there = [t for t, c in firsts if c == left and t < at]
        worth = sum(1 for t in there if t > there[-1] - window_s) if there else 0
        out.append({"observed": again[i + 1], "window_worth": worth})
    return out

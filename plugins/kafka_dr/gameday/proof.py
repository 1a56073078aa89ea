"""The game day's proof, from the clusters themselves: nothing lost, duplicated or skipped.

Pure functions over the plain values of :mod:`kafka_dr.gameday.model` (the ledger of what was
produced, what a cluster holds, what each consumer group read, when groups moved); each
returns a :class:`Check` with counts and a few example ids, so a report prints
"lost 0, duplicated 0". :func:`read_cluster` and :func:`where_lost` are the functions here
that talk to Kafka: the first reads a cluster's game-day topics read_committed into those
values, the second says what a lost record's offset holds now.

Which acknowledged records a cluster must hold is the caller's choice (``expect``): its own
app's records without replication, every app's once the flows have caught up.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from kafka_dr.gameday.model import GamedayNames, LedgerView, Move, Produced, Read, Stored, identify, parse_id

#: how many example ids a check keeps per figure
EXAMPLES = 5

Expect = Callable[[Produced], bool]


@dataclass(frozen=True)
class Check:
    """One check's figures. It passes when every figure named in ``problems`` is 0; the
    other figures are for the report."""

    name: str
    counts: dict[str, int]
    problems: tuple[str, ...] = ()
    examples: dict[str, tuple[str, ...]] = field(default_factory=dict)
    details: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(self.counts.get(k, 0) == 0 for k in self.problems)

    def line(self) -> str:
        """``east presence: expected 1200, lost 0, duplicated 0 -> ok`` (examples when it fails)."""
        figures = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in self.counts.items())
        bad = [
            f"{k.replace('_', ' ')} e.g. {', '.join(self.examples[k])}"
            for k in self.problems
            if self.counts.get(k) and self.examples.get(k)
        ]
        return f"{self.name}: {figures} -> {'ok' if self.ok else 'FAILED'}" + "".join(f"; {b}" for b in bad)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "ok": self.ok,
            "counts": dict(self.counts),
            "examples": {k: list(v) for k, v in self.examples.items() if v},
            "details": self.details,
        }


def _some(ids: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(ids)[:EXAMPLES])


def _seq(gd: str) -> int | None:
    try:
        return parse_id(gd)[2]
    except ValueError:
        return None


# --- what a cluster holds -------------------------------------------------------------------


def presence(
    cluster: str,
    stored: Iterable[Stored],
    ledger: LedgerView,
    expect: Expect | None = None,
    compacted: Collection[str] = (),
) -> Check:
    """Every expected acknowledged record present exactly once, every aborted one absent, no
    record twice (an uncertain one may be there or not), none the ledger does not know.

    On ``compacted`` topics a superseded value may be gone: there only the latest acknowledged
    value per key (highest ``gd.seq``) must be present, unless a later (uncertain) value of
    that key is. The latest is by the app's sequence, so a value that reached this cluster out
    of the app's order (an older copy arriving after a newer local write) shows up here.
    """
    stored = list(stored)
    counts = Counter(s.gd_id for s in stored)
    expected = [p for p in ledger.acked.values() if expect is None or expect(p)]
    lost = [p.gd_id for p in expected if p.topic not in compacted and not counts[p.gd_id]]
    newest_present: dict[tuple[str, str], int] = {}
    for s in stored:
        seq = _seq(s.gd_id)
        if s.topic in compacted and seq is not None:
            newest_present[(s.topic, s.key)] = max(seq, newest_present.get((s.topic, s.key), -1))
    latest: dict[tuple[str, str], Produced] = {}
    for p in expected:
        k = (p.topic, p.key)
        if p.topic in compacted and (k not in latest or p.seq > latest[k].seq):
            latest[k] = p
    lost += [p.gd_id for k, p in latest.items() if not counts[p.gd_id] and newest_present.get(k, -1) <= p.seq]
    dups = {i: n for i, n in counts.items() if n > 1}
    aborted = [i for i in ledger.aborted if counts[i]]
    unknown = [i for i in counts if not ledger.known(i)]
    return Check(
        f"{cluster} presence",
        {
            "expected": len(expected),
            "present": len(stored),
            "lost": len(lost),
            "duplicated": sum(n - 1 for n in dups.values()),
            "aborted_present": len(aborted),
            "unknown": len(unknown),
            "uncertain_present": sum(1 for i in ledger.uncertain if counts[i]),
        },
        ("lost", "duplicated", "aborted_present", "unknown"),
        {"lost": _some(lost), "duplicated": _some(dups), "aborted_present": _some(aborted), "unknown": _some(unknown)},
    )


def order(cluster: str, stored: Iterable[Stored]) -> Check:
    """Per partition, the records of one key and one origin appear in increasing ``gd.seq``
    (the app's order is kept by the producer, the flows and any failover in between)."""
    newest: dict[tuple, tuple[int, str]] = {}
    broken: list[str] = []
    checked = 0
    for s in sorted(stored, key=lambda s: (s.topic, s.partition, s.offset)):
        seq = _seq(s.gd_id)
        if seq is None:
            continue
        checked += 1
        k = (s.topic, s.partition, s.key, s.origin)
        before = newest.get(k)
        if before is not None and seq < before[0]:
            broken.append(f"{s.gd_id} after {before[1]} in {s.topic}[{s.partition}]")
        if before is None or seq > before[0]:
            newest[k] = (seq, s.gd_id)
    return Check(
        f"{cluster} order",
        {"checked": checked, "out_of_order": len(broken)},
        ("out_of_order",),
        {"out_of_order": _some(broken)},
    )


# --- what a consumer group read -------------------------------------------------------------


def group_reads(
    group: str,
    reads: Iterable[Read],
    ledger: LedgerView,
    moves: Iterable[Move] = (),
    expect: Expect | None = None,
    compacted: Collection[str] = (),
    topics: Collection[str] | None = None,
) -> Check:
    """One group's whole day: ``skipped`` counts the expected acknowledged records on its
    (non-compacted) ``topics`` it never read; ``rereads`` every read of a record beyond its
    first, split by the group's moves (``details["rereads_by_move"]``: before any move, then
    from each move to the next, by origin) so they can be set against what the failover and
    failback reported; ``aborted_delivered`` the aborted records it was handed."""
    mine = sorted((r for r in reads if r.group == group), key=lambda r: r.at)
    mine_moves = sorted((m for m in moves if m.group == group), key=lambda m: m.at)
    starts = [m.at for m in mine_moves]
    again: list[Counter] = [Counter() for _ in range(len(mine_moves) + 1)]
    seen: set[str] = set()
    reread_ids: list[str] = []
    for r in mine:
        if r.gd_id in seen:
            again[bisect_right(starts, r.at)][r.origin] += 1
            reread_ids.append(r.gd_id)
        else:
            seen.add(r.gd_id)
    expected = [
        p.gd_id
        for p in ledger.acked.values()
        if (expect is None or expect(p)) and p.topic not in compacted and (topics is None or p.topic in topics)
    ]
    skipped = [i for i in expected if i not in seen]
    aborted = [i for i in seen if i in ledger.aborted]
    by_move = [{"move": None, "at": None, "rereads": sum(again[0].values()), "by_origin": dict(again[0])}]
    by_move += [
        {"move": f"{m.source}->{m.target}", "at": m.at, "rereads": sum(c.values()), "by_origin": dict(c)}
        for m, c in zip(mine_moves, again[1:])
    ]
    return Check(
        f"group {group}",
        {
            "expected": len(expected),
            "read": len(mine),
            "skipped": len(skipped),
            "rereads": len(reread_ids),
            "aborted_delivered": len(aborted),
        },
        ("skipped", "aborted_delivered"),
        {"skipped": _some(skipped), "rereads": _some(set(reread_ids)), "aborted_delivered": _some(aborted)},
        {"rereads_by_move": by_move},
    )


class FlowTime(NamedTuple):
    seconds: float  #: from the fault time to the first arrival
    gd_id: str  #: the record that arrived first
    read_at: float


def flowing_again(
    t: float, source: str, target: str, ledger: LedgerView, reads: Iterable[Read], app: str | None = None
) -> FlowTime | None:
    """From ``t`` to the first read on ``target`` (by any group there) of a record produced on
    ``source`` at or after ``t`` (optionally only ``app``'s); ``None`` if none arrived."""
    after = {
        p.gd_id
        for p in ledger.acked.values()
        if p.cluster == source and p.produced_at >= t and (app is None or p.app == app)
    }
    first = min(
        (r for r in reads if r.cluster == target and r.origin == source and r.at >= t and r.gd_id in after),
        key=lambda r: r.at,
        default=None,
    )
    return None if first is None else FlowTime(first.at - t, first.gd_id, first.at)


#: copies arrive many times a second under the game day's traffic: a pause this long is a stall
STALL_GAP_S = 5.0


def stall_end(
    began: float, until: float, source: str, target: str, reads: Iterable[Read], min_gap: float = STALL_GAP_S
) -> float | None:
    """When copies from ``source`` started arriving on ``target`` again after the longest pause
    that ended in (``began``, ``until``): its end, or None when no pause lasted ``min_gap``. A
    fault's first arrivals can be the killed job's last copies, so only the pause shows the stall."""
    times = sorted(r.at for r in reads if r.cluster == target and r.origin == source and r.at < until)
    gaps = [(b - a, b) for a, b in zip(times, times[1:], strict=False) if b > began]
    longest = max(gaps, default=None)
    return longest[1] if longest is not None and longest[0] >= min_gap else None


def flowing_since(
    t: float, began: float, now: float, source: str, target: str, ledger: LedgerView, reads: Iterable[Read]
) -> float | None:
    """As seen at ``now``, when copies from ``source`` reached ``target`` again after a fault
    that began at ``began`` and ended at ``t``: the first arrival of a record produced at or
    after ``t``, or the end of a longer pause after it (:func:`stall_end`), once arrivals have
    gone on for :data:`STALL_GAP_S` without pausing. None until then: a killed job's last
    copies can carry a record produced after the fault and be followed by the stall."""
    reads = [r for r in reads if r.cluster == target and r.origin == source]
    first = flowing_again(t, source, target, ledger, reads)
    if first is None or now - first.read_at < STALL_GAP_S:
        return None
    if now - max(r.at for r in reads) >= STALL_GAP_S:
        return None  # paused now: its end is still to come
    return max(first.read_at, stall_end(began, now, source, target, reads) or first.read_at)


def rpo_observed(
    failed: str,
    survivor: str,
    survivor_stored: Iterable[Stored],
    ledger: LedgerView,
    at: float,
    compacted: Collection[str] = (),
) -> Check:
    """Records acknowledged by ``failed`` up to ``at`` that ``survivor`` (read at that moment)
    does not hold: the data the failover loses, to set against its RPO report. Compacted
    topics are left out (a superseded value may be gone legitimately). ``rpo_seconds``: from
    the oldest missing record's acknowledgement to the last acknowledgement on ``failed``."""
    present = {s.gd_id for s in survivor_stored}
    acked = [
        p
        for p in ledger.acked.values()
        if p.cluster == failed and p.topic not in compacted and p.acked_at is not None and p.acked_at <= at
    ]
    missing = [p for p in acked if p.gd_id not in present]
    per_partition: Counter = Counter(f"{p.topic}[{p.partition}]" for p in missing)
    rpo = max(p.acked_at for p in acked) - min(p.acked_at for p in missing) if missing else 0.0
    return Check(
        f"RPO {failed}->{survivor}",
        {"acked": len(acked), "missing": len(missing), "rpo_seconds": round(rpo)},
        examples={"missing": _some(p.gd_id for p in missing)},
        details={"missing_by_partition": dict(sorted(per_partition.items())), "rpo_seconds": rpo},
    )


# --- reading a cluster ----------------------------------------------------------------------


def read_cluster(cluster_cfg, names: GamedayNames, timeout: float = 600.0) -> list[Stored]:
    """Everything ``cluster_cfg`` holds on the game-day topics, read_committed, in log order."""
    from kafka_dr.kafka import clients
    from kafka_dr.kafka.reading import read_partitions
    from kafka_dr.kafka.topics import partition_count

    here = cluster_cfg.name
    admin = clients.admin(cluster_cfg)
    consumer = clients.consumer(cluster_cfg, names.scan_group)
    out: list[Stored] = []
    try:
        for topic in names.topics:
            n = partition_count(admin, topic)
            for r in read_partitions(consumer, topic, list(range(n or 0)), timeout=timeout) if n else ():
                gd, origin = identify(r.headers, here)
                key = (r.key or b"").decode(errors="replace")
                out.append(Stored(gd, here, r.topic, r.partition, r.offset, key, origin))
    finally:
        consumer.close()
    return out


def where_lost(cluster_cfg, lost: Iterable[Produced], names: GamedayNames, timeout: float = 30.0) -> list[str]:
    """For each lost record the cluster acknowledged at a known offset, one line saying what
    that offset holds now: the record read read_uncommitted (written, but hidden as aborted or
    behind an open transaction), another record (the log was truncated and rewritten), or
    nothing (the log ends before it)."""
    from confluent_kafka import TopicPartition

    from kafka_dr.kafka import clients
    from kafka_dr.kafka.watermarks import watermarks

    here = cluster_cfg.name
    lines: list[str] = []
    raw = clients.consumer(cluster_cfg, names.scan_group, **{"isolation.level": "read_uncommitted"})
    committed = clients.consumer(cluster_cfg, names.scan_group)
    try:
        for p in lost:
            if p.cluster != here or p.partition is None or p.offset is None:
                continue
            tp = TopicPartition(p.topic, p.partition)
            low, high = watermarks(raw, tp, timeout)
            seen = [_first_at(c, TopicPartition(p.topic, p.partition, p.offset), timeout) for c in (raw, committed)]
            lines.append(
                f"{p.gd_id} acknowledged at {p.topic}[{p.partition}]@{p.offset} on {here} (log {low}..{high}): "
                f"read_uncommitted there {seen[0]}; read_committed from there {seen[1]}"
            )
    finally:
        raw.close()
        committed.close()
    return lines


def _first_at(consumer, start, timeout: float) -> str:
    """The first record a consumer gets from ``start``: its offset and ``gd.id``."""
    consumer.assign([start])
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            gd, _ = identify(msg.headers(), "")
            return f"@{msg.offset()} {gd or '(no gd.id)'}"
        return "nothing"
    finally:
        consumer.unassign()

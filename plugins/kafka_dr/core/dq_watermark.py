"""Incremental data quality: where each topic-partition's next comparison starts.

A **verified watermark** of a flow's topic-partition is a pair of offsets left by a run whose
window passed every correctness check: every eligible source record below ``source_offset``
has exactly one copy, in order, below ``target_offset``, and no copy below ``target_offset``
names a source record at or past ``source_offset``. The next run compares source
``[source_offset, end)`` with target ``[target_offset, target_end)``. Consecutive windows meet
by construction: a run starts exactly where a passed run ended, and a window that failed
leaves its watermark where it was, so the next run checks it again together with what is new.
A copy of an already verified source record found past the watermark is reported (a
duplicate across runs).

A watermark is not used, and the window is compared in full, when either topic was recreated
(its topic id differs), when the flow's progress is behind it or the target holds fewer records
than it names (a reset or truncation), and on compacted topics, where the latest record per
key depends on every record. A **full sweep** compares a partition from its log start again:
when asked, and when the partition's last full comparison (``swept_ms``, carried from
watermark to watermark) is ``data_quality.full_sweep_hours`` old.

Nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from kafka_dr.core.dq import PartitionWindow
from kafka_dr.core.formats import readable, stamped


@dataclass(frozen=True)
class Watermark:
    """Where a flow's topic-partition was last verified (see the module docstring)."""

    flow: str
    topic: str
    partition: int
    source_offset: int
    target_offset: int
    source_topic_id: str
    target_topic_id: str
    ts_ms: int = 0
    run_id: str = ""
    swept_ms: int = 0  #: when this partition was last compared from its log start

    @property
    def key(self) -> bytes:
        return mark_key(self.flow, self.topic, self.partition)

    def encode(self) -> bytes:
        return json.dumps(stamped({"kind": "watermark", **asdict(self)}), separators=(",", ":")).encode()


def mark_key(flow: str, topic: str, partition: int) -> bytes:
    """The record key of one watermark (the store is a compacted topic: one record per key)."""
    return json.dumps(["watermark", flow, topic, partition], separators=(",", ":")).encode()


def decode(value: bytes | None) -> Watermark | None:
    """A stored watermark, or ``None`` for a record this version cannot read (ignored: the
    window is then compared in full)."""
    try:
        d = json.loads(value or b"")
        if d.get("kind") == "watermark" and readable(d, "a data-quality watermark"):
            fields = Watermark.__dataclass_fields__
            return Watermark(**{k: d[k] for k in fields if k in d})
    except (ValueError, TypeError, KeyError, AttributeError):
        pass
    return None


def sweep_due(mark: Watermark, now_ms: int, every_hours: float) -> bool:
    """Whether the partition is due a comparison from its log start (``every_hours`` 0: only
    when asked)."""
    return every_hours > 0 and now_ms - mark.swept_ms >= every_hours * 3_600_000


def narrow(
    window: PartitionWindow,
    mark: Watermark | None,
    source_topic_id: str,
    target_topic_id: str,
    now_ms: int = 0,
    sweep_hours: float = 0,
) -> tuple[PartitionWindow, str | None]:
    """The window an incremental run compares, and ``None``; or the full window and why."""
    if window.compacted:
        return window, "compacted topic"
    if mark is None:
        return window, "no verified watermark"
    if sweep_due(mark, now_ms, sweep_hours):
        return window, "full sweep due"
    if (mark.source_topic_id, mark.target_topic_id) != (source_topic_id, target_topic_id):
        return window, "topic recreated"
    if mark.source_offset > window.end:
        return window, "flow progress behind the watermark"
    if mark.target_offset > window.target_end:
        return window, "target holds fewer records than the watermark names"
    return (
        replace(
            window,
            start=max(window.start, mark.source_offset),
            target_start=max(window.target_start, mark.target_offset),
            verified_end=mark.source_offset,
        ),
        None,
    )


#: Checks a window must pass for its watermark to advance. Latency is not one of them: a slow
#: copy is still a correct copy, and its alert is the check's own.
CORRECTNESS = ("missing", "duplicated", "unexpected", "out_of_order", "self_origin", "malformed_provenance")


def passed(row: Mapping[str, Any]) -> bool:
    """Whether a comparison row shows the window correct: counts and checksums equal and
    nothing missing, duplicated, unexpected, out of order or of broken provenance."""
    if any(row.get(c) for c in CORRECTNESS):
        return False
    return row.get("source_count") == row.get("target_count") and row.get("source_checksum") == row.get(
        "target_checksum"
    )


def next_mark(
    window: PartitionWindow,
    row: Mapping[str, Any],
    source_topic_id: str,
    target_topic_id: str,
    ts_ms: int,
    run_id: str,
    previous: Watermark | None = None,
) -> Watermark | None:
    """The watermark a compared window leaves, or ``None`` (failed, or a compacted topic).

    The target side ends before the first copy of a source record at or past the window's
    end (``row["first_in_flight"]``: copied while the comparison planned), so that copy is in
    the next run's target window, with the source record it names. A full window records
    its time as the partition's last sweep; a narrowed one carries ``previous``'s."""
    if window.compacted or not passed(row):
        return None
    swept = ts_ms if window.verified_end is None or previous is None else previous.swept_ms
    in_flight = row.get("first_in_flight")
    target_offset = window.target_end if in_flight is None else min(int(in_flight), window.target_end)
    return Watermark(
        window.flow,
        window.topic,
        window.partition,
        window.end,
        max(target_offset, window.target_start),
        source_topic_id,
        target_topic_id,
        ts_ms,
        run_id,
        swept,
    )


def empty(window: PartitionWindow) -> bool:
    """Nothing to read on either side: the row is known without Spark."""
    return window.start >= window.end and window.target_start >= window.target_end and not window.compacted


def empty_row(window: PartitionWindow) -> dict[str, Any]:
    """The comparison row of an :func:`empty` window (all counts zero)."""
    return {
        "kind": "partition",
        "flow": window.flow,
        "source": window.source,
        "target": window.target,
        "topic": window.topic,
        "target_topic": window.target_topic,
        "partition": window.partition,
        "window_start": window.start,
        "window_end": window.end,
        "source_count": 0,
        "target_count": 0,
        "missing": 0,
        "duplicated": 0,
        "unexpected": 0,
        "out_of_order": 0,
        "source_checksum": "0",
        "target_checksum": "0",
        "latency_p50_ms": None,
        "latency_p99_ms": None,
        "self_origin": 0,
        "malformed_provenance": 0,
        "differences": None,
        "detail": None,
        "first_in_flight": None,
    }

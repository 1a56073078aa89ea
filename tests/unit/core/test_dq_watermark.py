"""Incremental data-quality windows: chaining, fallbacks to a full window, what advances."""

from __future__ import annotations

import random
from dataclasses import replace

from kafka_dr.core.dq import PartitionWindow
from kafka_dr.core.dq_watermark import (
    Watermark,
    decode,
    empty,
    empty_row,
    mark_key,
    narrow,
    next_mark,
    passed,
)

SID, TID = "src-id", "tgt-id"


def window(start=0, end=100, limit=100, target_start=0, target_end=200, compacted=False) -> PartitionWindow:
    return PartitionWindow("f", "east", "west", "t", "t", 0, start, end, limit, target_start, target_end, compacted)


def mark(source=40, target=80, sid=SID, tid=TID, swept=0) -> Watermark:
    return Watermark("f", "t", 0, source, target, sid, tid, 1, "r", swept)


def good_row(**over) -> dict:
    row = empty_row(window())
    row.update(source_count=5, target_count=5, source_checksum="9", target_checksum="9")
    row.update(over)
    return row


def test_a_valid_watermark_narrows_both_sides_and_marks_what_was_verified():
    w, why = narrow(window(), mark(), SID, TID)
    assert why is None
    assert (w.start, w.end, w.target_start, w.target_end, w.verified_end) == (40, 100, 80, 200, 40)


def test_retention_past_the_watermark_starts_at_the_log_start():
    w, _ = narrow(window(start=60, target_start=90), mark(), SID, TID)
    assert (w.start, w.target_start, w.verified_end) == (60, 90, 40)


def test_every_doubtful_watermark_gives_the_full_window():
    full = window()
    cases = {
        "compacted topic": (window(compacted=True), mark(), SID, TID),
        "no verified watermark": (full, None, SID, TID),
        "topic recreated": (full, mark(), "other", TID),
        "flow progress behind the watermark": (full, mark(source=101), SID, TID),
        "target holds fewer records than the watermark names": (full, mark(target=201), SID, TID),
    }
    for reason, (w, m, sid, tid) in cases.items():
        got, why = narrow(w, m, sid, tid)
        assert (got, why) == (w, reason)
        assert got.verified_end is None
    _, why = narrow(full, mark(), SID, "recreated-target")
    assert why == "topic recreated"


def test_only_correctness_failures_stop_the_watermark():
    assert passed(good_row())
    assert passed(good_row(latency_p99_ms=10**9))  # slow, but every record is there
    for column in ("missing", "duplicated", "unexpected", "out_of_order", "self_origin", "malformed_provenance"):
        assert not passed(good_row(**{column: 1})), column
    assert not passed(good_row(target_count=4))
    assert not passed(good_row(target_checksum="8"))


def test_the_next_target_window_starts_at_the_first_copy_in_flight():
    w = window(end=100, limit=103, target_start=10, target_end=200)
    assert next_mark(w, good_row(first_in_flight=195), SID, TID, 5, "r") == Watermark(
        "f", "t", 0, 100, 195, SID, TID, 5, "r", swept_ms=5
    )
    assert next_mark(w, good_row(), SID, TID, 5, "r").target_offset == 200
    assert next_mark(w, good_row(missing=1), SID, TID, 5, "r") is None
    assert next_mark(window(compacted=True), good_row(), SID, TID, 5, "r") is None


def test_windows_of_consecutive_runs_meet_with_no_gap_and_failures_are_rechecked():
    """A partition whose flow copies source offset i to target offset 2i + 1 (the target's own
    producers write the even offsets). Runs plan at random moments, some with copies in
    flight, some failing. Every copy of a compared source record is inside the compared target
    range, and the passed windows cover the source from 0 without a gap or an overlap."""
    rng = random.Random(7)
    copied, progress, marks, covered = 0, 0, None, []
    for run in range(300):
        copied += rng.choice([0, 0, 1, 5, 40])
        progress = rng.choice([progress, copied, (progress + copied) // 2])  # committed progress lags
        in_flight = copied - progress
        full = window(0, progress, copied, 0, 2 * copied)
        w, why = narrow(full, marks, SID, TID)
        if marks is not None:
            assert why is None and w.start == marks.source_offset and w.target_start == marks.target_offset
        for i in range(w.start, w.end):
            assert w.target_start <= 2 * i + 1 < w.target_end, (run, i, w)
        first = 2 * w.end + 1 if in_flight else None
        ok = rng.random() > 0.2
        row = good_row(first_in_flight=first, missing=0 if ok else 1)
        new = next_mark(w, row, SID, TID, run, str(run))
        if ok:
            covered.append((w.start, w.end))
            marks = new
        else:
            assert new is None  # the watermark stays: the next run compares this window again
    assert covered[0][0] == 0
    assert all(a[1] == b[0] for a, b in zip(covered, covered[1:], strict=False))
    assert covered[-1][1] == marks.source_offset > 0


def test_empty_windows_need_no_reading():
    assert empty(replace(window(), start=100, target_start=200))
    assert not empty(replace(window(), start=100, target_start=199))  # a target record to judge
    assert not empty(replace(window(), start=99, target_start=200))
    assert not empty(window(start=100, target_start=200, compacted=True))
    row = empty_row(window(start=100, target_start=200))
    assert passed(row) and row["window_start"] == 100


def test_a_partition_is_swept_again_when_its_last_full_comparison_is_old():
    hour = 3_600_000
    m = mark(swept=0)
    assert narrow(window(), m, SID, TID, 23 * hour, 24)[1] is None
    assert narrow(window(), m, SID, TID, 24 * hour, 24) == (window(), "full sweep due")
    assert narrow(window(), m, SID, TID, 10**6 * hour, 0)[1] is None  # 0: only when asked
    # a full window records the sweep; a narrowed one carries the last sweep forward
    full_next = next_mark(window(), good_row(), SID, TID, 7 * hour, "r", m)
    narrowed, _ = narrow(window(), m, SID, TID, hour, 24)
    assert full_next.swept_ms == 7 * hour
    assert next_mark(narrowed, good_row(), SID, TID, 7 * hour, "r", m).swept_ms == 0


def test_stored_records_round_trip_and_unknown_ones_are_ignored():
    m = mark(swept=3)
    assert decode(m.encode()) == m and m.key == mark_key("f", "t", 0)
    for junk in (None, b"", b"[]", b"{}", b'{"kind":"watermark","flow":"f"}', b"\xff", b'{"kind":"other"}'):
        assert decode(junk) is None, junk

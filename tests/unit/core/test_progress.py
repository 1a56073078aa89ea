"""A flow's progress: where a range copy resumes, the commit metadata."""

from __future__ import annotations

import pytest

from kafka_dr.core.progress import ProgressLost, decode_metadata, encode_metadata, first_run_gap, resume_offset


@pytest.mark.parametrize("allow_reset", [False, True])
def test_committed_progress_wins_over_the_planned_start(allow_reset):
    # a replayed micro-batch planned at 100 while 150 is already committed: no duplicate
    assert resume_offset(150, 100, 0, allow_reset) == 150
    # planned past what is committed (planner ahead of a lost chunk): no gap
    assert resume_offset(80, 100, 0, allow_reset) == 80
    assert resume_offset(100, 100, 0, allow_reset) == 100
    assert resume_offset(0, 100, 0, allow_reset) == 0  # zero is progress, not "none"


@pytest.mark.parametrize("allow_reset", [False, True])
def test_committed_below_the_log_start_resumes_at_the_log_start(allow_reset):
    # retention deleted 120..199 before they were copied
    assert resume_offset(120, 120, 200, allow_reset) == 200
    assert resume_offset(120, 300, 200, allow_reset) == 200
    assert resume_offset(199, 199, 200, allow_reset) == 200
    assert resume_offset(200, 250, 200, allow_reset) == 200


def test_lost_progress_refuses():
    with pytest.raises(ProgressLost) as e:
        resume_offset(None, 500, 200, allow_reset=False)
    assert str(e.value) == (
        "no committed progress, but the run was planned to start at offset 500 (log start 200): "
        "the progress topic was deleted or truncated"
    )
    with pytest.raises(ProgressLost):
        resume_offset(None, 1, 0, allow_reset=False)


def test_lost_progress_with_reset_allowed_takes_the_plan():
    assert resume_offset(None, 500, 200, allow_reset=True) == 500
    assert resume_offset(None, 1, 0, allow_reset=True) == 1


def test_progress_lost_is_a_runtime_error():
    assert issubclass(ProgressLost, RuntimeError)


@pytest.mark.parametrize("allow_reset", [False, True])
def test_first_run(allow_reset):
    assert resume_offset(None, 0, 0, allow_reset) == 0
    assert resume_offset(None, 200, 200, allow_reset) == 200  # planned at the log start
    assert resume_offset(None, 0, 200, allow_reset) == 200  # planned before it: records already gone


def test_metadata_encoding_is_compact_json():
    assert encode_metadata("orders", 1_700_000_000_000) == '{"src":"orders","ts":1700000000000,"fmt":1}'


def test_metadata_round_trip():
    assert decode_metadata(encode_metadata("east.orders", 5)) == {"src": "east.orders", "ts": 5, "fmt": 1}


@pytest.mark.parametrize("raw", [None, "", "garbage", "{", '"a string"', "[1, 2]", "42", "null", "true"])
def test_metadata_that_is_not_ours_decodes_to_empty(raw):
    assert decode_metadata(raw) == {}


def test_first_run_without_copies_starts_at_the_log_start():
    from kafka_dr.core.progress import lost_progress_starts

    assert (
        lost_progress_starts("east_to_west", "west", {("orders", 0): None, ("orders", 1): None}, allow_reset=False)
        == {}
    )


def test_copies_without_progress_are_refused_naming_every_partition():
    from kafka_dr.core.progress import lost_progress_starts

    copies = {("orders", 0): ("orders", 41), ("orders", 1): None, ("orders", 2): ("orders", 7)}
    with pytest.raises(ProgressLost) as info:
        lost_progress_starts("east_to_west", "west", copies, allow_reset=False)
    msg = str(info.value)
    assert msg.startswith(
        "flow east_to_west: no committed progress on west for orders[0] (last copy on west/orders[0] is of offset 41), "
        "orders[2] (last copy on west/orders[2] is of offset 7)"
    )
    assert "--reset-progress" in msg and "orders[1]" not in msg


def test_reset_resumes_right_after_the_last_copy():
    from kafka_dr.core.progress import lost_progress_starts

    copies = {("orders", 0): ("east.orders", 41), ("orders", 1): None}
    assert lost_progress_starts("f", "west", copies, allow_reset=True) == {("orders", 0): 42}


def test_a_first_copy_past_the_log_start_names_the_records_it_never_saw():
    # DeleteRecords up to 4 before the flow's first run: 0..3 were never replicated
    assert first_run_gap(None, 4, 4) == (0, 3)
    assert first_run_gap(None, 1, 1) == (0, 0)
    # the log start moved again before anything was committed: only what was not reported yet
    assert first_run_gap(None, 9, 9, reported_until=4) == (4, 8)


def test_no_first_run_gap_with_progress_a_later_start_or_nothing_deleted():
    assert first_run_gap(7, 4, 7) is None  # committed progress: resume_offset's loss, if any
    assert first_run_gap(None, 0, 0) is None  # the log starts at 0: nothing was deleted
    assert first_run_gap(None, 4, 6) is None  # starts past the log start (resumed after copies found)
    assert first_run_gap(None, 4, 4, reported_until=4) is None  # reported already

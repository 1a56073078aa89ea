"""kafka_dr.core.window_tally with literal records: one window's figures from one ordered pass per side."""

from __future__ import annotations

from kafka_dr.core.dq import Origin, PartitionWindow, identity
from kafka_dr.core.window_tally import WindowTally, latest_per_key, percentile

NOW = 1_700_000_000_000


def window(**kw) -> PartitionWindow:
    base = dict(
        flow="f",
        source="east",
        target="west",
        topic="t",
        target_topic="t",
        partition=0,
        start=0,
        end=5,
        limit=5,
        target_start=0,
        target_end=100,
    )
    return PartitionWindow(**{**base, **kw})


def origin(offset: int, cluster: str = "east", first_ms: int = NOW + 10) -> Origin:
    return Origin(cluster, "t", 0, offset, first_ms)


def copy(tally: WindowTally, at: int, src_offset: int, digest: int | None = None, **kw) -> None:
    """A target record at ``at`` that is a copy of source offset ``src_offset``."""
    o = origin(src_offset, **kw)
    tally.target(at, o, identity(o, "west", "t", 0, at), 100 + src_offset if digest is None else digest, NOW)


def sourced(tally: WindowTally, offsets) -> None:
    for off in offsets:
        tally.source(off, ("east", "t", 0, off), 100 + off)


def test_a_faithful_copy_agrees_and_has_exact_latency():
    t = WindowTally(window())
    sourced(t, range(5))
    for i in range(5):
        copy(t, 10 + i, i, first_ms=NOW + 10 * (i + 1))
    r = t.row()
    assert (r["source_count"], r["target_count"], r["missing"], r["duplicated"], r["unexpected"]) == (5, 5, 0, 0, 0)
    assert r["out_of_order"] == 0 and r["source_checksum"] == r["target_checksum"] == str(sum(range(100, 105)))
    assert (r["latency_p50_ms"], r["latency_p99_ms"]) == (30.0, 50.0)
    assert r["first_in_flight"] is None and r["kind"] == "partition" and r["window_end"] == 5


def test_missing_duplicated_and_out_of_order_are_counted_per_record():
    t = WindowTally(window())
    sourced(t, range(5))
    for at, src in enumerate([0, 2, 1, 1, 4]):  # 3 missing, 1 duplicated, 2 after 2 out of order
        copy(t, at, src)
    r = t.row()
    assert (r["missing"], r["duplicated"], r["out_of_order"], r["unexpected"]) == (1, 1, 1, 0)
    assert (r["source_count"], r["target_count"]) == (5, 5)


def test_an_altered_copy_shows_in_the_checksum_only():
    t = WindowTally(window())
    sourced(t, range(2))
    copy(t, 0, 0)
    copy(t, 1, 1, digest=7)
    r = t.row()
    assert r["missing"] == r["duplicated"] == r["unexpected"] == 0
    assert r["source_checksum"] != r["target_checksum"]


def test_copies_of_records_the_flow_did_not_copy_are_unexpected_and_in_flight_ones_are_not():
    t = WindowTally(window(end=3, limit=5))
    t.source(0, ("east", "t", 0, 0), 100)
    # 1 and 2 are in the window but not eligible (the loop policy skipped them): a copy is unexpected
    copy(t, 0, 0)
    copy(t, 1, 1)
    copy(t, 2, 3)  # in flight: [end, limit)
    copy(t, 3, 4)
    copy(t, 4, 9)  # at or past limit: the flow cannot have written it
    forged = Origin("east", "t", 0, 6, None)
    t.target(5, forged, identity(forged, "west", "t", 0, 5), 1, NOW)
    local = Origin()
    t.target(6, local, ("west", "t", 0, 6), 1, NOW)  # written on the target itself: not compared
    r = t.row()
    assert (r["unexpected"], r["missing"], r["target_count"], r["first_in_flight"]) == (3, 0, 4, 2)


def test_copies_of_verified_records_are_duplicates_across_runs():
    t = WindowTally(window(start=10, end=12, limit=12, verified_end=10))
    sourced(t, [10, 11])
    copy(t, 50, 9)  # verified by an earlier run, copied again
    copy(t, 51, 10)
    copy(t, 52, 11)
    r = t.row()
    assert (r["duplicated"], r["unexpected"], r["missing"], r["target_count"]) == (1, 0, 0, 3)


def test_an_unexpected_record_resets_the_order_check():
    t = WindowTally(window())
    sourced(t, range(5))
    copy(t, 0, 3)
    copy(t, 1, 9)  # unexpected (past limit), between two copies
    copy(t, 2, 1)  # lower than 3, but the compared record right before it is not a copy
    assert t.row()["out_of_order"] == 0


def test_self_origin_and_malformed_provenance_are_counted_over_every_target_record():
    t = WindowTally(window())
    looped = Origin("west", "t", 0, 1, NOW)
    t.target(0, looped, identity(looped, "west", "t", 0, 0), 1, NOW)
    broken = Origin(cluster="?", malformed=True)
    t.target(1, broken, identity(broken, "west", "t", 0, 1), 1, NOW)
    r = t.row()
    assert (r["self_origin"], r["malformed_provenance"], r["unexpected"]) == (1, 1, 0)


def test_records_the_source_received_with_provenance_match_by_their_first_origin():
    t = WindowTally(window(source="mid"))
    first = ("east", "t", 0, 40)  # a record of east that mid copied: its identity stays east's
    t.source(0, first, 5)
    t.source(1, ("mid", "t", 0, 1), 6)
    o = Origin(*first, NOW)
    t.target(7, o, identity(o, "west", "t", 0, 7), 5, NOW)
    t.target(8, o, identity(o, "west", "t", 0, 8), 5, NOW)
    mine = Origin("mid", "t", 0, 1, NOW)
    t.target(9, mine, identity(mine, "west", "t", 0, 9), 6, NOW)
    r = t.row()
    assert (r["missing"], r["duplicated"], r["unexpected"], r["source_count"], r["target_count"]) == (0, 1, 0, 2, 3)


def test_latency_counts_only_copies_first_made_since_the_latency_window():
    t = WindowTally(window(), latency_since_ms=NOW + 25)
    sourced(t, range(3))
    copy(t, 0, 0, first_ms=NOW + 20)
    copy(t, 1, 1, first_ms=NOW + 30)
    copy(t, 2, 2, first_ms=NOW + 40)
    r = t.row()
    assert (r["latency_p50_ms"], r["latency_p99_ms"]) == (30.0, 40.0)
    assert WindowTally(window(), NOW).row()["latency_p99_ms"] is None


def test_many_copies_of_one_record_are_all_counted():
    t = WindowTally(window(end=1, limit=1))
    sourced(t, [0])
    for at in range(600):
        copy(t, at, 0)
    r = t.row()
    assert (r["duplicated"], r["missing"], r["target_count"]) == (599, 0, 600)


def test_percentile_is_exact_over_a_histogram():
    assert percentile({1: 1, 2: 1, 3: 1, 4: 1}, 0.5) == 2.0
    assert percentile({5: 99, 1000: 1}, 0.99) == 5.0
    assert percentile({5: 98, 1000: 2}, 0.99) == 1000.0
    assert percentile({}, 0.5) is None


def test_compacted_windows_compare_the_latest_record_of_each_key():
    # key -> (offset, digest, tombstone) on the source; (named offset, digest, ours) on the target
    src = {1: (10, 111, False), 2: (11, 222, False), 3: (12, 333, True), 4: (13, 444, False), 5: (14, 555, False)}
    tgt = {1: (10, 111, True), 2: (8, 99, True), 4: (13, 7, False), 5: (20, 9, True)}
    k = latest_per_key(src, tgt)
    # key 1 agrees; 2 holds an older value (missing); 3's tombstone was cleaned (held);
    # 4 was last written on the target by someone else (not judged); 5 names a newer offset (unexpected)
    assert (k["source_count"], k["target_count"], k["missing"], k["unexpected"]) == (4, 4, 1, 1)
    assert k["source_checksum"] == str(111 + 222 + 333 + 555)
    assert k["target_checksum"] == str(111 + 99 + 333 + 9)


def test_a_compacted_window_reports_per_key_figures_and_per_record_duplicates():
    t = WindowTally(window(compacted=True))
    t.source(0, ("east", "t", 0, 0), 100, key_hash=1)
    t.source(1, ("east", "t", 0, 1), 101, key_hash=1)
    t.source(2, ("east", "t", 0, 2), 102, key_hash=2, tombstone=True)
    o = origin(1)
    for at in (0, 1):  # the cleaner kept the latest value of key 1, twice (a duplicate); key 2 is gone
        t.target(at, o, identity(o, "west", "t", 0, at), 101, NOW, key_hash=1)
    r = t.row()
    assert (r["source_count"], r["target_count"], r["missing"], r["unexpected"], r["duplicated"]) == (2, 2, 0, 0, 1)
    assert r["source_checksum"] == r["target_checksum"] == str(101 + 102)

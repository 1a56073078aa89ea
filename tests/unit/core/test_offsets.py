"""Offset translation decisions with literal offsets (kafka_dr.core.offsets).

A target partition is written as a list of (target offset, origin offset | None): ``None`` is
a record produced locally on the target or from another origin. ``first_from`` over that list
is what the adapter's seek-and-read does on a real partition.
"""

from __future__ import annotations

import pytest

from kafka_dr.core.offsets import (
    APPROXIMATE,
    EXACT,
    UNTRANSLATABLE,
    Hit,
    SyncedPosition,
    Translation,
    commit_decision,
    default_group_deny,
    group_selected,
    is_sync_commit,
    latest_synced,
    latest_synced_positions,
    search,
    sync_commit_metadata,
    sync_key,
    sync_value,
    synced_positions_by_group,
    translate_by_timestamp,
    translate_from_candidates,
)


def partition(rows):
    """``first_from`` over literal rows, counting reads."""
    reads = []

    def first_from(m):
        for t, o in rows:
            if t >= m:
                reads.append(t)
                if o is not None:
                    return Hit(t, o)
        return None

    return first_from, reads


def translate(rows, x, progress, target_range=None, source_range=None, behind_copied=None):
    offs = [t for t, _ in rows]
    tr = target_range or ((offs[0] if offs else 0), (offs[-1] + 1 if offs else 0))
    first_from, _ = partition(rows)
    found, earlier, _ = search(first_from, tr[0], tr[1], x)
    return translate_from_candidates(
        group="g",
        topic="t",
        partition=0,
        source_offset=x,
        target_topic="t",
        target_range=tr,
        progress=progress,
        found=found,
        earlier=earlier,
        source_range=source_range,
        origin="east",
        behind_copied=behind_copied,
    )


def brute(rows, x):
    """The answer by definition: the first record of the origin with origin offset >= x."""
    return next((t for t, o in rows if o is not None and o >= x), None)


# local records interleaved: L at 0, 3, 4, 7; replicated origin offsets 0..4 at 1, 2, 5, 6, 8
INTERLEAVED = [(0, None), (1, 0), (2, 1), (3, None), (4, None), (5, 2), (6, 3), (7, None), (8, 4)]


@pytest.mark.parametrize("x,expected", [(0, 1), (1, 2), (2, 5), (3, 6), (4, 8)])
def test_interleaved_local_records(x, expected):
    r = translate(INTERLEAVED, x, progress=5)
    assert (r.status, r.target_offset, r.behind_records) == (EXACT, expected, 0)
    assert brute(INTERLEAVED, x) == expected


def test_caught_up_x_at_the_end_is_the_target_end():
    r = translate(INTERLEAVED, 5, progress=5, source_range=(0, 5))
    assert (r.status, r.target_offset) == (EXACT, 9)


def test_x_zero_with_local_records_first():
    r = translate([(0, None), (1, None), (2, 0), (3, 1)], 0, progress=2)
    assert (r.status, r.target_offset) == (EXACT, 2)


def test_compaction_gaps_on_source_and_target():
    # source compacted: origin offsets 10, 13, 20 survive; target compacted: target offsets gap too
    rows = [(0, 10), (4, 13), (9, None), (11, 20)]
    assert translate(rows, 11, progress=21).target_offset == 4  # 11, 12 compacted away on source
    assert translate(rows, 14, progress=21).target_offset == 11
    r = translate(rows, 13, progress=21)
    assert (r.status, r.target_offset) == (EXACT, 4)
    assert translate(rows, 21, progress=21).target_offset == 12  # end


def test_retention_truncated_source_still_exact_when_target_kept_it():
    # source log start is 50 now; the group's 30 was deleted there, but the target still holds 30..
    rows = [(0, 28), (1, 29), (2, 30), (3, 31)]
    r = translate(rows, 30, progress=60, source_range=(50, 60))
    assert (r.status, r.target_offset) == (EXACT, 2)


def test_retention_truncated_source_never_copied_gap():
    # source lost 30..39 before the flow copied them; target (never truncated) starts at origin 40
    rows = [(0, 40), (1, 41)]
    r = translate(rows, 30, progress=42, source_range=(40, 42))
    assert (r.status, r.target_offset) == (EXACT, 0)


def test_target_retention_truncated_is_untranslatable():
    # target log start 100: what it held of origin offsets < 57 is gone, so 50..56 may have been there
    rows = [(100, 57), (101, 58)]
    r = translate(rows, 50, progress=59)
    assert r.status == UNTRANSLATABLE and r.target_offset is None and "retention" in r.reason
    # but an exact hit at the start is fine, and so is a proof from below X
    assert translate(rows, 57, progress=59).target_offset == 100
    assert translate([(100, 49), (101, 57)], 50, progress=59).status == EXACT


def test_replica_behind_says_how_far():
    rows = [(0, 0), (1, 1), (2, None), (3, 2)]
    r = translate(rows, 10, progress=3, source_range=(0, 20))
    assert (r.status, r.target_offset, r.behind_records) == (APPROXIMATE, 4, 7)
    assert "3..9" in r.reason
    r = translate(rows, 3, progress=3, source_range=(0, 20))
    assert (r.status, r.target_offset, r.behind_records) == (EXACT, 4, 0)


def test_offsets_behind_that_hold_no_record_the_flow_copies_are_not_behind():
    rows = [(0, 0), (1, 1), (2, None), (3, 2)]
    # a group at the source end 4; offset 3 is the commit marker of the reverse flow's transaction
    r = translate(rows, 4, progress=3, source_range=(0, 4), behind_copied=0)
    assert (r.status, r.target_offset, r.behind_records) == (EXACT, 4, 0)
    assert "3..3 hold no record the flow copies" in r.reason
    # 10..19: three records the flow copies, the rest markers and filtered copies
    r = translate(rows, 20, progress=10, source_range=(0, 20), behind_copied=3)
    assert (r.status, r.target_offset, r.behind_records) == (APPROXIMATE, 4, 3)
    # the source cannot be read: at most the offsets
    r = translate(rows, 4, progress=3, source_range=None, behind_copied=None)
    assert (r.status, r.target_offset, r.behind_records) == (APPROXIMATE, 4, 1) and "at most 1" in r.reason


def test_beyond_the_source_end_is_untranslatable():
    r = translate(INTERLEAVED, 99, progress=5, source_range=(0, 5))
    assert r.status == UNTRANSLATABLE and "beyond" in r.reason and r.target_offset is None


def test_empty_partitions():
    r = translate([], 0, progress=None, target_range=(0, 0), source_range=(0, 0))
    assert (r.status, r.target_offset) == (EXACT, 0)
    r = translate([], 0, progress=None, target_range=(0, 0), source_range=None)
    assert r.status == UNTRANSLATABLE
    r = translate([(0, None), (1, None)], 0, progress=0, source_range=(0, 0))
    assert (r.status, r.target_offset) == (EXACT, 2)


def test_no_progress_and_no_record_is_untranslatable():
    r = translate([(0, None)], 5, progress=None, source_range=(0, 10))
    assert r.status == UNTRANSLATABLE and "no progress" in r.reason


def test_copied_but_none_left_on_target():
    # 5..9 copied but all filtered or compacted: resume at the end; a truncated target cannot say
    assert translate([(0, 4), (1, None)], 5, progress=10).target_offset == 2
    assert translate([(7, None)], 5, progress=10, target_range=(7, 8)).status == UNTRANSLATABLE


def test_progress_and_data_disagree():
    assert translate([(0, 5)], 3, progress=5).status == UNTRANSLATABLE


def test_binary_search_reads_few_records_and_matches_brute_force():
    rows, o = [], 0
    for t in range(100_000):
        if t % 7 == 3:
            rows.append((t, None))
        else:
            rows.append((t, o))
            o += 2  # origin offsets with compaction gaps
    index = {t: i for i, (t, _) in enumerate(rows)}

    def fast_first_from(m):
        i = index.get(m, len(rows))
        while i < len(rows):
            fast_first_from.reads += 1
            t, oo = rows[i]
            if oo is not None:
                return Hit(t, oo)
            i += 1
        return None

    for x in (0, 1, 2, 12_345, 171_427, o - 1, o):
        fast_first_from.reads = 0
        found, earlier, probes = search(fast_first_from, 0, len(rows), x)
        assert (found.target_offset if found else None) == brute(rows, x), x
        assert probes <= 18 and fast_first_from.reads <= 40


def test_timestamp_fallback_is_approximate_with_margin():
    r = translate_by_timestamp(
        group="g",
        topic="t",
        partition=0,
        source_offset=7,
        target_topic="t",
        target_end=50,
        source_ts_ms=1_000_000,
        margin_seconds=60,
        offset_for_ts=12,
    )
    assert (r.status, r.target_offset) == (APPROXIMATE, 12)
    assert "940000" in r.reason and "approximate" in r.reason
    r = translate_by_timestamp(
        group="g",
        topic="t",
        partition=0,
        source_offset=7,
        target_topic="t",
        target_end=50,
        source_ts_ms=1_000_000,
        margin_seconds=60,
        offset_for_ts=-1,
    )
    assert r.target_offset == 50
    r = translate_by_timestamp(
        group="g",
        topic="t",
        partition=0,
        source_offset=7,
        target_topic="t",
        target_end=50,
        source_ts_ms=None,
        margin_seconds=60,
        offset_for_ts=None,
    )
    assert r.status == UNTRANSLATABLE and r.target_offset is None


def test_translation_round_trip():
    t = Translation("g", "t", 1, 5, "east.t", 9, EXACT, "why", 0)
    assert Translation.from_dict(t.to_dict()) == t


def test_group_selection_defaults():
    deny = default_group_deny("_kafka_dr")
    assert group_selected("orders-app", (".*",), deny)
    assert not group_selected("_kafka_dr.progress.e2w", (".*",), deny)
    assert not group_selected("_confluent-x", (".*",), deny)
    assert not group_selected("orders-app", ("billing.*",), deny)


def test_configured_groups_keep_the_built_in_exclusions():
    from kafka_dr.core.offsets import configured_groups

    allow, deny = configured_groups(("orders-.*", "_kafka_dr.x"), ("orders-test-.*",), "_kafka_dr")
    assert group_selected("orders-app", allow, deny)
    assert not group_selected("orders-test-1", allow, deny)  # deny wins
    assert not group_selected("billing", allow, deny)  # not allowed
    assert not group_selected("_kafka_dr.x", allow, deny)  # the product's own, even when allowed


def test_commit_decision_never_backwards_and_only_inactive():
    t = Translation("g", "t", 0, 5, "t", 9, EXACT, "")
    assert commit_decision(t, None, "EMPTY") == (True, "committed")
    assert commit_decision(t, 3, "NOT_FOUND")[0]
    assert not commit_decision(t, 9, "EMPTY")[0]
    assert not commit_decision(t, 12, "DEAD")[0]
    assert not commit_decision(t, None, "STABLE")[0]
    assert not commit_decision(t, None, "PREPARING_REBALANCE")[0]
    assert not commit_decision(Translation("g", "t", 0, 5, "t", None, UNTRANSLATABLE, "x"), None, "EMPTY")[0]


def test_offset_sync_records_last_wins():
    t = Translation("g", "t", 0, 5, "t", 9, EXACT, "")
    recs = [
        (sync_key("f", "g", "t", 0), sync_value(t, True, 1)),
        (sync_key("f", "g", "t", 0), sync_value(Translation("g", "t", 0, 8, "t", 12, EXACT, ""), True, 2)),
        (sync_key("f", "g", "t", 1), sync_value(t, False, 1)),
        (sync_key("f", "other", "t", 0), sync_value(t, True, 1)),
        (sync_key("f2", "g", "t", 0), sync_value(t, True, 1)),
        (sync_key("f", "g", "t", 1), None),
        (b"not json", b"{}"),
    ]
    assert latest_synced(recs, "f", "g") == {("t", 0): 8}


def test_sync_records_keep_the_offset_in_records_and_the_targets_records_read():
    t = Translation("g", "t", 0, 41, "t", 30, EXACT, "", effective_offset=40, local_read_below=17)
    recs = [
        (sync_key("f", "g", "t", 0), sync_value(t, True, 1_700_000_000_000)),
        (sync_key("f", "g", "t", 1), b'{"source_offset":9,"target_offset":3,"status":"exact","committed":true}'),
        (b'{"tail":["f","t",0]}', b'{"copied_up_to":1,"end":2,"records":0}'),
    ]
    assert latest_synced_positions(recs, "f", "g") == {
        ("t", 0): SyncedPosition(41, 40, 17, synced_at_ms=1_700_000_000_000),
        ("t", 1): SyncedPosition(9),  # a record without the time
    }
    assert Translation.from_dict(t.to_dict()) == t


def test_one_pass_gives_every_groups_positions_as_each_alone_would():
    t = Translation("g", "t", 0, 41, "t", 30, EXACT, "")
    recs = [
        (sync_key("f", "g", "t", 0), sync_value(t, True, 1)),
        (sync_key("f", "h", "t", 0), sync_value(t, True, 2)),
        (sync_key("f", "gone", "t", 0), sync_value(t, True, 3)),
        (sync_key("f", "gone", "t", 0), None),
        (sync_key("other-flow", "x", "t", 0), sync_value(t, True, 4)),
        (b"not json", b"{}"),
    ]
    by_group = synced_positions_by_group(recs, "f")
    assert sorted(by_group) == ["g", "gone", "h"] and by_group["gone"] == {}
    for group, positions in by_group.items():
        assert positions == latest_synced_positions(recs, "f", group)


def test_sync_commits_are_marked_and_not_synced_back():
    assert is_sync_commit(sync_commit_metadata("east_to_west", 7))
    assert not is_sync_commit("") and not is_sync_commit(None) and not is_sync_commit("app-metadata")
    assert not is_sync_commit('{"src":"orders","ts":1}')  # the flow's progress metadata is not a sync

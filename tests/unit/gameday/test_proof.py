"""The game day's proof over literal values: each check failing and passing."""

from __future__ import annotations

import pytest

from kafka_dr.gameday.model import ABORTED, ACKED, UNCERTAIN, LedgerView, Move, Produced, Read, Stored
from kafka_dr.gameday.proof import (
    Check,
    flowing_again,
    group_reads,
    order,
    presence,
    rpo_observed,
)
from kafka_dr.gameday.rereads import (
    compare_rereads,
    consumption_before,
    reported_rereads,
    reported_since_sync,
    reported_since_sync_by_origin,
)

K, S, C, T = "gd.keyed", "gd.second", "gd.compacted", "gd.txn"


def rec(app, topic, seq, fate=ACKED, cluster=None, partition=0, offset=None, key=None, at=100.0, acked_at=None):
    key = key or f"{app}-k{seq % 2}"
    acked = (acked_at if acked_at is not None else at + 0.01) if fate == ACKED else None
    return Produced(f"{app}:{topic}:{seq}", app, topic, key, seq, cluster or app, fate, at, acked, partition, offset)


def ledger(*records: Produced) -> LedgerView:
    by = {ACKED: {}, ABORTED: {}, UNCERTAIN: {}}
    for p in records:
        by[p.fate][p.gd_id] = p
    return LedgerView(by[ACKED], by[ABORTED], by[UNCERTAIN])


def stored(here: str, *records: Produced, origin: str | None = None) -> list[Stored]:
    """``records`` as cluster ``here`` holds them, in the order given (offsets 0, 1, ...)."""
    return [
        Stored(p.gd_id, here, p.topic, p.partition or 0, i, p.key, origin or p.cluster) for i, p in enumerate(records)
    ]


def read(p: Produced, group: str, cluster: str, at: float, origin: str | None = None) -> Read:
    return Read(p.gd_id, group, cluster, p.topic, p.partition or 0, 0, at, origin or p.cluster)


# --- presence ---------------------------------------------------------------------------------

E0, E1, E2 = rec("east", K, 0), rec("east", K, 1), rec("east", K, 2)
AB = rec("east", T, 0, fate=ABORTED)
UN = rec("east", K, 3, fate=UNCERTAIN)


def test_presence_passes_with_every_acked_record_once_and_no_aborted_one():
    c = presence("east", stored("east", E0, E1, E2, UN), ledger(E0, E1, E2, AB, UN))
    assert c.ok, c.line()
    assert c.counts["lost"] == 0 and c.counts["duplicated"] == 0 and c.counts["uncertain_present"] == 1


def test_presence_an_uncertain_record_may_be_absent():
    assert presence("east", stored("east", E0, E1, E2), ledger(E0, E1, E2, UN)).ok


def test_presence_counts_a_lost_record_and_names_it():
    c = presence("east", stored("east", E0, E2), ledger(E0, E1, E2))
    assert not c.ok
    assert c.counts["lost"] == 1 and c.examples["lost"] == ("east:gd.keyed:1",)
    assert "lost 1" in c.line() and "FAILED" in c.line()


@pytest.mark.parametrize("twice", [E1, UN], ids=["acked", "uncertain"])
def test_presence_counts_every_extra_copy_as_a_duplicate(twice):
    c = presence("east", stored("east", E0, E1, E2, UN, twice), ledger(E0, E1, E2, UN))
    assert not c.ok and c.counts["duplicated"] == 1 and c.examples["duplicated"] == (twice.gd_id,)


def test_presence_fails_on_an_aborted_record():
    c = presence("east", stored("east", E0, E1, E2, AB), ledger(E0, E1, E2, AB))
    assert not c.ok and c.counts["aborted_present"] == 1


def test_presence_fails_on_a_record_the_ledger_never_produced():
    stray = rec("north", K, 0)
    c = presence("east", stored("east", E0, E1, E2, stray), ledger(E0, E1, E2))
    assert not c.ok and c.examples["unknown"] == ("north:gd.keyed:0",)


def test_presence_expects_only_what_the_caller_selects():
    w0 = rec("west", K, 0)
    everything = ledger(E0, E1, E2, w0)
    assert not presence("east", stored("east", E0, E1, E2), everything).ok
    assert presence("east", stored("east", E0, E1, E2), everything, expect=lambda p: p.cluster == "east").ok


C0, C1, C2 = (rec("east", C, i, key="east-c0") for i in range(3))


def test_presence_on_a_compacted_topic_needs_only_the_latest_value_per_key():
    assert presence("east", stored("east", C2), ledger(C0, C1, C2), compacted={C}).ok
    assert presence("east", stored("east", C0, C1, C2), ledger(C0, C1, C2), compacted={C}).ok


def test_presence_on_a_compacted_topic_fails_without_the_latest_value():
    c = presence("east", stored("east", C0, C1), ledger(C0, C1, C2), compacted={C})
    assert not c.ok and c.examples["lost"] == ("east:gd.compacted:2",)


def test_presence_on_a_compacted_topic_a_later_uncertain_value_may_supersede_the_latest():
    c3 = rec("east", C, 3, fate=UNCERTAIN, key="east-c0")
    assert presence("east", stored("east", c3), ledger(C0, C1, C2, c3), compacted={C}).ok


def test_presence_on_a_compacted_topic_still_counts_duplicates():
    c = presence("east", stored("east", C2, C2), ledger(C0, C1, C2), compacted={C})
    assert not c.ok and c.counts["duplicated"] == 1


# --- order ------------------------------------------------------------------------------------


def test_order_passes_when_each_key_and_origin_increase():
    # on west: copies of east's records (origin east) interleaved with west's own records of another key
    e = [rec("east", K, i, key="east-k0") for i in range(3)]
    w = [rec("west", K, i, key="west-k0") for i in range(2)]
    c = order("west", stored("west", e[0], w[0], e[1], w[1], e[2]))
    assert c.ok and c.counts == {"checked": 5, "out_of_order": 0}


def test_order_fails_when_a_key_goes_back_within_one_origin():
    a, b = rec("east", K, 4, key="east-k0"), rec("east", K, 2, key="east-k0")
    c = order("east", stored("east", a, b))
    assert not c.ok and c.examples["out_of_order"] == ("east:gd.keyed:2 after east:gd.keyed:4 in gd.keyed[0]",)


def test_order_the_same_key_from_two_origins_is_two_sequences():
    # app east wrote seq 5 to west after a failover; its seq 1 written on east arrived on west later
    held = [
        Stored("east:gd.keyed:5", "west", K, 0, 0, "east-k0", "west"),
        Stored("east:gd.keyed:1", "west", K, 0, 1, "east-k0", "east"),
    ]
    assert order("west", held).ok


def test_order_is_per_partition_and_follows_offsets_not_list_order():
    a, b = rec("east", K, 1), rec("east", K, 2)
    held = [Stored(b.gd_id, "east", K, 0, 9, b.key, "east"), Stored(a.gd_id, "east", K, 0, 3, a.key, "east")]
    assert order("east", held).ok
    other_partition = [Stored(b.gd_id, "east", K, 0, 0, b.key, "east"), Stored(a.gd_id, "east", K, 1, 1, a.key, "east")]
    assert order("east", other_partition).ok


# --- consumer groups --------------------------------------------------------------------------

G = "gd-app-east"
W0, W1 = rec("west", K, 0), rec("west", K, 1)
MOVES = [Move(G, "east", "west", 149.0, 150.0, 151.0), Move(G, "west", "east", 199.0, 200.0, 201.0)]


def test_group_reads_pass_when_every_expected_record_was_read():
    reads = [read(E0, G, "east", 110), read(E1, G, "east", 120), read(E2, G, "east", 130)]
    c = group_reads(G, reads, ledger(E0, E1, E2, AB))
    assert c.ok and c.counts["skipped"] == 0 and c.counts["rereads"] == 0 and c.counts["read"] == 3


def test_group_reads_count_a_skipped_record():
    c = group_reads(G, [read(E0, G, "east", 110), read(E2, G, "east", 130)], ledger(E0, E1, E2))
    assert not c.ok and c.counts["skipped"] == 1 and c.examples["skipped"] == ("east:gd.keyed:1",)


def test_group_reads_only_their_own_group():
    other = [read(E1, "gd-app-west", "west", 120, origin="east")]
    c = group_reads(G, [read(E0, G, "east", 110), *other], ledger(E0, E1))
    assert c.counts["skipped"] == 1


def test_group_reads_fail_on_a_delivered_aborted_record():
    c = group_reads(G, [read(E0, G, "east", 110), read(AB, G, "east", 111)], ledger(E0, AB))
    assert not c.ok and c.counts["aborted_delivered"] == 1


def test_group_reads_leave_compacted_and_unsubscribed_topics_out_of_skips():
    s0 = rec("east", S, 0)
    c = group_reads(G, [read(E0, G, "east", 110)], ledger(E0, C0, s0), compacted={C}, topics={K, C})
    assert c.ok and c.counts["expected"] == 1


def test_group_reads_split_rereads_by_move_and_origin():
    reads = [
        read(E0, G, "east", 110),
        read(E1, G, "east", 120),
        read(E1, G, "east", 125),  # read again before any move (a rebalance)
        read(E1, G, "west", 160, origin="east"),  # after the failover: a copy of east's record
        read(W0, G, "west", 161),
        read(W0, G, "east", 210, origin="west"),  # after the failback
        read(W1, G, "east", 211, origin="west"),
        read(E0, G, "east", 212),
    ]
    c = group_reads(G, reads, ledger(E0, E1, W0, W1), MOVES)
    assert c.ok and c.counts["rereads"] == 4
    by_move = c.details["rereads_by_move"]
    assert [m["move"] for m in by_move] == [None, "east->west", "west->east"]
    assert [m["rereads"] for m in by_move] == [1, 1, 2]
    assert by_move[1]["by_origin"] == {"east": 1}
    assert by_move[2]["by_origin"] == {"west": 1, "east": 1}


def test_reported_rereads_sum_a_groups_partitions_and_keep_unknown():
    entries = [
        {"group": G, "topic": K, "partition": 0, "reread": {"east": 2, "west": 1}},
        {"group": G, "topic": K, "partition": 1, "reread": {"east": 3, "west": None}},
        {"group": "other", "topic": K, "partition": 0, "reread": {"east": 50}},
        {"group": G, "topic": S, "partition": 0},
    ]
    assert reported_rereads(G, entries) == {"east": 5, "west": None}


def test_compare_rereads_passes_at_or_above_the_report_and_fails_below():
    assert compare_rereads("failover", {"east": 7, "west": 1}, {"east": 5, "west": None}).ok
    c = compare_rereads("failover", {"east": 3}, {"east": 5})
    assert not c.ok and c.counts["below_reported"] == 2
    assert c.details["by_origin"] == {"east": {"observed": 3, "reported": 5, "since_sync_at_most": None}}


def test_a_compacted_topics_reported_rereads_are_at_most_what_the_group_reads_again():
    entries = [
        {"group": G, "topic": K, "partition": 0, "reread": {"east": 5}},
        {"group": G, "topic": "gd.compacted", "partition": 0, "reread": {"east": 72}},
    ]
    reported = reported_rereads(G, entries)
    at_most = reported_rereads(G, entries, topics={"gd.compacted"})
    assert (reported, at_most) == ({"east": 77}, {"east": 72})
    # the cleaner took every counted record of the compacted topic before the group came back
    assert compare_rereads("failover", {"east": 5}, reported, at_most=at_most).ok
    c = compare_rereads("failover", {"east": 4}, reported, at_most=at_most)
    assert not c.ok and c.counts["below_reported"] == 1


def test_compare_rereads_fails_beyond_the_report_plus_one_sync_intervals_worth():
    assert compare_rereads("failover", {"east": 9}, {"east": 5}, since_sync=4).ok
    c = compare_rereads("failover", {"east": 10, "west": 2}, {"east": 5, "west": None}, since_sync=4)
    assert not c.ok and c.counts["beyond_bound"] == 3 and c.counts["sync_window_worth"] == 4


def test_the_sync_intervals_own_worth_is_reported_beside_the_bound_not_held_to():
    c = compare_rereads("failover", {"east": 9}, {"east": 5}, since_sync=4, interval_worth=1)
    assert c.ok and c.counts["sync_interval_worth"] == 1 and c.counts["sync_window_worth"] == 4


def test_a_move_from_a_dead_cluster_is_held_to_the_bound_its_own_report_gives():
    entries = [
        {"group": G, "topic": K, "partition": 0, "reread_since_sync_at_most": 30},
        {"group": G, "topic": K, "partition": 1, "reread_since_sync_at_most": 10},
        {"group": "other", "topic": K, "partition": 0, "reread_since_sync_at_most": 500},
    ]
    bound = reported_since_sync(G, entries)
    assert bound == 40
    assert compare_rereads("failover", {"east": 45}, {"east": 5}, reported_since_sync=bound).ok
    c = compare_rereads("failover", {"east": 46}, {"east": 5}, reported_since_sync=bound)
    assert not c.ok and c.counts["beyond_reported_bound"] == 1 and c.counts["reported_since_sync_at_most"] == 40
    # one partition without a bound (its flow recorded no progress): the move bounds nothing
    assert reported_since_sync(G, [*entries, {"group": G, "topic": S, "partition": 0}]) is None
    assert reported_since_sync(G, []) is None


def test_and_to_its_bound_of_each_origin():
    entries = [
        {"group": G, "topic": K, "partition": 0, "reread_since_sync_at_most_by_origin": {"east": 20, "west": 3}},
        {"group": G, "topic": K, "partition": 1, "reread_since_sync_at_most_by_origin": {"east": 10, "west": 4}},
        {"group": "other", "topic": K, "partition": 0, "reread_since_sync_at_most_by_origin": {"west": 500}},
    ]
    bounds = reported_since_sync_by_origin(G, entries)
    assert bounds == {"east": 30, "west": 7}
    reported = {"east": 5, "west": 0}
    assert compare_rereads("failover", {"east": 35, "west": 7}, reported, reported_since_sync_by_origin=bounds).ok
    # within the total bound (37 + 5 <= 42), but west read again one more of its own than its bound
    c = compare_rereads(
        "failover", {"east": 29, "west": 8}, reported, reported_since_sync=37, reported_since_sync_by_origin=bounds
    )
    assert not c.ok and c.counts["beyond_reported_origin_bound"] == 1 and c.counts["beyond_reported_bound"] == 0
    assert c.details["by_origin"]["west"] == {"observed": 8, "reported": 0, "since_sync_at_most": 7}
    # a row that bounds nothing of an origin: that origin is not held to a bound
    assert reported_since_sync_by_origin(
        G, [*entries, {"group": G, "reread_since_sync_at_most_by_origin": {"west": None}}]
    ) == {"east": 30}


def test_consumption_before_counts_first_reads_in_the_window_up_to_the_last_read_on_the_cluster_left():
    reads = [
        read(E0, G, "east", 100),
        read(E1, G, "east", 104),
        read(W0, G, "east", 106),
        read(E1, G, "east", 107),  # read again: not consumption
        read(W1, G, "west", 130),  # on the next cluster, after the move
    ]
    # the last read on east before the move at 120 was at 107: its window of 5 s holds E1 and W0
    assert consumption_before(reads, G, "east", until=120, window_s=5) == 2
    assert consumption_before(reads, G, "east", until=120, window_s=60) == 3
    assert consumption_before(reads, G, "west", until=120, window_s=5) == 0


# --- timings and RPO --------------------------------------------------------------------------


def test_flowing_again_is_the_first_arrival_of_a_record_produced_after_the_fault():
    before, after1, after2 = rec("east", K, 0, at=99.0), rec("east", K, 1, at=101.0), rec("east", K, 2, at=102.0)
    reads = [
        read(before, "gd-app-west", "west", 103.0, origin="east"),  # produced before the fault: not counted
        read(after2, "gd-app-west", "west", 104.0, origin="east"),
        read(after1, "gd-app-west", "west", 105.0, origin="east"),
        read(after1, G, "east", 101.5),  # on the source itself
    ]
    ft = flowing_again(100.0, "east", "west", ledger(before, after1, after2), reads)
    assert ft is not None and ft.seconds == pytest.approx(4.0) and ft.gd_id == after2.gd_id


def test_flowing_again_is_none_while_nothing_arrived():
    after = rec("east", K, 1, at=101.0)
    assert flowing_again(100.0, "east", "west", ledger(after), [read(after, G, "east", 101.5)]) is None


def test_flowing_again_can_follow_one_app():
    moved = rec("east", K, 9, cluster="west", at=101.0)  # app east writing to west after a failover
    reads = [read(moved, "gd-app-east", "east", 107.0, origin="west")]
    lv = ledger(moved)
    assert flowing_again(100.0, "west", "east", lv, reads, app="east").seconds == pytest.approx(7.0)
    assert flowing_again(100.0, "west", "east", lv, reads, app="west") is None


def test_rpo_observed_counts_acked_records_the_survivor_lacks():
    a = rec("east", K, 0, partition=1, acked_at=90.0)
    b = rec("east", K, 1, partition=1, acked_at=95.0)
    c = rec("east", K, 2, partition=2, acked_at=98.0)
    late = rec("east", K, 3, acked_at=130.0)  # acknowledged after the failover moment
    comp = rec("east", C, 0, acked_at=97.0)
    check = rpo_observed("east", "west", stored("west", a, origin="east"), ledger(a, b, c, late, comp), 120.0, {C})
    assert check.ok  # an observation, not a pass/fail
    assert check.counts == {"acked": 3, "missing": 2, "rpo_seconds": 3}
    assert check.details["missing_by_partition"] == {"gd.keyed[1]": 1, "gd.keyed[2]": 1}


def test_rpo_observed_is_zero_when_the_survivor_has_everything():
    check = rpo_observed("east", "west", stored("west", E0, E1), ledger(E0, E1), 200.0)
    assert check.counts["missing"] == 0 and check.counts["rpo_seconds"] == 0


def test_check_line_and_dict():
    c = Check("east presence", {"lost": 0, "duplicated": 2}, ("lost", "duplicated"), {"duplicated": ("a", "b")})
    assert c.line() == "east presence: lost 0, duplicated 2 -> FAILED; duplicated e.g. a, b"
    assert c.to_dict() == {
        "name": "east presence",
        "ok": False,
        "counts": {"lost": 0, "duplicated": 2},
        "examples": {"duplicated": ["a", "b"]},
        "details": {},
    }

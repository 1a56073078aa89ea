"""Failover decisions without clusters: RPO figures and the product state."""

from kafka_dr.core.dr_state import DrState, newest
from kafka_dr.core.failover import (
    APPROXIMATE,
    EXACT,
    SourceTail,
    last_known_ends,
    latest_tails,
    rereads_since_sync_at_most,
    rpo_entry,
    rpo_seconds,
    selected_partitions,
    tail_key,
    tail_value,
)


def test_last_known_end_is_range_end_plus_lag_per_partition():
    rows = [
        {"flow": "e2w", "topic": "orders", "partition": 0, "end": 100, "lag": 5},
        {"flow": "e2w", "topic": "orders", "partition": 0, "end": 120, "lag": 0},
        {"flow": "e2w", "topic": "orders", "partition": 1, "end": 40, "lag": 10},
        {"flow": "w2e", "topic": "orders", "partition": 0, "end": 999, "lag": 0},
        {"flow": "e2w", "cluster": "heartbeat-row"},
    ]
    assert last_known_ends(rows, "e2w") == {("orders", 0): 120, ("orders", 1): 50}


def fig(e):
    return e.status, e.missing_at_least, e.unaccounted_offsets, e.last_known_source_end


def test_rpo_counted_on_the_source_is_exact():
    # 120..124 are the reverse flow's commit marker and copies the loop policy filters: none is missing
    assert fig(rpo_entry("f", "t", 0, copied_up_to=120, last_known_end=125, counted=0)) == (EXACT, 0, 0, 125)
    assert fig(rpo_entry("f", "t", 1, copied_up_to=40, last_known_end=60, counted=12)) == (EXACT, 12, 0, 60)


def test_rpo_without_the_source_is_a_lower_bound_from_the_last_count():
    # no count recorded: offsets past the copy position are not records as far as anyone knows
    assert fig(rpo_entry("f", "t", 0, copied_up_to=120, last_known_end=121)) == (APPROXIMATE, 0, 1, 121)
    assert fig(rpo_entry("f", "t", 1, copied_up_to=None, last_known_end=7)) == (APPROXIMATE, 0, 7, 7)
    assert rpo_entry("f", "t", 2, copied_up_to=None, last_known_end=None).missing_at_least is None
    # the offset sync counted 0 records in 120..120 (a marker) and the job saw the same end
    tail = SourceTail(copied_up_to=120, end=121, records=0)
    assert fig(rpo_entry("f", "t", 3, copied_up_to=120, last_known_end=121, tail=tail)) == (APPROXIMATE, 0, 0, 121)
    # 25 records in 35..59 at the count; nothing copied since; the job later saw the end at 70
    tail = SourceTail(copied_up_to=35, end=60, records=25)
    assert fig(rpo_entry("f", "t", 4, copied_up_to=35, last_known_end=70, tail=tail)) == (APPROXIMATE, 25, 10, 70)
    # 10 offsets copied since the count: at least 15 of the 25 remain
    assert fig(rpo_entry("f", "t", 5, copied_up_to=45, last_known_end=60, tail=tail)) == (APPROXIMATE, 15, 0, 60)
    # copied past the counted end
    assert fig(rpo_entry("f", "t", 6, copied_up_to=62, last_known_end=64, tail=tail)) == (APPROXIMATE, 0, 2, 64)
    assert rpo_seconds(10_000, 4_000) == 6.0 and rpo_seconds(10_000, None) is None


def test_tails_and_the_current_selection():
    recs = [
        (tail_key("e2w", "orders", 0), tail_value(SourceTail(3, 9, 2, 1))),
        (tail_key("e2w", "orders", 0), tail_value(SourceTail(9, 10, 0, 2))),
        (tail_key("w2e", "orders", 1), tail_value(SourceTail(1, 2, 1, 1))),
        (b'["e2w","g","orders",0]', b'{"source_offset":4}'),
        (b"junk", b"{}"),
    ]
    assert latest_tails(recs, "e2w") == {("orders", 0): SourceTail(9, 10, 0, 2)}
    keys = {("orders", 0), ("old.topic", 0), ("orders", 1)}
    assert selected_partitions(keys, lambda t: t == "orders") == [("orders", 0), ("orders", 1)]


def test_state_round_trip_and_failover_transition():
    s = DrState(version=3, active_cluster="east", schema_primary="east", failed_clusters=())
    assert DrState.decode(s.encode()) == s
    assert DrState.decode(b"garbage") is None
    after = s.after_failover("east", "west", {"kind": "failover"})
    assert (after.version, after.active_cluster, after.schema_primary, after.failed_clusters) == (
        4,
        "west",
        "west",
        ("east",),
    )
    assert after.flow_stopped("east") and not after.flow_stopped("west")
    assert (after.stopping("east", "west"), after.stopping("west", "east"), after.stopping("west", "north")) == (
        "east",
        "east",
        None,
    )
    # failing over to a cluster that was marked failed clears it
    back = after.after_failover("west", "east", {})
    assert back.failed_clusters == ("west",) and back.active_cluster == "east"


def test_newest_state_wins():
    assert (
        newest([None, DrState(version=2, active_cluster="a"), DrState(version=5, active_cluster="b")]).active_cluster
        == "b"
    )
    assert newest([None, None]) == DrState()


def test_a_group_moved_from_a_dead_cluster_reads_again_at_most_what_was_copied_after_its_synced_position():
    assert rereads_since_sync_at_most(100, 130) == 30
    assert rereads_since_sync_at_most(100, 100) == 0
    assert rereads_since_sync_at_most(100, 90) == 0  # the copy was behind the group: nothing read twice
    assert rereads_since_sync_at_most(100, None) is None  # no progress recorded: no bound

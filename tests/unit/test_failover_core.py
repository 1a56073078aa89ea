"""Failover decisions without clusters: RPO figures and the product state."""

from kafka_dr.core.dr_state import DrState, newest
from kafka_dr.core.failover import last_known_ends, rpo_entry, rpo_seconds


def test_last_known_end_is_range_end_plus_lag_per_partition():
    rows = [
        {"flow": "e2w", "topic": "orders", "partition": 0, "end": 100, "lag": 5},
        {"flow": "e2w", "topic": "orders", "partition": 0, "end": 120, "lag": 0},
        {"flow": "e2w", "topic": "orders", "partition": 1, "end": 40, "lag": 10},
        {"flow": "w2e", "topic": "orders", "partition": 0, "end": 999, "lag": 0},
        {"flow": "e2w", "cluster": "heartbeat-row"},
    ]
    assert last_known_ends(rows, "e2w") == {("orders", 0): 120, ("orders", 1): 50}


def test_rpo_entry_counts_known_missing_records():
    assert rpo_entry("f", "t", 0, copied_up_to=120, last_known_end=120).missing_at_least == 0
    assert rpo_entry("f", "t", 1, copied_up_to=40, last_known_end=50).missing_at_least == 10
    assert rpo_entry("f", "t", 2, copied_up_to=None, last_known_end=7).missing_at_least == 7
    assert rpo_entry("f", "t", 3, copied_up_to=5, last_known_end=None).missing_at_least is None
    assert rpo_seconds(10_000, 4_000) == 6.0 and rpo_seconds(10_000, None) is None


def test_state_round_trip_and_failover_transition():
    s = DrState(version=3, active_cluster="east", schema_primary="east", failed_clusters=())
    assert DrState.decode(s.encode()) == s
    assert DrState.decode(b"garbage") is None
    after = s.after_failover("east", "west", {"kind": "failover"})
    assert (after.version, after.active_cluster, after.schema_primary, after.failed_clusters) == (4, "west", "west", ("east",))
    assert after.flow_stopped("east") and not after.flow_stopped("west")
    # failing over to a cluster that was marked failed clears it
    back = after.after_failover("west", "east", {})
    assert back.failed_clusters == ("west",) and back.active_cluster == "east"


def test_newest_state_wins():
    assert newest([None, DrState(version=2, active_cluster="a"), DrState(version=5, active_cluster="b")]).active_cluster == "b"
    assert newest([None, None]) == DrState()

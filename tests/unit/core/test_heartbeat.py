"""Judging a flow from the heartbeats read on its target (kafka_dr.core.heartbeat)."""

from kafka_dr.core.heartbeat import Heartbeat, flow_latency


def test_heartbeat_round_trip_and_garbage():
    hb = Heartbeat("east", 1_700_000_000_123)
    assert Heartbeat.decode(hb.encode()) == hb
    for raw in (None, b"", b"{}", b"not json", b'{"cluster": "east"}', b'{"cluster": "e", "emitted_ms": "x"}'):
        assert Heartbeat.decode(raw) is None


def test_newest_heartbeat_of_the_source_decides_the_age():
    seen = [
        ("east", Heartbeat("east", 10_000)),
        ("east", Heartbeat("east", 50_000)),
        (None, Heartbeat("west", 90_000)),
        ("north", Heartbeat("north", 95_000)),
        ("east", Heartbeat("east", 40_000)),
    ]
    lat = flow_latency("east_to_west", "east", "west", seen, now_ms=80_000, max_age_seconds=60)
    assert (lat.newest_emitted_ms, lat.age_seconds, lat.status, lat.loops) == (50_000, 30.0, "ok", 0)
    late = flow_latency("east_to_west", "east", "west", seen, now_ms=111_000, max_age_seconds=60)
    assert (late.age_seconds, late.status) == (61.0, "late")


def test_no_heartbeat_from_the_source_is_missing():
    seen = [(None, Heartbeat("west", 1)), ("north", Heartbeat("north", 2))]
    lat = flow_latency("east_to_west", "east", "west", seen, now_ms=10, max_age_seconds=60)
    assert (lat.status, lat.age_seconds, lat.newest_emitted_ms) == ("missing", None, None)


def test_own_heartbeat_coming_back_is_a_loop():
    seen = [("east", Heartbeat("east", 1000)), ("east", Heartbeat("west", 900)), (None, Heartbeat("west", 950))]
    lat = flow_latency("east_to_west", "east", "west", seen, now_ms=2000, max_age_seconds=60)
    assert lat.loops == 1 and lat.status == "ok"


def test_a_copy_relayed_by_another_cluster_does_not_count_for_this_flow():
    # a heartbeat claiming origin east but emitted by north is not east's
    seen = [("east", Heartbeat("north", 5000))]
    assert flow_latency("f", "east", "west", seen, now_ms=6000, max_age_seconds=60).status == "missing"


def test_none_arrived_yet_is_waiting_while_the_sources_first_is_younger_than_the_threshold():
    """A new deployment's first check runs seconds after the first heartbeat left: no alert."""
    seen = [(None, Heartbeat("west", 1))]
    lat = flow_latency("east_to_west", "east", "west", seen, now_ms=70_000, max_age_seconds=60, first_emitted_ms=20_000)
    assert (lat.status, lat.age_seconds, lat.newest_emitted_ms) == ("waiting", 50.0, None)
    old = flow_latency("east_to_west", "east", "west", seen, now_ms=81_000, max_age_seconds=60, first_emitted_ms=20_000)
    assert (old.status, old.age_seconds) == ("missing", None)
    # the source unreadable: nothing says the flow is new
    assert flow_latency("east_to_west", "east", "west", seen, now_ms=70_000, max_age_seconds=60).status == "missing"

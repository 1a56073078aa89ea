"""Failback decisions with literal values: re-seed provenance, the seed map, resume positions."""

from __future__ import annotations

import re

from kafka_dr.core.config import TopicSelection
from kafka_dr.core.failback import (
    SeedRun,
    decode_seed_map,
    in_window,
    narrowed,
    reseed_transform,
    resync_position,
    runs_from_pairs,
    seed_map_key,
    seed_map_value,
    seeded_position,
)
from kafka_dr.core.provenance import Provenance

EAST_COPY = [("app", b"x"), *Provenance("east", "orders", 0, 7, 1000).to_headers()]


def test_reseed_strips_provenance_of_the_recovered_clusters_records():
    t = reseed_transform("west", "east")
    assert t(EAST_COPY, "orders", 0, 42, 5) == [("app", b"x")]
    # a copy made by an earlier release (the five-header form) too
    legacy = [("app", b"x"), ("dr.origin", b"east"), ("dr.origin.topic", b"orders"), ("dr.origin.offset", b"7")]
    assert t(legacy, "orders", 0, 42, 5) == [("app", b"x")]


def test_reseed_adds_provenance_to_the_survivors_own_records():
    t = reseed_transform("west", "east")
    out = t([("app", b"y")], "orders", 1, 9, 5)
    assert out[0] == ("app", b"y") and Provenance.from_headers(out) == Provenance("west", "orders", 1, 9, 5)


def test_reseed_keeps_third_cluster_records_and_verbatim_topics():
    t = reseed_transform("west", "east", frozenset({"_schemas"}))
    north = [*Provenance("north", "orders", 0, 3, 1).to_headers()]
    assert t(north, "orders", 0, 1, 5) == north
    assert t([("k", b"v")], "_schemas", 0, 1, 5) == [("k", b"v")]
    assert t(EAST_COPY, "_schemas", 0, 1, 5) == EAST_COPY


def test_reseed_keeps_a_record_that_came_from_another_topic_of_the_recovered_cluster():
    t = reseed_transform("west", "east")
    moved = [*Provenance("east", "orders-v1", 0, 3, 1).to_headers()]
    assert t(moved, "orders", 0, 1, 5) == moved


def test_runs_coalesce_consecutive_pairs_and_break_at_gaps_and_markers():
    # source gap at 12 (compaction), target gap at 103 (a transaction marker)
    pairs = [(10, 100), (11, 101), (13, 102), (14, 104), (15, 105)]
    assert runs_from_pairs(pairs) == [SeedRun(10, 100, 2), SeedRun(13, 102, 1), SeedRun(14, 104, 2)]


def test_seed_map_round_trip():
    run = SeedRun(13, 102, 4)
    assert decode_seed_map(seed_map_key("orders", 2, 13), seed_map_value(run)) == ("orders", 2, run)
    assert decode_seed_map(b"junk", b"{}") is None


def test_seeded_position():
    runs = [SeedRun(10, 100, 2), SeedRun(13, 102, 1), SeedRun(14, 104, 2)]
    assert seeded_position(runs, 0, 200) == 100  # before everything seeded
    assert seeded_position(runs, 11, 200) == 101
    assert seeded_position(runs, 12, 200) == 102  # in the compaction gap: the next record
    assert seeded_position(runs, 15, 200) == 105
    assert seeded_position(runs, 16, 200) == 200  # read everything: the end
    assert seeded_position([], 5, 7) == 7


def test_resync_position_takes_the_earlier_unread_record():
    assert resync_position(500, 120, 900) == 120  # unread records of the recovered cluster sit lower
    assert resync_position(500, None, 900) == 500
    assert resync_position(None, 120, 900) == 120
    assert resync_position(None, None, 900) == 900


def test_narrowed_selection_never_widens():
    base = TopicSelection(allow=("orders.*", "billing"), deny=("orders-tmp",))
    sel = narrowed(base, "orders-.*")
    assert sel.selects("orders-eu") and not sel.selects("billing") and not sel.selects("orders-tmp")
    assert not narrowed(base, "other").selects("other")
    assert narrowed(base, ".*") == base
    assert re.compile(sel.allow[0])


def test_time_window():
    assert in_window(5, 5, 10) and not in_window(10, 5, 10) and not in_window(4, 5, None) and in_window(4, None, None)

"""Naming: MirrorMaker 2's DefaultReplicationPolicy restricted to known cluster prefixes, and every internal name."""

from __future__ import annotations

import pytest

from kafka_dr.core.naming import InternalNames, PrefixNaming, identity_target_topic

N = PrefixNaming(frozenset({"east", "west", "north"}))


def test_remote_topic():
    assert N.remote_topic("east", "orders") == "east.orders"
    assert N.remote_topic("west", "east.orders") == "west.east.orders"
    assert N.remote_topic("east", "orders.v2") == "east.orders.v2"


def test_topic_source_only_counts_known_clusters():
    assert N.topic_source("east.orders") == "east"
    assert N.topic_source("west.east.orders") == "west"
    assert N.topic_source("east.orders.v2") == "east"
    assert N.topic_source("orders") is None
    assert N.topic_source("orders.v2") is None  # 'orders' is no cluster: a local topic with a dot
    assert N.topic_source("south.orders") is None  # unknown cluster
    assert N.topic_source("eastern.orders") is None
    assert N.topic_source("East.orders") is None  # names are case-sensitive


def test_a_cluster_named_like_a_topic_prefix_makes_it_remote():
    assert PrefixNaming(frozenset({"east", "west"})).topic_source("orders.v2") is None
    assert PrefixNaming(frozenset({"east", "orders"})).topic_source("orders.v2") == "orders"


def test_upstream_topic_is_one_hop_back():
    assert N.upstream_topic("east.orders") == "orders"
    assert N.upstream_topic("west.east.orders") == "east.orders"
    assert N.upstream_topic("east.orders.v2") == "orders.v2"
    assert N.upstream_topic("orders") is None
    assert N.upstream_topic("orders.v2") is None


def test_original_topic_is_all_hops_back():
    assert N.original_topic("orders") == "orders"
    assert N.original_topic("orders.v2") == "orders.v2"
    assert N.original_topic("east.orders") == "orders"
    assert N.original_topic("west.east.orders") == "orders"
    assert N.original_topic("north.west.east.orders.v2") == "orders.v2"
    assert N.original_topic("north.south.orders") == "south.orders"  # south is unknown: stops there


def test_is_cycle():
    assert N.is_cycle("east.orders", "east")
    assert not N.is_cycle("east.orders", "west")
    assert N.is_cycle("west.east.orders", "east")  # any hop counts, not just the last
    assert N.is_cycle("west.east.orders", "west")
    assert not N.is_cycle("west.east.orders", "north")
    assert not N.is_cycle("orders", "east")
    assert not N.is_cycle("east", "east")  # a local topic named like a cluster
    assert not N.is_cycle("orders.east", "east")  # suffixes do not count


def test_target_topic():
    assert N.target_topic("east", "orders", "west") == "east.orders"
    assert N.target_topic("west", "east.orders", "north") == "west.east.orders"
    assert N.target_topic("west", "orders.v2", "east") == "west.orders.v2"


def test_target_topic_is_none_for_cycles():
    assert N.target_topic("west", "east.orders", "east") is None
    assert N.target_topic("north", "west.east.orders", "east") is None
    assert N.target_topic("north", "west.east.orders", "west") is None


def test_two_cluster_active_active_never_copies_back():
    n = PrefixNaming(frozenset({"east", "west"}))
    # east's orders reach west as east.orders ...
    assert n.target_topic("east", "orders", "west") == "east.orders"
    # ... and west's east.orders never goes back to east
    assert n.target_topic("west", "east.orders", "east") is None
    # west's own topic goes to east
    assert n.target_topic("west", "orders", "east") == "west.orders"
    assert n.target_topic("east", "west.orders", "west") is None


def test_custom_separator():
    n = PrefixNaming(frozenset({"east", "west"}), "_")
    assert n.remote_topic("east", "orders") == "east_orders"
    assert n.topic_source("east_orders") == "east"
    assert n.topic_source("east.orders") is None  # '.' is not the separator here
    assert n.topic_source("my_orders") is None
    assert n.upstream_topic("west_east_orders") == "east_orders"
    assert n.original_topic("west_east_orders") == "orders"
    assert n.original_topic("east_my_orders") == "my_orders"
    assert n.target_topic("east", "orders", "west") == "east_orders"
    assert n.target_topic("west", "east_orders", "east") is None


@pytest.mark.parametrize("sep", ["_", "-"])
def test_cluster_names_that_contain_the_separator(sep):
    # cluster names may contain '_' and '-', which may also be the separator; the prefix is
    # still the whole cluster name, or a remote topic would look local and loop back home
    east, west = f"us{sep}east", f"us{sep}west"
    n = PrefixNaming(frozenset({east, west}), sep)
    remote = n.remote_topic(east, "orders")
    assert remote == f"us{sep}east{sep}orders"
    assert n.topic_source(remote) == east
    assert n.upstream_topic(remote) == "orders"
    assert n.original_topic(n.remote_topic(west, remote)) == "orders"
    assert n.target_topic(west, remote, east) is None
    assert n.topic_source(f"us{sep}orders") is None


def test_the_longest_known_cluster_prefix_wins():
    n = PrefixNaming(frozenset({"a", "a_b"}), "_")
    assert n.topic_source("a_b_orders") == "a_b"
    assert n.upstream_topic("a_b_orders") == "orders"
    assert n.topic_source("a_orders") == "a"
    assert n.upstream_topic("a_orders") == "orders"


def test_identity_naming():
    assert identity_target_topic("orders") == "orders"
    assert identity_target_topic("east.orders") == "east.orders"


def test_every_internal_name_starts_with_the_prefix():
    names = InternalNames("_kafka_dr")
    assert names.heartbeat_topic == "_kafka_dr.heartbeats"
    assert names.metrics_topic == "_kafka_dr.metrics"
    assert names.offset_sync_topic == "_kafka_dr.offset-sync"
    assert names.dq_results_topic == "_kafka_dr.dq-results"
    assert names.seed_map_topic == "_kafka_dr.seed-map"
    assert names.state_topic == "_kafka_dr.state"
    assert names.progress_group("east_to_west") == "_kafka_dr.progress.east_to_west"
    assert names.progress_scan_group("a-b") == "_kafka_dr.progress.a-b.scan"
    assert names.schema_mirror_group("east", "west") == "_kafka_dr.schemas.east_to_west"
    assert names.reader_group("failback-gate") == "_kafka_dr.failback-gate"
    assert names.transactional_id("east_to_west", "orders", 3) == "_kafka_dr.east_to_west.orders.3"
    assert names.task_transactional_id("east_to_west") == "_kafka_dr.east_to_west.task"
    assert names.is_internal("_kafka_dr.state") and not names.is_internal("orders")
    assert names.reseed_flow("west", "east") == "reseed_west_to_east"
    assert names.failback_flow("west", "east") == "failback_west_to_east"


def test_a_task_id_never_equals_a_partition_id():
    names = InternalNames("dr")
    # a topic named "task"'s partition ids end in a number; the task id never does
    assert names.task_transactional_id("f") not in {names.transactional_id("f", "task", p) for p in range(3)}


def test_an_unknown_reader_is_refused():
    with pytest.raises(ValueError, match="unknown reader 'failover'"):
        InternalNames("dr").reader_group("failover")

"""Which data topics a flow selects, and flows that select none (kafka_dr.core.selection)."""

from __future__ import annotations

from kafka_dr.core.config_load import parse_config
from kafka_dr.core.selection import EmptySelection, empty_selections, selected_data_topics


def config(east_allow, west_allow=(".*",), **extra):
    return parse_config(
        {
            "clusters": {"east": {"bootstrap_servers": "e:9092"}, "west": {"bootstrap_servers": "w:9092"}},
            "flows": [
                {
                    "name": "east_to_west",
                    "source": "east",
                    "target": "west",
                    "topics": {"allow": list(east_allow)},
                    **extra,
                },
                {
                    "name": "west_to_east",
                    "source": "west",
                    "target": "east",
                    "topics": {"allow": list(west_allow)},
                    **extra,
                },
            ],
        }
    )


#: what a source holds besides data: the product's own topics and Kafka's internal ones
INTERNAL = ["_kafka_dr.heartbeats", "_kafka_dr.metrics", "_kafka_dr.state", "__consumer_offsets", "_schemas"]


def test_heartbeat_and_internal_topics_are_no_data_topics():
    cfg = config([".*"])
    e2w = cfg.flows[0]
    assert selected_data_topics(cfg, e2w, [*INTERNAL, "orders", "payments"]) == ["orders", "payments"]
    assert selected_data_topics(cfg, e2w, INTERNAL) == []


def test_a_selection_that_matches_nothing_is_found_per_flow():
    cfg = config(["nothing-matches-.*"])
    found = empty_selections(cfg, {"east": [*INTERNAL, "orders"], "west": [*INTERNAL, "orders"]})
    assert found == [EmptySelection("east_to_west", "east", ("nothing-matches-.*",), ())]
    assert str(found[0]) == (
        "flow east_to_west selects no topics on east (allow ['nothing-matches-.*']): it copies only "
        "heartbeats; check topics.allow, or create the topics"
    )
    # a topic that matches appears: the flow selects it
    assert empty_selections(cfg, {"east": ["nothing-matches-yet-here"], "west": ["orders"]}) == []


def test_a_source_that_was_not_read_is_not_judged_and_disabled_flows_are_left_out():
    cfg = config(["nothing-matches-.*"], ["nothing-either"])
    assert [e.flow for e in empty_selections(cfg, {"west": ["orders"]})] == ["west_to_east"]
    off = config(["nothing-matches-.*"], enabled=False)
    assert empty_selections(off, {"east": [], "west": []}) == []


def test_deny_and_an_empty_source_leave_nothing_selected():
    cfg = parse_config(
        {
            "clusters": {"east": {"bootstrap_servers": "e:9092"}, "west": {"bootstrap_servers": "w:9092"}},
            "flows": [
                {
                    "name": "e2w",
                    "source": "east",
                    "target": "west",
                    "topics": {"allow": ["orders.*"], "deny": [r"orders\.tmp"]},
                }
            ],
        }
    )
    (e,) = empty_selections(cfg, {"east": ["orders.tmp", "payments"]})
    assert (e.allow, e.deny) == (("orders.*",), (r"orders\.tmp",)) and r"deny ['orders\\.tmp']" in str(e)
    assert len(empty_selections(cfg, {"east": []})) == 1


def test_a_prefix_flow_does_not_count_remote_topics_it_must_not_copy_back():
    cfg = config([".*"], loop_policy="prefix")
    e2w = cfg.flows[0]
    # west.orders on east came from west: copying it back is a cycle, so it is not selected
    assert selected_data_topics(cfg, e2w, ["west.orders"]) == []
    assert selected_data_topics(cfg, e2w, ["west.orders", "orders"]) == ["orders"]


def test_an_internal_topic_named_literally_counts_as_the_selection_says():
    cfg = config(["_schemas"])
    assert selected_data_topics(cfg, cfg.flows[0], INTERNAL) == ["_schemas"]

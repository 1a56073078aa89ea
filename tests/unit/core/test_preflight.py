"""Pre-flight rules (replicate, filter, config, cascade) on literal configs and topic metadata."""

from __future__ import annotations

import pytest

from kafka_dr.core.config_load import parse_config
from kafka_dr.core.preflight import PreflightFailed, Violation, validate

CLUSTERS = ("east", "west", "north")


def config(flows, **extra):
    return parse_config(
        {
            "clusters": {c: {"bootstrap_servers": f"127.0.0.1:{19092 + 100 * i}"} for i, c in enumerate(CLUSTERS)},
            "flows": flows,
            **extra,
        }
    )


def pair(allow=None, allow_back=None, **keys):
    a = {"source": "east", "target": "west", **keys}
    b = {"source": "west", "target": "east", **keys}
    if allow is not None:
        a["topics"] = {"allow": allow}
    if allow_back is not None:
        b["topics"] = {"allow": allow_back}
    return [a, b]


def topic(partitions=3, cleanup="delete"):
    return {"partitions": partitions, "configs": {"cleanup.policy": cleanup}}


def found(cfg, md, rules=None):
    vs = validate(cfg, md) if rules is None else validate(cfg, md, rules)
    return [(v.rule, v.flow, v.topic) for v in vs]


# --- replicate ------------------------------------------------------------------------------

ASYM = config(pair([r"orders\..*"], [r"orders\.eu"]))


def test_replicate_one_way_topic_in_active_active():
    md = {"east": {"orders.eu": topic(), "orders.us": topic()}, "west": {"orders.eu": topic()}}
    assert found(ASYM, md) == [("replicate", "east_to_west", "orders.us")]
    (v,) = validate(ASYM, md)
    assert "east/orders.us is replicated to west/orders.us, but no flow west -> east" in v.message
    assert "records written on west would never reach east" in v.message
    assert str(v).startswith("[replicate] flow east_to_west, topic orders.us: ")


def test_replicate_not_checked_for_one_way_flows():
    md = {"east": {"orders.us": topic()}}
    assert found(config([{"source": "east", "target": "west"}]), md) == []
    disabled_back = config(
        pair([r"orders\..*"], [r"orders\.eu"])[:1] + [{"source": "west", "target": "east", "enabled": False}]
    )
    assert found(disabled_back, md) == []


def test_replicate_prefix_asks_for_the_local_topic_of_the_other_side():
    cfg = config(pair([r"orders", r"payments"], [r"orders"], loop_policy="prefix"))
    md = {
        "east": {"orders": topic(), "payments": topic(), "west.orders": topic()},
        "west": {"orders": topic(), "east.orders": topic(), "east.payments": topic()},
    }
    assert found(cfg, md) == [("replicate", "east_to_west", "payments")]
    (v,) = validate(cfg, md)
    assert "replicates west/payments (as east/west.payments) back" in v.message


def test_replicate_reverse_may_be_split_over_named_flows():
    cfg = config(
        [
            {"source": "east", "target": "west", "topics": {"allow": ["a", "b"]}},
            {"name": "back_a", "source": "west", "target": "east", "topics": {"allow": ["a"]}},
            {"name": "back_b", "source": "west", "target": "east", "topics": {"allow": ["b"]}},
        ]
    )
    assert found(cfg, {"east": {"a": topic(), "b": topic()}, "west": {"a": topic(), "b": topic()}}) == []


# --- filter ---------------------------------------------------------------------------------


def test_filter_latent_asymmetry_on_a_topic_only_on_the_other_side():
    md = {"east": {"orders.eu": topic()}, "west": {"orders.eu": topic(), "orders.asia": topic()}}
    assert found(ASYM, md) == [("filter", "east_to_west", "orders.asia")]
    (v,) = validate(ASYM, md)
    assert "selected east -> west but not west -> east" in v.message
    assert "east_to_west: allow ['orders\\\\..*'], deny []" in v.message
    assert "orders.asia exists only on west" in v.message


def test_filter_literal_allow_names_count_even_before_the_topic_exists():
    cfg = config(pair(["orders", "audit"], ["orders"]))
    assert found(cfg, {"east": {}, "west": {}}) == [("filter", "east_to_west", "audit")]
    assert "exists on neither cluster yet" in validate(cfg, {"east": {}, "west": {}})[0].message


def test_filter_symmetric_selections_pass():
    cfg = config(pair([r"orders\..*"], [r"orders\..*"]))
    md = {"east": {"orders.eu": topic(), "payments": topic()}, "west": {"orders.us": topic()}}
    assert found(cfg, md) == []


# --- config ---------------------------------------------------------------------------------


def test_config_partitions_and_cleanup_policy_differ():
    cfg = config(pair())
    md = {"east": {"orders": topic(6, "compact")}, "west": {"orders": topic(3, "delete")}}
    vs = validate(cfg, md)
    assert [(v.rule, v.flow, v.topic) for v in vs] == [
        ("config", "east_to_west", "orders")
    ] * 2  # reported once for the pair
    text = "\n".join(v.message for v in vs)
    assert "east/orders has 6 partitions but west/orders has 3" in text
    assert "dr_topic_config_sync raises the target" in text
    assert "east/orders has cleanup.policy=compact but west/orders has cleanup.policy=delete" in text


def test_config_target_with_more_partitions_cannot_be_lowered():
    cfg = config([{"source": "east", "target": "west"}])
    (v,) = validate(cfg, {"east": {"orders": topic(2)}, "west": {"orders": topic(4)}})
    assert "Kafka cannot lower a partition count" in v.message


def test_config_cleanup_policy_order_does_not_matter_and_missing_targets_pass():
    cfg = config([{"source": "east", "target": "west"}])
    md = {"east": {"a": topic(1, "compact,delete"), "b": topic(1)}, "west": {"a": topic(1, "delete, compact")}}
    assert found(cfg, md) == []


def test_config_unknown_policy_is_not_guessed():
    cfg = config([{"source": "east", "target": "west"}])
    assert found(cfg, {"east": {"a": {"partitions": 1}}, "west": {"a": topic(1, "compact")}}) == []


def test_config_prefix_compares_source_with_remote_topic():
    cfg = config([{"source": "east", "target": "west", "loop_policy": "prefix"}])
    md = {
        "east": {"orders": topic(3, "compact")},
        "west": {"orders": topic(3, "delete"), "east.orders": topic(3, "delete")},
    }
    (v,) = validate(cfg, md)
    assert (v.rule, v.flow, v.topic) == ("config", "east_to_west", "orders")
    assert "west/east.orders has cleanup.policy=delete" in v.message


# --- cascade --------------------------------------------------------------------------------

ALL = {c: {"t": topic()} for c in CLUSTERS}


@pytest.mark.parametrize(
    "keys",
    [
        {"loop_policy": "provenance", "provenance_rule": "not_to_origin"},
        {"loop_policy": "provenance", "provenance_rule": "local_only"},
        {"loop_policy": "prefix"},
    ],
)
def test_cascade_two_cluster_active_active_is_clean(keys):
    md = {
        "east": {"t": topic(), "east.t": topic(), "west.t": topic()},
        "west": {"t": topic(), "west.t": topic(), "east.t": topic()},
    }
    assert found(config(pair(**keys)), md, ["cascade"]) == []


def test_cascade_copy_flags_tree_is_clean():
    cfg = config(
        [
            {"source": s, "target": t, "loop_policy": "copy_flags"}
            for s, t in (("east", "west"), ("west", "east"), ("east", "north"), ("west", "north"), ("north", "east"))
        ],
        distribution={"tree": [["east", "west"], "north"]},
    )
    assert found(cfg, ALL) == []


def test_cascade_chain_not_to_origin_forwards_once():
    cfg = config([{"source": "east", "target": "west"}, {"source": "west", "target": "north"}])
    assert found(cfg, {"east": {"t": topic()}}) == []


def test_cascade_local_only_chain_does_not_forward():
    cfg = config(
        [
            {"source": "east", "target": "west", "provenance_rule": "local_only"},
            {"source": "west", "target": "north", "provenance_rule": "local_only"},
        ]
    )
    (v,) = validate(cfg, {"east": {"t": topic()}})
    assert (v.rule, v.flow, v.topic) == ("cascade", "west_to_north", "t")
    assert "west_to_north (provenance/local_only) does not forward them to north/t" in v.message
    # with a direct flow east -> north every record gets there: no gap
    direct = config(
        [
            {"source": "east", "target": "west", "provenance_rule": "local_only"},
            {"source": "west", "target": "north", "provenance_rule": "local_only"},
            {"source": "east", "target": "north", "provenance_rule": "local_only"},
        ]
    )
    assert found(direct, {"east": {"t": topic()}}) == []


def test_cascade_not_to_origin_triangle_duplicates_and_loops():
    mesh = config([{"source": s, "target": t} for s in CLUSTERS for t in CLUSTERS if s != t])
    vs = validate(mesh, {"east": {"t": topic()}})
    assert {v.rule for v in vs} == {"cascade"}
    msgs = [v.message for v in vs]
    assert any(
        "reach west 2 times: east/t -[east_to_west]-> west/t and "
        "east/t -[east_to_north]-> north/t -[north_to_west]-> west/t" in m
        for m in msgs
    )
    assert any("(a loop)" in m for m in msgs)


def test_cascade_prefix_mesh_duplicates_under_another_name():
    mesh = config([{"source": s, "target": t, "loop_policy": "prefix"} for s in CLUSTERS for t in CLUSTERS if s != t])
    vs = validate(mesh, {"east": {"t": topic()}})
    assert ("cascade", "north_to_west", "east.t") in [(v.rule, v.flow, v.topic) for v in vs]
    assert any(
        "west/east.t and east/t -[east_to_north]-> north/east.t -[north_to_west]-> west/north.east.t" in v.message
        for v in vs
    )
    assert not any("(a loop)" in v.message for v in vs)  # the cycle rule prevents loops


def test_cascade_record_back_home_under_another_name_is_a_loop():
    cfg = config(
        [
            {"source": "east", "target": "west", "loop_policy": "prefix"},
            {"source": "west", "target": "north"},
            {"source": "north", "target": "east"},
        ]
    )
    vs = validate(cfg, {"east": {"t": topic()}}, ["cascade"])
    assert [(v.rule, v.flow, v.topic) for v in vs] == [("cascade", "north_to_east", "east.t")]
    assert "back to the cluster it was written on (a loop)" in vs[0].message


def test_cascade_two_flows_same_direction_overlapping_duplicate():
    cfg = config(
        [
            {"name": "a", "source": "east", "target": "west", "topics": {"allow": ["t.*"]}},
            {"name": "b", "source": "east", "target": "west", "topics": {"allow": ["t"]}},
        ]
    )
    vs = validate(cfg, {"east": {"t": topic()}})
    assert [(v.rule, v.topic) for v in vs] == [("cascade", "t")]
    assert "more than one flow copies it directly" in vs[0].message


# --- exclusions, ordering, the error ---------------------------------------------------------


def test_exclude_topics_silences_every_rule_for_that_topic():
    md = {
        "east": {"orders.eu": topic(), "orders.us": topic(1)},
        "west": {"orders.eu": topic(), "orders.us": topic(2, "compact")},
    }
    both = config(pair([r"orders\..*"], [r"orders\.eu"]))
    assert found(both, md) == [
        ("replicate", "east_to_west", "orders.us"),
        ("config", "east_to_west", "orders.us"),
        ("config", "east_to_west", "orders.us"),
    ]
    silenced = config(pair([r"orders\..*"], [r"orders\.eu"]), preflight={"exclude_topics": [r"orders\.us"]})
    assert found(silenced, md) == []
    partial = config(
        pair([r"orders\..*"], [r"orders\.eu"]), preflight={"exclude_topics": [r"orders"]}
    )  # full match only
    assert len(found(partial, md)) == 3


def test_exclude_matches_the_target_name_too():
    cfg = config(
        [{"source": "east", "target": "west", "loop_policy": "prefix"}], preflight={"exclude_topics": [r"east\..*"]}
    )
    assert found(cfg, {"east": {"orders": topic(3)}, "west": {"east.orders": topic(4)}}) == []


def test_violations_are_ordered_by_rule_and_the_error_lists_all():
    md = {"east": {"orders.us": topic(1)}, "west": {"orders.us": topic(2), "orders.asia": topic()}}
    vs = validate(ASYM, md)
    assert [v.rule for v in vs] == ["replicate", "filter", "config"]
    err = PreflightFailed(vs)
    assert err.violations == tuple(vs)
    assert "found 3 violation(s)" in str(err)
    for v in vs:
        assert str(v) in str(err)
    assert "preflight.exclude_topics" in str(err)


def test_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="unknown pre-flight rule 'sow'"):
        validate(ASYM, {}, ["sow"])


def test_violation_to_dict():
    assert Violation("config", "f", "t", "m").to_dict() == {"rule": "config", "flow": "f", "topic": "t", "message": "m"}

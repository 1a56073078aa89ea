"""Topic-config sync as a pure diff: literal topic metadata in, actions and drift report out."""

from __future__ import annotations

import json

from kafka_dr.core.config_load import parse_config
from kafka_dr.core.topic_sync import TopicState, config_owner, format_report, plan_flow, plan_topic


def two_clusters(flows=None, **extra):
    return parse_config(
        {
            "clusters": {
                "east": {"bootstrap_servers": "127.0.0.1:19092"},
                "west": {"bootstrap_servers": "127.0.0.1:19192"},
            },
            "flows": flows or [{"source": "east", "target": "west"}, {"source": "west", "target": "east"}],
            **extra,
        }
    )


def test_missing_target_is_created_with_partitions_and_replicable_configs():
    src = TopicState("orders", 6, {"retention.ms": "86400000", "min.insync.replicas": "2", "cleanup.policy": "compact"})
    p = plan_topic(src, None, "orders")
    assert p.create and p.create_partitions == 6
    assert dict(p.create_configs) == {"retention.ms": "86400000", "cleanup.policy": "compact"}
    assert p.changes and p.drift
    assert p.to_dict() == {
        "source_topic": "orders",
        "target_topic": "orders",
        "created": {"partitions": 6, "configs": {"cleanup.policy": "compact", "retention.ms": "86400000"}},
    }


def test_created_topic_leaves_user_excluded_configs_out():
    src = TopicState("orders", 1, {"retention.ms": "1000", "segment.bytes": "1048576"})
    assert dict(plan_topic(src, None, "orders", [r"segment\..*"]).create_configs) == {"retention.ms": "1000"}


def test_partitions_are_raised_when_the_source_grew():
    p = plan_topic(TopicState("orders", 8), TopicState("orders", 3), "orders")
    assert p.raise_partitions == (3, 8) and p.target_larger is None
    assert p.to_dict()["partitions_raised"] == {"from": 3, "to": 8}


def test_partitions_are_never_lowered_only_reported():
    p = plan_topic(TopicState("orders", 3), TopicState("orders", 8), "orders")
    assert p.raise_partitions is None
    assert p.target_larger == (3, 8)
    assert not p.changes and p.drift
    assert p.to_dict()["target_larger"] == {"source": 3, "target": 8}


def test_changed_and_new_configs_are_set_with_their_old_values():
    src = TopicState("orders", 3, {"retention.ms": "3600000", "max.message.bytes": "2097152"})
    dst = TopicState("orders", 3, {"retention.ms": "86400000"})
    p = plan_topic(src, dst, "orders")
    assert dict(p.set_configs) == {"retention.ms": ("86400000", "3600000"), "max.message.bytes": (None, "2097152")}
    assert dict(p.delete_configs) == {}
    assert p.to_dict()["configs_set"] == {
        "max.message.bytes": {"from": None, "to": "2097152"},
        "retention.ms": {"from": "86400000", "to": "3600000"},
    }


def test_config_removed_on_the_source_is_deleted_on_the_target():
    src = TopicState("orders", 3, {"retention.ms": "3600000"})
    dst = TopicState("orders", 3, {"retention.ms": "3600000", "segment.ms": "600000"})
    p = plan_topic(src, dst, "orders")
    assert dict(p.delete_configs) == {"segment.ms": "600000"}
    assert dict(p.set_configs) == {}
    assert p.to_dict()["configs_deleted"] == {"segment.ms": {"from": "600000"}}


def test_excluded_differences_are_reported_never_set_nor_deleted():
    src = TopicState(
        "orders", 3, {"min.insync.replicas": "2", "message.timestamp.type": "LogAppendTime", "retention.ms": "1"}
    )
    dst = TopicState("orders", 3, {"unclean.leader.election.enable": "true", "retention.ms": "1"})
    p = plan_topic(src, dst, "orders")
    assert not p.changes
    assert dict(p.excluded) == {
        "min.insync.replicas": ("2", None),
        "message.timestamp.type": ("LogAppendTime", None),
        "unclean.leader.election.enable": (None, "true"),
    }


def test_user_exclusions_extend_the_defaults():
    src = TopicState("orders", 3, {"retention.ms": "1000", "segment.bytes": "1048576"})
    dst = TopicState("orders", 3, {"segment.bytes": "2097152", "segment.ms": "5"})
    p = plan_topic(src, dst, "orders", [r"segment\..*"])
    assert dict(p.set_configs) == {"retention.ms": (None, "1000")}
    assert dict(p.delete_configs) == {}
    assert dict(p.excluded) == {"segment.bytes": ("1048576", "2097152"), "segment.ms": (None, "5")}


def test_equal_topics_plan_nothing():
    s = TopicState("orders", 3, {"retention.ms": "1000", "min.insync.replicas": "2"})
    p = plan_topic(s, TopicState("orders", 3, {"retention.ms": "1000", "min.insync.replicas": "2"}), "orders")
    assert not p.drift and not p.changes
    assert p.to_dict() == {"source_topic": "orders", "target_topic": "orders"}


def test_not_owned_target_reports_config_differences_but_still_grows():
    src = TopicState("orders", 5, {"retention.ms": "1000"})
    dst = TopicState("orders", 3, {"retention.ms": "2000", "segment.ms": "9"})
    p = plan_topic(src, dst, "orders", sync_configs=False, config_owner="east")
    assert p.raise_partitions == (3, 5)
    assert dict(p.set_configs) == {} and dict(p.delete_configs) == {}
    assert dict(p.not_owned) == {"retention.ms": ("1000", "2000"), "segment.ms": (None, "9")}
    assert p.to_dict()["not_owned"] == {
        "owner": "east",
        "configs": {
            "retention.ms": {"source": "1000", "target": "2000"},
            "segment.ms": {"source": None, "target": "9"},
        },
    }


def test_config_owner_is_the_source_of_the_first_flow_copying_the_topic_by_name():
    cfg = two_clusters()
    assert config_owner(cfg, "orders") == "east"
    asym = two_clusters(
        [
            {"source": "east", "target": "west", "topics": {"allow": [r"orders\.eu"]}},
            {"source": "west", "target": "east", "topics": {"allow": [r"orders\..*"]}},
        ]
    )
    assert config_owner(asym, "orders.eu") == "east"
    assert config_owner(asym, "orders.us") == "west"
    assert config_owner(asym, "payments") is None
    prefix = two_clusters(
        [
            {"source": "east", "target": "west", "loop_policy": "prefix"},
            {"source": "west", "target": "east", "loop_policy": "prefix"},
        ]
    )
    assert config_owner(prefix, "orders") is None


def test_disabled_flows_own_nothing():
    cfg = two_clusters([{"source": "east", "target": "west", "enabled": False}, {"source": "west", "target": "east"}])
    assert config_owner(cfg, "orders") == "west"


def test_plan_flow_active_active_identity_writes_configs_one_way_only():
    cfg = two_clusters()
    east = {"orders": TopicState("orders", 3, {"retention.ms": "1000"})}
    west = {"orders": TopicState("orders", 3, {"retention.ms": "2000"})}
    e2w = plan_flow(cfg, cfg.flows[0], east, west)
    w2e = plan_flow(cfg, cfg.flows[1], west, east)
    assert dict(e2w.topics[0].set_configs) == {"retention.ms": ("2000", "1000")}
    assert dict(w2e.topics[0].set_configs) == {}
    assert dict(w2e.topics[0].not_owned) == {"retention.ms": ("2000", "1000")}


def test_plan_flow_only_selected_topics_under_their_target_names():
    cfg = two_clusters(
        [
            {
                "source": "east",
                "target": "west",
                "loop_policy": "prefix",
                "topics": {"allow": [r"orders.*"], "deny": [r"orders\.tmp"]},
            },
            {"source": "west", "target": "east", "loop_policy": "prefix", "topics": {"allow": [r"orders.*"]}},
        ],
        topic_config={"exclude": [r"retention\.bytes"]},
    )
    east = {
        "orders": TopicState("orders", 2, {"retention.ms": "5", "retention.bytes": "100"}),
        "orders.tmp": TopicState("orders.tmp", 1),
        "payments": TopicState("payments", 1),
        "west.orders": TopicState("west.orders", 1),  # a remote topic: never copied back
        "__consumer_offsets": TopicState("__consumer_offsets", 50),
    }
    west = {
        "orders": TopicState("orders", 9, {"retention.ms": "7"}),
        "east.orders": TopicState("east.orders", 1, {"retention.bytes": "1"}),
    }
    plan = plan_flow(cfg, cfg.flows[0], east, west)
    assert [(t.source_topic, t.target_topic) for t in plan.topics] == [("orders", "east.orders")]
    (t,) = plan.topics
    assert t.raise_partitions == (1, 2)
    assert dict(t.set_configs) == {"retention.ms": (None, "5")}
    assert dict(t.excluded) == {"retention.bytes": ("100", "1")}
    assert t.config_owner is None  # prefix: one source per remote topic, always synced


def test_report_is_json_and_readable():
    cfg = two_clusters()
    east = {
        "a": TopicState("a", 4, {"retention.ms": "1"}),
        "b": TopicState("b", 2, {"min.insync.replicas": "2"}),
        "c": TopicState("c", 1),
        "d": TopicState("d", 1, {"segment.ms": "5"}),
    }
    west = {
        "b": TopicState("b", 3, {"segment.ms": "8"}),
        "c": TopicState("c", 1),
        "d": TopicState("d", 1, {"segment.ms": "5"}),
    }
    report = plan_flow(cfg, cfg.flows[0], east, west).to_report()
    assert json.loads(json.dumps(report)) == report
    assert report["in_sync"] == ["c", "d"]
    assert report["summary"] == {
        "topics": 4,
        "created": 1,
        "partitions_raised": 0,
        "target_larger": 1,
        "configs_set": 0,
        "configs_deleted": 1,
        "excluded_ignored": 1,
        "not_owned": 0,
    }
    text = format_report(report)
    assert text.splitlines()[0].startswith("flow east_to_west (east -> west): 4 topics, 1 created")
    assert "  east/a -> west/a: created with 4 partitions (retention.ms=1)" in text
    assert "  east/b -> west/b: target has 3 partitions, source 2: left as is (never lowered)" in text
    assert "  east/b -> west/b: deleted segment.ms (was 8; not set on the source any more)" in text
    assert "  east/b -> west/b: excluded min.insync.replicas differs (source 2, target None): ignored" in text
    assert "  in sync: c, d" in text


def test_report_of_the_reverse_flow_names_the_owner():
    cfg = two_clusters()
    west = {"a": TopicState("a", 1, {"retention.ms": "2"})}
    east = {"a": TopicState("a", 1, {"retention.ms": "1"})}
    text = format_report(plan_flow(cfg, cfg.flows[1], west, east).to_report(applied=False))
    assert "[dry run]" in text.splitlines()[0]
    assert (
        "west/a -> east/a: retention.ms differs (source 2, target 1): not written back, east owns this topic's configs"
        in text
    )

"""The bindings kafka-dr's own principal needs, by cluster role."""

from __future__ import annotations

from kafka_dr.core.acl_sync import Acl
from kafka_dr.core.config_load import parse_config_text
from kafka_dr.core.product_acls import kafka_acls_commands, product_acls, roles

ME = "User:kafka-dr"


def _cfg(extra: str = "", policy: str = "provenance", topics: str = "[orders, payments]") -> object:
    return parse_config_text(
        f"""
clusters:
  east: {{bootstrap_servers: "e:9092"}}
  west: {{bootstrap_servers: "w:9092"}}
  north: {{bootstrap_servers: "n:9092"}}
flows:
  - {{source: east, target: west, loop_policy: {policy}, topics: {{allow: {topics}}}}}
{extra}
"""
    )


def _ops(acls, kind, name):
    return sorted(a.operation for a in acls if (a.resource_type, a.name) == (kind, name))


def test_roles_follow_the_enabled_flows():
    assert roles(_cfg()) == {"east": ("source",), "west": ("target",), "north": ()}


def test_a_source_reads_the_replicated_topics_and_the_groups_offsets_only():
    acls = product_acls(_cfg(), ME, "east")
    assert _ops(acls, "TOPIC", "orders") == ["DESCRIBE", "DESCRIBE_CONFIGS", "READ"]
    assert _ops(acls, "GROUP", "*") == ["DESCRIBE"]
    assert _ops(acls, "CLUSTER", "kafka-cluster") == ["DESCRIBE", "DESCRIBE_CONFIGS", "IDEMPOTENT_WRITE"]
    assert Acl("TOPIC", "_kafka_dr", "PREFIXED", ME, "*", "ALL", "ALLOW") in acls
    assert all(a.principal == ME and a.permission == "ALLOW" for a in acls)


def test_a_target_writes_and_manages_the_target_topics_and_the_syncs_cluster_settings():
    acls = product_acls(_cfg(), ME, "west")
    assert _ops(acls, "TOPIC", "payments") == [
        "ALTER",
        "ALTER_CONFIGS",
        "CREATE",
        "DESCRIBE",
        "DESCRIBE_CONFIGS",
        "READ",
        "WRITE",
    ]
    assert _ops(acls, "GROUP", "*") == ["DESCRIBE", "READ"]
    assert "ALTER" in _ops(acls, "CLUSTER", "kafka-cluster") and "ALTER_CONFIGS" in _ops(
        acls, "CLUSTER", "kafka-cluster"
    )


def test_regex_selections_need_the_wildcard_and_prefix_flows_one_prefix():
    acls = product_acls(_cfg(topics='["orders.*"]'), ME, "east")
    assert _ops(acls, "TOPIC", "*") == ["DESCRIBE", "DESCRIBE_CONFIGS", "READ"]
    remote = product_acls(_cfg(policy="prefix"), ME, "west")
    assert {(a.name, a.pattern) for a in remote if a.resource_type == "TOPIC"} == {
        ("east.", "PREFIXED"),
        ("_kafka_dr", "PREFIXED"),
    }


def test_a_cluster_without_flows_still_holds_the_products_own_namespace():
    acls = product_acls(_cfg(), ME, "north")
    assert {a.resource_type for a in acls} == {"TOPIC", "GROUP", "TRANSACTIONAL_ID", "CLUSTER"}
    assert all(a.name in ("_kafka_dr", "kafka-cluster") for a in acls)


def test_the_kafka_acls_commands_grant_each_resource_once():
    lines = kafka_acls_commands(product_acls(_cfg(), ME, "east"), "e:9092")
    assert (
        "kafka-acls.sh --bootstrap-server e:9092 --command-config admin.properties --add --allow-principal "
        "User:kafka-dr --operation Describe --operation DescribeConfigs --operation IdempotentWrite --cluster"
    ) in lines
    assert any(line.endswith("--topic '_kafka_dr' --resource-pattern-type prefixed") for line in lines)
    assert len(lines) == len(set(lines))

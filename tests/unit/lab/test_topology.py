"""The lab's generated config is valid for every cluster count it supports."""

from __future__ import annotations

import pytest

from kafka_dr.core.config import LoopPolicy
from kafka_dr.core.config_load import parse_config, parse_config_text
from kafka_dr.lab.topology import CLUSTER_NAMES, balanced_tree, lab_clusters, lab_config, lab_config_yaml, tree_flows


def test_lab_clusters_ports():
    cs = lab_clusters(3, 19000)
    assert [(c.name, c.port, c.controller_port, c.bootstrap) for c in cs] == [
        ("east", 19000, 19001, "127.0.0.1:19000"),
        ("west", 19100, 19101, "127.0.0.1:19100"),
        ("north", 19200, 19201, "127.0.0.1:19200"),
    ]


@pytest.mark.parametrize("count", [0, len(CLUSTER_NAMES) + 1])
def test_lab_clusters_count_is_checked(count):
    with pytest.raises(ValueError, match="--clusters must be between 1 and 6"):
        lab_clusters(count, 19000)


def test_balanced_tree():
    assert balanced_tree(["a"]) == "a"
    assert balanced_tree(["a", "b"]) == ["a", "b"]
    assert balanced_tree(["a", "b", "c"]) == [["a", "b"], "c"]
    assert balanced_tree(["a", "b", "c", "d"]) == [["a", "b"], ["c", "d"]]
    assert balanced_tree(["a", "b", "c", "d", "e"]) == [[["a", "b"], "c"], ["d", "e"]]


def test_tree_flows_for_three():
    assert tree_flows([["east", "west"], "north"]) == [
        ("east", "west"),
        ("west", "east"),
        ("east", "north"),
        ("west", "north"),
        ("north", "east"),
    ]


def test_two_clusters_replicate_active_active_with_provenance():
    cs = lab_clusters(2, 19000)
    cfg = parse_config(lab_config(cs, {"east": "id-east"}))
    assert [(f.source, f.target, f.loop_policy) for f in cfg.flows] == [
        ("east", "west", LoopPolicy.PROVENANCE),
        ("west", "east", LoopPolicy.PROVENANCE),
    ]
    assert cfg.cluster("east").cluster_id == "id-east"
    assert cfg.cluster("west").cluster_id is None
    assert cfg.distribution is None
    assert cfg.schema_mirror is not None and (cfg.schema_mirror.primary, cfg.schema_mirror.targets) == (
        "east",
        ("west",),
    )
    assert cfg.spark.master == "local[2]"


@pytest.mark.parametrize("count", range(3, len(CLUSTER_NAMES) + 1))
def test_three_or_more_clusters_use_copy_flags_over_a_covered_tree(count):
    cs = lab_clusters(count, 19000)
    cfg = parse_config(lab_config(cs, {c.name: f"id-{c.name}" for c in cs}))  # raises on a coverage problem
    names = [c.name for c in cs]
    assert cfg.distribution is not None and cfg.distribution.clusters == set(names)
    assert all(f.loop_policy is LoopPolicy.COPY_FLAGS for f in cfg.flows)
    assert cfg.distribution.coverage_problems([(f.source, f.target) for f in cfg.flows]) == []
    assert cfg.schema_mirror is not None
    assert cfg.schema_mirror.primary == "east" and cfg.schema_mirror.targets == tuple(names[1:])


@pytest.mark.parametrize("count", range(1, len(CLUSTER_NAMES) + 1))
def test_lab_config_yaml_round_trips(count):
    cs = lab_clusters(count, 19000)
    text = lab_config_yaml(cs, {})
    assert text.startswith("# Written by `kafka-dr lab up`")
    cfg = parse_config_text(text)
    assert list(cfg.clusters) == [c.name for c in cs]
    assert cfg.thresholds.heartbeat_max_age_seconds == 120.0


def test_secure_and_proxied_clusters_get_an_internal_listener_and_advertise_the_proxy():
    from kafka_dr.lab.topology import lab_clusters, lab_config

    east, west = lab_clusters(2, 40000, secure=True, proxied=("west",))
    assert (east.bootstrap, east.direct, east.internal_port) == ("127.0.0.1:40000", "127.0.0.1:40002", 40002)
    assert (west.bootstrap, west.direct, west.proxy_port) == ("127.0.0.1:40150", "127.0.0.1:40102", 40150)
    doc = lab_config([east, west], {}, ca_file="/lab/tls/ca.pem")
    client = doc["clusters"]["east"]["client"]
    assert client["security.protocol"] == "SASL_SSL" and client["sasl.mechanisms"] == "SCRAM-SHA-512"
    assert (
        client["sasl.password"] == "${env:KAFKA_DR_LAB_SASL_PASSWORD}"
        and client["ssl.ca.location"] == "/lab/tls/ca.pem"
    )
    plain = lab_config(lab_clusters(2, 40000), {})
    assert (
        "client" not in plain["clusters"]["east"]
        and plain["clusters"]["east"]["bootstrap_servers"] == "127.0.0.1:40000"
    )

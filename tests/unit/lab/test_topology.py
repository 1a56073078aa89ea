"""The lab's generated config is valid for every cluster count it supports."""

from __future__ import annotations

import pytest

from kafka_dr.core.config import LoopPolicy
from kafka_dr.core.config_load import parse_config, parse_config_text
from kafka_dr.lab.topology import (
    CLUSTER_NAMES,
    MAX_BROKERS,
    balanced_tree,
    find_named,
    known_names,
    lab_clusters,
    lab_config,
    lab_config_yaml,
    tree_flows,
)


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


def test_brokers_of_a_cluster_are_ten_ports_apart_and_the_first_keeps_the_cluster_ports():
    east, west = lab_clusters(2, 19000, brokers=3)
    assert [(b.name, b.node_id, b.port, b.controller_port, b.address) for b in west.nodes] == [
        ("west-1", 1, 19100, 19101, "127.0.0.1:19100"),
        ("west-2", 2, 19110, 19111, "127.0.0.1:19110"),
        ("west-3", 3, 19120, 19121, "127.0.0.1:19120"),
    ]
    assert (east.port, east.controller_port) == (19000, 19001)
    assert east.bootstrap == "127.0.0.1:19000,127.0.0.1:19010,127.0.0.1:19020"
    assert east.voters == "1@127.0.0.1:19001,2@127.0.0.1:19011,3@127.0.0.1:19021"
    assert parse_config(lab_config([east, west], {})).cluster("east").bootstrap_servers == east.bootstrap


def test_a_one_broker_cluster_has_one_broker_named_like_it():
    (east,) = lab_clusters(1, 19000)
    assert [(b.name, b.port, b.controller_port) for b in east.nodes] == [("east", 19000, 19001)]
    assert (east.bootstrap, east.direct, east.voters) == ("127.0.0.1:19000", "127.0.0.1:19000", "1@127.0.0.1:19001")


def test_proxied_brokers_are_advertised_at_their_own_proxy_ports():
    (east,) = lab_clusters(1, 40000, proxied=("east",), brokers=3)
    assert [(b.address, b.direct, b.internal_port) for b in east.nodes] == [
        ("127.0.0.1:40050", "127.0.0.1:40002", 40002),
        ("127.0.0.1:40060", "127.0.0.1:40012", 40012),
        ("127.0.0.1:40070", "127.0.0.1:40022", 40022),
    ]
    assert east.bootstrap == "127.0.0.1:40050,127.0.0.1:40060,127.0.0.1:40070"


@pytest.mark.parametrize("brokers", [0, MAX_BROKERS + 1])
def test_broker_count_is_checked(brokers):
    with pytest.raises(ValueError, match=f"--brokers must be between 1 and 5, got {brokers}"):
        lab_clusters(2, 19000, brokers=brokers)


def test_a_cluster_name_means_all_its_brokers_and_a_broker_name_one():
    clusters = lab_clusters(2, 19000, brokers=3)
    east, west = clusters
    assert find_named(clusters, "east") == (east, east.nodes)
    assert find_named(clusters, "west-2") == (west, (west.nodes[1],))
    assert find_named(clusters, "east-4") is None and find_named(clusters, "eest") is None
    assert known_names(clusters) == "east (east-1, east-2, east-3), west (west-1, west-2, west-3)"
    assert known_names(lab_clusters(2, 19000)) == "east, west"
    assert find_named(lab_clusters(2, 19000), "east-1") is None

"""Which topic configs travel with a replicated topic (MM2's DefaultConfigPropertyFilter)."""

from __future__ import annotations

import pytest

from kafka_dr.core.topic_config import replicable_configs

LOCAL = {
    "min.insync.replicas": "2",
    "message.timestamp.type": "LogAppendTime",
    "message.timestamp.difference.max.ms": "60000",
    "message.timestamp.before.max.ms": "60000",
    "message.timestamp.after.max.ms": "3600000",
    "leader.replication.throttled.replicas": "0:1,1:2",
    "follower.replication.throttled.replicas": "*",
    "unclean.leader.election.enable": "true",
    "confluent.placement.constraints": "{}",
}
TRAVELS = {
    "retention.ms": "604800000",
    "cleanup.policy": "compact,delete",
    "max.message.bytes": "2097152",
    "compression.type": "zstd",
    "segment.bytes": "1073741824",
}


@pytest.mark.parametrize("key", sorted(LOCAL))
def test_default_exclusions_are_dropped(key):
    assert replicable_configs({key: LOCAL[key]}) == {}


def test_others_are_kept_with_their_values():
    assert replicable_configs({**LOCAL, **TRAVELS}) == TRAVELS


def test_exclusions_are_full_matches():
    near = {"min.insync.replicas.x": "1", "xmin.insync.replicas": "1", "message.timestamp": "1"}
    assert replicable_configs(near) == near


def test_extra_excludes():
    configs = {**TRAVELS, "retention.bytes": "-1"}
    assert replicable_configs(configs, [r"retention\..*"]) == {
        "cleanup.policy": "compact,delete",
        "max.message.bytes": "2097152",
        "compression.type": "zstd",
        "segment.bytes": "1073741824",
    }
    assert replicable_configs(configs, ("compression.type", "segment.bytes")) == {
        "retention.ms": "604800000",
        "cleanup.policy": "compact,delete",
        "max.message.bytes": "2097152",
        "retention.bytes": "-1",
    }
    # extra excludes add to the defaults, they do not replace them
    assert replicable_configs({**LOCAL, "retention.ms": "1"}, ["cleanup.policy"]) == {"retention.ms": "1"}


def test_empty():
    assert replicable_configs({}) == {}
    assert replicable_configs({}, ["x"]) == {}

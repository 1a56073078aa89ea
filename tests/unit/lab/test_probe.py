"""Partition health as the lab's status counts it."""

from __future__ import annotations

from kafka_dr.lab.probe import partition_health


def test_under_replicated_and_offline_partitions():
    # (leader, replicas, in-sync replicas)
    assert partition_health([(1, 3, 3), (2, 3, 2), (-1, 3, 1), (3, 1, 1)]) == (2, 1)
    assert partition_health([]) == (0, 0)

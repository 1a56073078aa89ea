"""The parity report's pure part: each kind of difference, its severity, the verdict."""

from __future__ import annotations

from types import MappingProxyType

from kafka_dr.core import parity as p
from kafka_dr.core.acl_sync import Acl, AclPlan
from kafka_dr.core.quota_sync import QuotaPlan, entity
from kafka_dr.core.topic_sync import FlowSyncPlan, TopicPlan


def _severities(diffs):
    return sorted((d.area, d.severity) for d in diffs)


def test_the_verdict_is_the_worst_difference_and_notes_do_not_count():
    note = p.Difference("schema registry", p.NOTE, "not set up")
    assert p.verdict([]) == p.READY == p.verdict([note])
    assert p.verdict([note, p.Difference("quotas", p.DEGRADED, "x")]) == p.DEGRADED
    assert p.verdict([p.Difference("topics", p.NOT_READY, "x"), p.Difference("quotas", p.DEGRADED, "y")]) == p.NOT_READY


def test_topics_missing_or_short_of_partitions_block_config_drift_degrades():
    plan = FlowSyncPlan(
        "east_to_west",
        "east",
        "west",
        (
            TopicPlan("orders", "orders", create=True, create_partitions=3),
            TopicPlan("payments", "payments", raise_partitions=(1, 2)),
            TopicPlan("refunds", "refunds", set_configs=MappingProxyType({"retention.ms": ("1", "2")})),
            TopicPlan("_kafka_dr.heartbeats", "_kafka_dr.heartbeats", create=True),
        ),
    )
    diffs = p.topic_differences(plan, "_kafka_dr")
    assert [d.what for d in diffs] == [
        "west/orders missing (east/orders exists)",
        "west/payments has 1 partitions, the source 2",
        "west/refunds: retention.ms is 1, the source 2",
    ]
    assert _severities(diffs) == [("topic configs", p.DEGRADED), ("topics", p.NOT_READY), ("topics", p.NOT_READY)]


def test_a_missing_grant_blocks_a_missing_deny_or_a_stale_grant_degrades():
    allow = Acl("TOPIC", "orders", "LITERAL", "User:app", "*", "READ", "ALLOW")
    deny = Acl("TOPIC", "orders", "LITERAL", "User:bad", "*", "READ", "DENY")
    stale = Acl("GROUP", "old", "LITERAL", "User:app", "*", "READ", "ALLOW")
    diffs = p.acl_differences(AclPlan(create=[allow, deny], delete=[stale]), "west")
    assert [(d.severity, d.what) for d in diffs] == [
        (p.NOT_READY, "missing on west: ALLOW User:app READ on topic orders"),
        (p.DEGRADED, "missing on west: DENY User:bad READ on topic orders"),
        (p.DEGRADED, "on west only (dropped on the source): ALLOW User:app READ on group old"),
    ]


def test_quota_differences_degrade():
    q = (entity(user="app"), "producer_byte_rate")
    diffs = p.quota_differences(
        QuotaPlan(set_values={q: 1024.0}, delete=[(entity(client_id="x"), "request_percentage")]), {}, "west"
    )
    assert [(d.severity, d.what) for d in diffs] == [
        (p.DEGRADED, "user app: producer_byte_rate on west none, source 1024"),
        (p.DEGRADED, "client-id x: request_percentage on west only"),
    ]


def test_scram_users_missing_block_and_extra_ones_are_noted():
    src = {"app": {"SCRAM-SHA-512", "SCRAM-SHA-256"}, "billing": {"SCRAM-SHA-512"}}
    dst = {"app": {"SCRAM-SHA-512"}, "ops": {"SCRAM-SHA-512"}}
    diffs = p.scram_differences(src, dst, "east", "west")
    assert [(d.severity, d.what) for d in diffs] == [
        (p.NOT_READY, "billing has no SCRAM credential on west"),
        (p.DEGRADED, "app lacks SCRAM-SHA-256 on west"),
        (p.NOTE, "ops exists on west only, not on east"),
    ]


def test_groups_need_a_recent_synced_position():
    diffs = p.group_differences(["billing", "audit", "fresh"], {"audit": 900.0, "fresh": 10.0}, 300, "west")
    assert [(d.severity, d.what) for d in diffs] == [
        (p.DEGRADED, "audit: position on west last synced 900 s ago"),
        (p.NOT_READY, "billing has no synced position on west"),
    ]


def test_the_report_round_trips_and_reads_well():
    diffs = [p.Difference("quotas", p.DEGRADED, "q"), p.Difference("topics", p.NOT_READY, "t")]
    report = p.build("east", "west", diffs, ["topics", "quotas"], 1_000)
    assert report["verdict"] == p.NOT_READY and report["differences"][0]["area"] == "topics"
    assert p.decode(p.encode(report)) == report
    assert p.decode(b"{}") is None and p.decode(b"junk") is None
    text = p.format_report({**report, "recorded_age_s": 42})
    assert text.splitlines()[0] == "parity east -> west: not ready (as recorded 42 s ago: east does not answer now)"
    assert "  not ready  topics: t" in text and "  degraded   quotas: q" in text

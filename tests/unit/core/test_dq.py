"""kafka_dr.core.dq with literal values: digests, identity, windows, failure lines, the result."""

from __future__ import annotations

import json
from pathlib import Path

from kafka_dr.core.dq import (
    CheckFailure,
    DataQualityFailed,
    DqResult,
    Origin,
    check_names,
    config_differences,
    failure_lines,
    failures_by_topic,
    identity,
    read_origin,
    record_digest,
    window_bounds,
)
from kafka_dr.core.topic_sync import TopicState, plan_topic

PROV = [("dr.prov", b"1 east orders 2 41 1700000000500")]
LEGACY = [
    ("dr.origin", b"east"),
    ("dr.origin.topic", b"orders"),
    ("dr.origin.part", b"2"),
    ("dr.origin.offset", b"41"),
    ("dr.origin.ts", b"1700000000500"),
]


def test_digest_covers_what_replication_preserves_and_ignores_product_headers():
    base = record_digest(b"k", b"v", [("a", b"1"), ("b", None)], 1700000000000)
    assert 0 <= base < 2**63
    assert (
        record_digest(b"k", b"v", [("a", b"1"), ("b", None)] + PROV + [("dr.copy.flags", b"3")], 1700000000000) == base
    )
    assert record_digest(b"k", b"v", [("a", b"1"), *LEGACY, ("b", None)], 1700000000000) == base
    others = [
        record_digest(b"k", b"v2", [("a", b"1"), ("b", None)], 1700000000000),
        record_digest(b"k", b"v", [("b", None), ("a", b"1")], 1700000000000),  # header order matters
        record_digest(b"k", b"v", [("a", b"1"), ("b", b"")], 1700000000000),  # null != empty
        record_digest(b"k", b"v", [("a", b"1"), ("b", None)], 1700000000001),
        record_digest(None, b"v", [("a", b"1"), ("b", None)], 1700000000000),
        record_digest(b"kv", b"", [("a", b"1"), ("b", None)], 1700000000000),  # boundaries are length-prefixed
    ]
    assert base not in others and len(set(others)) == len(others)


def test_origin_and_identity():
    o = read_origin([("app", b"x"), *PROV])
    assert o == Origin("east", "orders", 2, 41, 1700000000500, False)
    assert read_origin([("app", b"x"), *LEGACY]) == o
    assert identity(o, "west", "orders", 2, 977) == ("east", "orders", 2, 41)
    assert identity(read_origin([("app", b"x")]), "west", "orders", 2, 977) == ("west", "orders", 2, 977)
    broken = read_origin([("dr.origin", b"east"), ("dr.origin.offset", b"forty")])
    assert broken.present and broken.malformed
    assert read_origin([("dr.origin", b"east"), ("dr.origin.topic", b"orders")]).malformed  # incomplete
    assert identity(broken, "west", "orders", 0, 5) == ("west", "orders", 0, 5)
    for bad in (b"1 east orders 2 forty 0", b"2 east orders 2 41 0", b"1 east"):
        assert read_origin([("dr.prov", bad)]) == Origin(cluster="?", malformed=True)


def test_window_bounds():
    assert window_bounds(10, 500, 520) == (10, 500, 520)
    assert window_bounds(10, None, None) == (10, 10, 10)  # nothing replicated yet: empty window
    assert window_bounds(600, 500, 500) == (600, 600, 600)  # retention passed the progress
    assert window_bounds(0, 500, None) == (0, 500, 500)


def test_failure_lines_name_the_check_the_partition_and_the_figures():
    row = {
        "kind": "partition",
        "flow": "east_to_west",
        "source": "east",
        "target": "west",
        "topic": "orders",
        "target_topic": "orders",
        "partition": 3,
        "detail": None,
        "source_count": 60,
        "target_count": 58,
    }
    lines = failure_lines(
        [
            CheckFailure("counts_equal", ("source_count", "target_count"), (row,), 1),
            CheckFailure(
                "topic_config_parity",
                ("differences",),
                (
                    {
                        "kind": "topic_config",
                        "flow": "east_to_west",
                        "source": "east",
                        "target": "west",
                        "topic": "orders",
                        "target_topic": "orders",
                        "differences": 1,
                        "detail": "retention.ms: target 1, source 2",
                    },
                ),
                1,
            ),
            CheckFailure("no_missing", ("missing",), tuple({**row, "partition": p, "missing": 1} for p in range(3)), 7),
        ],
        limit=2,
    )
    assert lines == [
        "counts_equal: flow east_to_west east/orders[3] -> west/orders[3]: source_count=60, target_count=58",
        "topic_config_parity: topic configs flow east_to_west east/orders -> west/orders: "
        "differences=1 (retention.ms: target 1, source 2)",
        "no_missing: flow east_to_west east/orders[0] -> west/orders[0]: missing=1",
        "no_missing: flow east_to_west east/orders[1] -> west/orders[1]: missing=1",
        "no_missing: ... and 5 more row(s)",
    ]


def test_config_differences_from_the_sync_plan():
    src = TopicState("orders", 6, {"retention.ms": "100", "cleanup.policy": "compact", "min.insync.replicas": "2"})
    dst = TopicState("orders", 4, {"retention.ms": "200", "segment.ms": "5", "min.insync.replicas": "1"})
    assert config_differences(plan_topic(src, dst, "orders")) == [
        "partitions: target 4, source 6",
        "cleanup.policy: target (default), source compact",
        "retention.ms: target 200, source 100",
        "segment.ms: target 5, source (default)",
    ]
    assert config_differences(plan_topic(src, None, "orders")) == ["missing on the target"]
    owned = plan_topic(
        src, TopicState("orders", 6, {"retention.ms": "200"}), "orders", sync_configs=False, config_owner="west"
    )
    assert config_differences(owned) == [
        "cleanup.policy: target (default), source compact",
        "retention.ms: target 200, source 100",
    ]


def test_result_record_and_exception():
    r = DqResult(
        False,
        ["no_missing: flow f east/t[0] -> west/t[0]: missing=2"],
        "/x/index.html",
        "dq-1",
        1700000000000,
        4,
        failed_by_topic={"t": 1},
    )
    assert r.to_record() == {
        "run_id": "dq-1",
        "ts_ms": 1700000000000,
        "success": False,
        "checked_partitions": 4,
        "failed": ["no_missing: flow f east/t[0] -> west/t[0]: missing=2"],
        "docs_path": "/x/index.html",
        "failed_by_topic": {"t": 1},
    }
    e = DataQualityFailed(r)
    assert (
        e.result is r
        and "FAILED, 4 topic-partition(s)" in str(e)
        and "missing=2" in str(e)
        and "/x/index.html" in str(e)
    )


def test_failures_are_counted_per_topic():
    failures = [
        CheckFailure("no_missing", ("missing",), ({"topic": "orders", "partition": 0}, {"topic": "orders"})),
        CheckFailure("schemas_equal", (), ({"topic": "_schemas"}, {"kind": "other"})),
    ]
    assert failures_by_topic(failures) == {"orders": 2, "_schemas": 1, "": 1}
    # every compared topic has its figure, 0 when it passed: a per-topic verdict for each
    assert failures_by_topic(failures, checked={"orders", "payments"}) == {
        "orders": 2,
        "payments": 0,
        "_schemas": 1,
        "": 1,
    }


def test_suite_files_name_every_check():
    folder = Path(__file__).resolve().parents[3] / "expectations"
    docs = [json.loads(p.read_text()) for p in sorted(folder.glob("kafka_dr_*.json"))]
    assert check_names(docs) == [
        "counts_equal",
        "checksums_equal",
        "no_missing",
        "no_duplicates",
        "no_unexpected",
        "in_order",
        "latency_p99_under_threshold",
        "provenance_not_own_cluster",
        "provenance_complete",
        "schema_registry_equal",
        "topic_config_parity",
    ]

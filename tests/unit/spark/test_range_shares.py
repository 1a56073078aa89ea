"""A fixed-range micro-batch is one task per share of ranges, not one per partition
(kafka_dr.spark.source, kafka_dr.core.task_shares)."""

from types import SimpleNamespace

from kafka_dr.spark import source
from kafka_dr.spark.source import RangePartition, RangeShare, ReplicationStreamReader


def _reader(options: dict) -> ReplicationStreamReader:
    reader = ReplicationStreamReader(options)
    reader._planner = SimpleNamespace(target_topic=lambda t: f"{t}.copy")
    return reader


START = {"a": {"0": 0, "1": 10, "2": 0}, "b": {"0": 5}}
END = {"a": {"0": 100, "1": 10, "2": 40}, "b": {"0": 65}}


def _ranges(parts) -> list[tuple]:
    return [(r.topic, r.partition, r.start, r.end, r.target_topic) for r in parts]


def test_ranges_are_shared_out_among_the_tasks_and_none_is_lost():
    parts = _reader({"range_tasks": "2"}).partitions(START, END)
    assert all(isinstance(p, RangeShare) for p in parts)
    assert [_ranges(p.ranges) for p in parts] == [
        [("a", 0, 0, 100, "a.copy")],
        [("a", 2, 0, 40, "a.copy"), ("b", 0, 5, 65, "b.copy")],
    ], "the 100-record range alone, the two others (40 + 60) together; the empty range a[1] not at all"


def test_without_range_tasks_every_range_is_its_own_task():
    parts = _reader({}).partitions(START, END)
    assert all(isinstance(p, RangePartition) for p in parts)
    assert _ranges(parts) == [("a", 0, 0, 100, "a.copy"), ("a", 2, 0, 40, "a.copy"), ("b", 0, 5, 65, "b.copy")]


def test_a_share_yields_one_metrics_row_per_range_in_its_order(monkeypatch):
    reader = ReplicationStreamReader({})
    copied = []

    def copy(r):
        copied.append((r.topic, r.partition))
        return {**dict.fromkeys(source.FIELDS, 0), "topic": r.topic, "partition": r.partition}

    monkeypatch.setattr(reader, "_copy", copy)
    share = RangeShare([RangePartition("a", 2, 0, 40, "a"), RangePartition("b", 0, 5, 65, "b")])
    rows = list(reader.read(share))
    topic, partition = source.FIELDS.index("topic"), source.FIELDS.index("partition")
    assert [(r[topic], r[partition]) for r in rows] == copied == [("a", 2), ("b", 0)]

"""Helpers for integration tests: produce varied records, read clusters back, check replicas.

The replica check is exact. Every record produced on any cluster is identified by
(origin cluster, origin partition, origin offset): on its own cluster by where it sits, on
every other cluster by its provenance headers. A cluster passes when it holds every expected
record exactly once, nothing else, with key, value, own headers and timestamp equal to the
original, and per partition in the original order.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml

from kafka_dr.core.provenance import Provenance, has_origin, strip_product_headers
from kafka_dr.kafka import clients
from kafka_dr.kafka.reading import Record, read_partitions
from kafka_dr.kafka.topics import partition_count
from kafka_dr.kafka.writing import produce_all


@dataclass(frozen=True)
class Sent:
    cluster: str
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple
    timestamp_ms: int


def narrowed_config(lab, tmp_path: Path, topic: str) -> Path:
    """The lab's config with every flow narrowed to ``topic`` (tests must not copy each other's
    topics), written to ``tmp_path``."""
    doc = yaml.safe_load(lab.config_file.read_text())
    for f in doc["flows"]:
        f["topics"] = {"allow": [topic]}
    path = tmp_path / "kafka-dr.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def varied_rows(tag: str, n: int, partitions: int, t0_ms: int | None = None):
    """Rows covering what replication must preserve: null keys, tombstones, repeated and
    binary headers, headers with null values, explicit old timestamps."""
    t0 = t0_ms or int(time.time() * 1000) - 3_600_000
    for i in range(n):
        kind = i % 5
        key = None if kind == 1 else f"{tag}-k{i % 50}".encode()
        value = None if kind == 2 else f"{tag}-v{i}".encode() + bytes([i % 256, 0, 255])
        headers = [("app", tag.encode())]
        if kind == 3:
            headers += [("rep", b"1"), ("bin", bytes([0, 1, 2, 254, 255])), ("rep", b"2")]
        if kind == 4:
            headers += [("nullv", None)]
        yield key, value, headers, t0 + i, i % partitions


def produce_varied(cluster_cfg, topic: str, tag: str, n: int, partitions: int) -> list[Sent]:
    """Produce ``n`` varied rows and return them with the offsets they got (read back)."""
    rows = list(varied_rows(tag, n, partitions))
    produce_all(clients.producer(cluster_cfg), topic, rows)
    return [r for r in read_sent(cluster_cfg, topic) if any(v == tag.encode() for k, v in r.headers if k == "app")]


def read_topic(cluster_cfg, topic: str, group: str = "kafka-dr-tests") -> list[Record]:
    n = partition_count(clients.admin(cluster_cfg), topic)
    if n is None:
        return []
    c = clients.consumer(cluster_cfg, group_id=group)
    try:
        return read_partitions(c, topic, list(range(n)), timeout=60)
    finally:
        c.close()


def read_topic_settled(cluster_cfg, topic: str, expected: int, timeout: float = 30.0) -> list[Record]:
    """:func:`read_topic` once it holds ``expected`` records, or after ``timeout``: a transaction's
    commit returns before its markers reach the partitions, and until they do a ``read_committed``
    read ends at the transaction's first record."""
    deadline = time.monotonic() + timeout
    while len(records := read_topic(cluster_cfg, topic)) < expected and time.monotonic() < deadline:
        time.sleep(0.5)
    return records


def stop_once_replicated(job, stop_file: Path, log: Path, cluster_cfg, topic: str, expected: int, timeout: float):
    """Wait until ``topic`` on ``cluster_cfg`` holds ``expected`` records (or ``timeout``), with
    the continuous ``job`` still running, then stop it with its stop file; it must exit 0."""
    deadline = time.monotonic() + timeout
    while len(read_topic(cluster_cfg, topic)) < expected and time.monotonic() < deadline:
        assert job.poll() is None, f"the job ended early; see {log}"
        time.sleep(1)
    stop_file.touch()
    assert job.wait(120) == 0, f"see {log}"


def read_sent(cluster_cfg, topic: str) -> list[Sent]:
    """Records produced locally on this cluster (no provenance), as ``Sent``."""
    return [
        Sent(cluster_cfg.name, r.topic, r.partition, r.offset, r.key, r.value, r.headers, r.timestamp_ms)
        for r in read_topic(cluster_cfg, topic)
        if not has_origin(r.headers)
    ]


def identity(record: Record, here: str) -> tuple[str, int, int]:
    p = Provenance.from_headers(record.headers)
    if p is None:
        return (here, record.partition, record.offset)
    return (p.cluster, p.partition, p.offset)


def check_replica(here: str, records: list[Record], expected: list[Sent], source_topic: str | None = None) -> dict:
    """Assert ``records`` (one cluster's topic) hold exactly ``expected``. Returns counts."""
    by_id = {(s.cluster, s.partition, s.offset): s for s in expected}
    ids = [identity(r, here) for r in records]
    counts = Counter(ids)
    dups = {i: c for i, c in counts.items() if c > 1}
    missing = sorted(set(by_id) - set(counts))
    extra = sorted(set(counts) - set(by_id))
    assert not dups, f"{here}: {len(dups)} record(s) present more than once, e.g. {list(dups.items())[:3]}"
    assert not missing, f"{here}: {len(missing)} record(s) missing, e.g. {missing[:5]}"
    assert not extra, f"{here}: {len(extra)} unexpected record(s), e.g. {extra[:5]}"
    last_seen: dict[tuple[int, str, int], int] = {}
    for r, i in zip(records, ids):
        s = by_id[i]
        assert r.key == s.key and r.value == s.value, f"{here}: key/value differ for {i}"
        assert tuple(strip_product_headers(r.headers)) == tuple(s.headers), (
            f"{here}: headers differ for {i}: {r.headers} vs {s.headers}"
        )
        assert r.timestamp_ms == s.timestamp_ms, f"{here}: timestamp differs for {i}"
        assert r.partition == s.partition, f"{here}: {i} landed in partition {r.partition}"
        if i[0] != here and source_topic is not None:
            assert Provenance.from_headers(r.headers).topic == source_topic
        k = (r.partition, i[0], i[1])
        assert last_seen.get(k, -1) < i[2], f"{here}: order broken in partition {r.partition} for records from {i[0]}"
        last_seen[k] = i[2]
    per_origin = defaultdict(int)
    for i in ids:
        per_origin[i[0]] += 1
    return dict(per_origin)

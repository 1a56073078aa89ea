"""Data quality across clusters, the pure part: record identity and digest, comparison windows,
the failure messages, and the run's result.

The comparison (``kafka_dr.spark.comparison``) reads both sides of every flow's
topic-partitions and needs three per-record answers that must be the same wherever they are
computed, so they live here:

- **identity**: a record is the same record on every cluster when its first-hop origin is the
  same (cluster, topic, partition, offset): its provenance headers when it has them, where it
  sits otherwise (:func:`identity`);
- **digest**: a stable 63-bit hash of what replication must preserve: key, value, the record's
  own headers (order and repeats kept; this product's ``dr.*`` headers left out) and timestamp
  (:func:`record_digest`). A partition's checksum is the *sum* of its digests: independent of
  order, so it compares the content, and the order is checked separately;
- **window**: the offsets compared, closed at the replicated watermark (:class:`PartitionWindow`),
  so records still in flight are not reported as missing;
- **compacted topics**: each cluster's log cleaner drops superseded values on its own
  schedule, so there only the latest record of each key is compared (``kafka_dr.core.window_tally``).

Nothing here does I/O.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_dr.core.provenance import MALFORMED, PRODUCT_KEYS, Headers, raw_fields

_NONE = b"\xff\xff\xff\xff"  # length marker of a null key/value/header value
_LEN = struct.Struct(">I")
_TS = struct.Struct(">q")
_MASK63 = (1 << 63) - 1


def record_digest(key: bytes | None, value: bytes | None, headers: Headers | None, timestamp_ms: int) -> int:
    """A 63-bit digest of a record's key, value, own headers (in order) and timestamp.

    Every part is length-prefixed (a null has its own marker), so ``("ab", "c")`` and
    ``("a", "bc")`` differ and a null differs from an empty value. 63 bits keep the value a
    positive ``long`` for Spark; partition checksums are sums of digests.
    """
    parts = []  # one hash call over the joined parts: the same digest as feeding them one by one
    for part in (key, value):
        if part is None:
            parts.append(_NONE)
        else:
            parts.append(_LEN.pack(len(part)))
            parts.append(part)
    for k, v in headers or ():
        if k in PRODUCT_KEYS:
            continue
        kb = k.encode()
        parts.append(_LEN.pack(len(kb)))
        parts.append(kb)
        if v is None:
            parts.append(_NONE)
        else:
            parts.append(_LEN.pack(len(v)))
            parts.append(v)
    parts.append(_TS.pack(timestamp_ms))
    return int.from_bytes(hashlib.blake2b(b"".join(parts), digest_size=8).digest(), "big") & _MASK63


def key_digest(key: bytes | None) -> int | None:
    """A 63-bit digest of a record key (``None`` for a null key): groups a compacted
    partition's records by key without carrying the key itself."""
    if key is None:
        return None
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") & _MASK63


def is_compacted(cleanup_policy: str | None) -> bool:
    """Whether a topic's ``cleanup.policy`` (``compact``, ``delete`` or both) compacts."""
    return "compact" in {p.strip() for p in (cleanup_policy or "").split(",")}


@dataclass(frozen=True)
class Origin:
    """What a record's provenance headers say (``None`` fields: header absent)."""

    cluster: str | None = None
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    first_replicated_ms: int | None = None
    malformed: bool = False  #: an origin is named but cannot be stated completely

    @property
    def present(self) -> bool:
        return self.cluster is not None


def read_origin(headers: Headers | None) -> Origin:
    """The provenance of a record, tolerant: a malformed header is flagged, not raised
    (data quality reports it; it must not stop the comparison)."""
    fields = raw_fields(headers)
    if fields is None:
        return Origin()
    if fields is MALFORMED:
        return Origin(cluster="?", malformed=True)
    c, t, p, o, s = fields
    try:
        cluster = (c or b"").decode()
        topic = t.decode() if t else None
        part = int(p) if p else None
        off = int(o) if o else None
        ts = int(s) if s else None
    except (ValueError, UnicodeDecodeError):
        return Origin(cluster="?", malformed=True)
    malformed = not cluster or topic is None or part is None or off is None or ts is None
    return Origin(cluster, topic, part, off, ts, malformed)


def identity(origin: Origin, cluster: str, topic: str, partition: int, offset: int) -> tuple[str, str, int, int]:
    """The record's identity on every cluster: its first-hop origin, or where it sits now."""
    if origin.present and not origin.malformed:
        return origin.cluster, origin.topic, origin.partition, origin.offset  # type: ignore[return-value]
    return cluster, topic, partition, offset


@dataclass(frozen=True)
class PartitionWindow:
    """One flow's source topic-partition and the offsets the comparison covers.

    Source records ``[start, end)`` are compared: ``start`` is the source's log start (older
    records are gone there), ``end`` the flow's committed progress read *before* the target's
    end offset ``target_end``. The progress read again *after* it (``limit``) bounds what the
    target can legitimately hold: a copy naming a source offset at or past ``limit`` cannot
    have been written by the flow. Copies naming offsets in ``[end, limit)`` were in flight
    while the comparison read: not compared, not reported (the first one's target offset is
    where an incremental run's next target window starts).
    """

    flow: str
    source: str
    target: str
    topic: str
    target_topic: str
    partition: int
    start: int
    end: int
    limit: int
    target_start: int = 0
    target_end: int = 0
    compacted: bool = False  #: the source topic's ``cleanup.policy`` compacts: compare latest per key
    #: source offsets below it were verified by an earlier run (``kafka_dr.core.dq_watermark``):
    #: a copy of one inside this window is a duplicate. ``None``: a full window.
    verified_end: int | None = None

    @property
    def where(self) -> str:
        return f"{self.source}/{self.topic}[{self.partition}] -> {self.target}/{self.target_topic}[{self.partition}]"


def window_bounds(log_start: int, progress_before: int | None, progress_after: int | None) -> tuple[int, int, int]:
    """``(start, end, limit)`` of a window from the source log start and the progress read
    before and after the target's end offsets. No progress yet: an empty window at the log
    start (nothing is replicated; anything on the target naming it is unexpected)."""
    end = max(progress_before if progress_before is not None else log_start, log_start)
    limit = max(progress_after if progress_after is not None else end, end)
    return log_start, end, limit


# --- expectations and their failures -----------------------------------------------------

#: Identity columns GX reports for every unexpected row (``unexpected_index_column_names``).
INDEX_COLUMNS = ("kind", "flow", "source", "target", "topic", "target_topic", "partition", "detail")

#: The comparison DataFrame's columns, in order (``kind``: partition | schema_registry | topic_config).
COMPARISON_COLUMNS = (
    "kind",
    "flow",
    "source",
    "target",
    "topic",
    "target_topic",
    "partition",
    "window_start",
    "window_end",
    "source_count",
    "target_count",
    "missing",
    "duplicated",
    "unexpected",
    "out_of_order",
    "source_checksum",
    "target_checksum",
    "latency_p50_ms",
    "latency_p99_ms",
    "self_origin",
    "malformed_provenance",
    "differences",
    "detail",
)


@dataclass(frozen=True)
class CheckFailure:
    """One failed expectation: its check name, the columns it looks at, and the rows (dicts)
    it found unexpected."""

    check: str
    columns: tuple[str, ...]
    rows: tuple[Mapping[str, Any], ...]
    unexpected_count: int = 0


def describe_row(row: Mapping[str, Any]) -> str:
    """Where a comparison row is: a topic-partition of a flow, a registry pair, a topic's configs."""
    kind = row.get("kind")
    if kind == "partition":
        return (
            f"flow {row.get('flow')} {row.get('source')}/{row.get('topic')}[{row.get('partition')}] "
            f"-> {row.get('target')}/{row.get('target_topic')}[{row.get('partition')}]"
        )
    if kind == "schema_registry":
        return (
            f"schema registry {row.get('source')}/{row.get('topic')} -> {row.get('target')}/{row.get('target_topic')}"
        )
    if kind == "topic_config":
        return (
            f"topic configs flow {row.get('flow')} {row.get('source')}/{row.get('topic')} "
            f"-> {row.get('target')}/{row.get('target_topic')}"
        )
    return str(dict(row))


def failures_by_topic(failures: Iterable[CheckFailure], checked: Iterable[str] = ()) -> dict[str, int]:
    """How many unexpected rows each topic has across the failed checks (rows without a topic
    count under ``""``); every ``checked`` topic is there, with 0 when nothing failed in it."""
    out: dict[str, int] = dict.fromkeys(checked, 0)
    for f in failures:
        for row in f.rows:
            topic = str(row.get("topic") or "")
            out[topic] = out.get(topic, 0) + 1
    return out


def failure_lines(failures: Iterable[CheckFailure], limit: int = 50) -> list[str]:
    """One line per (check, row): ``<check>: <where>: <figures or detail>``. At most ``limit``
    rows per check are named; the rest are counted."""
    out: list[str] = []
    for f in failures:
        for row in f.rows[:limit]:
            figures = [f"{c}={row[c]}" for c in f.columns if row.get(c) is not None]
            detail = row.get("detail")
            tail = ", ".join(figures) + (f" ({detail})" if detail else "")
            out.append(f"{f.check}: {describe_row(row)}" + (f": {tail}" if tail else ""))
        more = max(f.unexpected_count, len(f.rows)) - min(len(f.rows), limit)
        if more > 0:
            out.append(f"{f.check}: ... and {more} more row(s)")
    return out


@dataclass(frozen=True)
class DqResult:
    """One data-quality run. ``failures`` name the expectation and where it failed."""

    success: bool
    failures: list[str] = field(default_factory=list)
    docs_path: str | None = None
    run_id: str = ""
    ts_ms: int = 0
    checked_partitions: int = 0
    figures: Mapping[str, Any] = field(default_factory=dict)
    #: failed checks per source topic (a registry's or a config row's topic too), 0 for each
    #: compared topic that passed
    failed_by_topic: Mapping[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        head = (
            f"data quality {self.run_id}: {'PASSED' if self.success else 'FAILED'}, "
            f"{self.checked_partitions} topic-partition(s) compared"
        )
        if self.docs_path:
            head += f"; Data Docs: {self.docs_path}"
        if self.failures:
            head += f"\n{len(self.failures)} failure(s):\n  - " + "\n  - ".join(self.failures)
        return head

    def to_record(self) -> dict[str, Any]:
        """The JSON record published on ``<prefix>.dq-results`` (the status page reads it)."""
        return {
            "run_id": self.run_id,
            "ts_ms": self.ts_ms,
            "success": self.success,
            "failed": list(self.failures),
            "checked_partitions": self.checked_partitions,
            "docs_path": self.docs_path,
            "failed_by_topic": dict(self.failed_by_topic),
        }


class DataQualityFailed(RuntimeError):
    """A validation failed; the message names every failing expectation and where."""

    def __init__(self, result: DqResult) -> None:
        self.result = result
        super().__init__(result.summary())


def check_names(suites: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ``meta.check`` names of the expectations in suite documents (for reviews and tests)."""
    return [e.get("meta", {}).get("check", e["type"]) for s in suites for e in s.get("expectations", ())]


def config_differences(plan) -> list[str]:
    """What differs between a replicated topic and its copy, from its
    :class:`~kafka_dr.core.topic_sync.TopicPlan` (the sync's own diff, so both agree on what
    counts: replicable, explicitly set configs; excluded ones are not differences)."""
    out: list[str] = []
    if plan.create:
        out.append("missing on the target")
    if plan.raise_partitions:
        out.append(f"partitions: target {plan.raise_partitions[0]}, source {plan.raise_partitions[1]}")
    if plan.target_larger:
        out.append(f"partitions: target {plan.target_larger[1]}, source {plan.target_larger[0]}")
    for k, (before, to) in sorted(plan.set_configs.items()):
        out.append(f"{k}: target {before if before is not None else '(default)'}, source {to}")
    for k, v in sorted(plan.delete_configs.items()):
        out.append(f"{k}: target {v}, source (default)")
    for k, (s, t) in sorted(plan.not_owned.items()):
        out.append(f"{k}: target {t if t is not None else '(default)'}, source {s if s is not None else '(default)'}")
    return out

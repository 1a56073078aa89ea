"""What a range copy is asked to do, and what it reports."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from kafka_dr.core.loop import Transform

#: the end of an open range: copy what arrives until told to stop (continuous flows' streaming tasks)
OPEN = 2**62
#: a range's counters, each what its copy did: added up across a task's copies and a stream's rows
COUNTED = (
    "read",
    "written",
    "filtered",
    "bytes",
    "lost_to_retention",
    "transactions",
    "dead_lettered",
    "aborted",
    "refused",
)

#: ``on_commit(result, next_offset, new latency samples)``: see :meth:`~kafka_dr.kafka.copier.RangeCopier.copy`
OnCommit = Callable[["RangeResult", int, list], None]


@dataclass(frozen=True)
class RangeSpec:
    """One source partition's planned range ``[start, end)`` and where it goes (``end`` may
    be :data:`OPEN`)."""

    topic: str
    partition: int
    start: int
    end: int
    target_topic: str


@dataclass(frozen=True)
class Reseed:
    """What a copy does beyond the flow's loop policy (failback's re-seed of a rebuilt cluster).

    :param transform: replaces the flow's loop-policy transform (the re-seed's provenance rewrite)
    :param keep_timestamp: records whose timestamp it refuses are filtered (the resync's time window)
    :param seed_map_topic: record runs of (source offset, target offset) in this topic of the
        target, in the same transaction as the records
    """

    transform: Transform | None = None
    keep_timestamp: Callable[[int], bool] | None = None
    seed_map_topic: str | None = None


@dataclass
class RangeResult:
    """What one range copy did; one row of the job's metrics."""

    flow: str
    topic: str
    partition: int
    target_topic: str
    planned_start: int
    start: int
    end: int
    read: int = 0
    written: int = 0
    filtered: int = 0
    bytes: int = 0
    lost_to_retention: int = 0
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    transactions: int = 0
    seconds: float = 0.0
    dead_lettered: int = 0
    #: transactions rolled back and redone because the target refused a record in them
    aborted: int = 0
    #: records the target refused (each refusal a larger request or a dead letter answered)
    refused: int = 0
    #: source records beyond this range when it finished (high watermark - end): how far behind
    lag: int = 0
    #: the source offsets of the newest loss counted in ``lost_to_retention`` (inclusive), or None
    lost_first: int | None = None
    lost_last: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def add_lost(self, first: int, last: int) -> None:
        """Count source offsets ``first..last`` as deleted on the source before they were replicated."""
        self.lost_to_retention += last - first + 1
        self.lost_first, self.lost_last = first, last

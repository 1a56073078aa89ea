"""Records the source deleted before a flow first copied a partition: counted and said once.

A flow's first copy of a partition starts at the source's log start. When retention or
DeleteRecords moved that start past 0 before the flow ever ran, the records below it were
never replicated: :func:`~kafka_dr.core.progress.first_run_gap` names them, and the copier
counts them in ``lost_to_retention`` (the same counter as records deleted after the flow had
progress) with a warning, not an error: nothing the flow could have copied.

Only a real first run counts: no committed progress *and* no copy of the partition on the
target (copies without progress are lost progress, which the job refuses or resumes after,
``--reset-progress``). Each copier remembers what it reported per partition, so a copy that
starts again before anything was committed (a partition whose log is empty past its start, a
redo) does not report the same offsets twice. The heartbeat topic is left out: it keeps a day
of heartbeats, so a flow set up later always starts past 0 there, and old heartbeats are no data.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.progress import first_run_gap

if TYPE_CHECKING:
    from kafka_dr.kafka.copy_spec import RangeResult, RangeSpec

log = logging.getLogger(__name__)


class FirstRunGaps:
    """One copier's check of its partitions' first copies.

    :param has_copy: does the target hold a copy of this partition made by the flow? (a scan
        of the target, asked only when a gap is otherwise there)"""

    def __init__(self, cfg: DrConfig, flow: FlowConfig, has_copy: Callable[[RangeSpec], bool]) -> None:
        self.flow, self.has_copy, self.heartbeat_topic = flow, has_copy, cfg.names.heartbeat_topic
        self._reported: dict[tuple[str, int], int] = {}  #: (topic, partition) -> first offset not reported lost

    def check(self, spec: RangeSpec, committed: int | None, log_start: int, start: int, result: RangeResult) -> None:
        """Count and log the records below ``log_start`` that a first copy starting at ``start``
        never saw; nothing when it is no first copy or they were reported already."""
        key = (spec.topic, spec.partition)
        if spec.topic == self.heartbeat_topic:
            return
        gap = first_run_gap(committed, log_start, start, self._reported.get(key, 0))
        if gap is None:
            return
        self._reported[key] = log_start
        if self.has_copy(spec):
            return  # copies without progress: lost progress, decided by the job's start (lost_progress_starts)
        first, last = gap
        result.add_lost(first, last)
        log.warning(
            "flow %s: %s/%s[%d] records %d..%d were deleted on the source before this flow first copied the partition "
            "(retention or DeleteRecords): never replicated, counted in lost_to_retention; copying starts at its log "
            "start %d",
            self.flow.name,
            self.flow.source,
            spec.topic,
            spec.partition,
            first,
            last,
            log_start,
        )

"""Counters and the latency histogram, added up from the rows replication jobs publish (pure).

Each row is one partition range of one micro-batch (:mod:`kafka_dr.spark.metrics_sink`):
its ``written``, ``bytes``, ``transactions``, ``aborted``, ``refused``, ``dead_lettered`` and
``lost_to_retention`` add to the flow's counters; its ``latency_p50_ms`` is one observation of the end-to-end
latency (when it copied something); ``restarts`` is the job's own running count, so its
increases are counted, and a smaller figure means a new job (counted from zero).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from kafka_dr.core.metric_catalog import LATENCY_BUCKETS

#: (metric field in the row, counter key)
ROW_COUNTS = (
    ("written", "records_copied"),
    ("bytes", "bytes_copied"),
    ("dead_lettered", "records_dead_lettered"),
    ("refused", "records_refused"),
    ("lost_to_retention", "records_lost_to_retention"),
)

#: (metric field in the row, counter key) of the counters per flow
FLOW_COUNTS = (("transactions", "transactions_committed"), ("aborted", "transactions_aborted"))


@dataclass
class Histogram:
    counts: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS) + 1))  #: per bucket, +Inf last
    total: float = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.total += seconds

    def cumulative(self) -> list[tuple[str, int]]:
        """``(le, count)`` pairs as Prometheus stores them, ``+Inf`` last."""
        out, running = [], 0
        for bound, n in zip((*(str(b) for b in LATENCY_BUCKETS), "+Inf"), self.counts):
            running += n
            out.append((bound, running))
        return out


@dataclass
class Counters:
    """Everything counted so far. ``by_topic[(counter, flow, topic)]``, ``by_flow[(counter, flow)]``."""

    by_topic: dict[tuple[str, str, str], float] = field(default_factory=dict)
    by_flow: dict[tuple[str, str], float] = field(default_factory=dict)
    latency: dict[str, Histogram] = field(default_factory=dict)
    last_batch_ms: dict[str, int] = field(default_factory=dict)
    _restarts_seen: dict[str, int] = field(default_factory=dict)

    def add(self, rows: list[dict], flows: set[str]) -> None:
        """Count ``rows`` of the config's ``flows`` (rows of other flows are left out)."""
        for r in rows:
            flow, topic = r.get("flow"), r.get("topic")
            if flow not in flows or not isinstance(topic, str):
                continue
            for column, name in ROW_COUNTS:
                if isinstance(r.get(column), int | float) and r[column] > 0:
                    key = (name, flow, topic)
                    self.by_topic[key] = self.by_topic.get(key, 0) + r[column]
            for column, name in FLOW_COUNTS:
                if isinstance(r.get(column), int) and r[column] > 0:
                    key = (name, flow)
                    self.by_flow[key] = self.by_flow.get(key, 0) + r[column]
            self._restarts(flow, r.get("restarts"))
            if (r.get("written") or 0) > 0 and isinstance(r.get("latency_p50_ms"), int | float):
                self.latency.setdefault(flow, Histogram()).observe(r["latency_p50_ms"] / 1000)
            if isinstance(r.get("at_ms"), int):
                self.last_batch_ms[flow] = max(self.last_batch_ms.get(flow, 0), r["at_ms"])

    def _restarts(self, flow: str, count) -> None:
        if not isinstance(count, int):
            return
        seen = self._restarts_seen.get(flow)
        if seen is not None and count != seen:
            grew = count - seen if count > seen else count  # smaller: a new job, counting from 0
            key = ("job_restarts", flow)
            self.by_flow[key] = self.by_flow.get(key, 0) + grew
        self._restarts_seen[flow] = count

"""The replication query's ``foreachBatch`` and the run's summary.

Each micro-batch's per-partition rows (one small row per partition range: nothing big reaches
the driver) are logged as one JSON line each (``kafka_dr.metrics {...}``), published to
``<prefix>.metrics`` on the target cluster, where the heartbeat, status and data-quality
features read them (docs/replication.md, "Metrics"), and added up in :class:`JobSummary`.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.formats import stamped

log = logging.getLogger("kafka_dr.replicate")


@dataclass
class JobSummary:
    flow: str
    batches: int = 0
    records_written: int = 0
    records_filtered: int = 0
    restarts: int = 0
    stopped_by: str = ""
    written_by_topic: dict = field(default_factory=dict)
    #: source records deleted before they were replicated (a first run's log start past 0 included)
    lost_to_retention: int = 0
    #: what the run warned of (records lost to retention, a selection that matches no topic)
    warnings: list = field(default_factory=list)

    def count(self, flow: FlowConfig, row: dict) -> None:
        """Add one metrics row's figures; records lost to retention are warned of."""
        written = row["written"] or 0
        self.records_written += written
        self.written_by_topic[row["topic"]] = self.written_by_topic.get(row["topic"], 0) + written
        self.records_filtered += row["filtered"] or 0
        if row["lost_to_retention"]:
            self.lost_to_retention += row["lost_to_retention"]
            self.warnings.append(lost_warning(flow, row))
            log.warning("%s", self.warnings[-1])


class MetricsSink:
    """The query's ``foreachBatch``: each micro-batch's rows (one small row per partition range,
    so nothing big reaches the driver) are logged, published to the metrics topic on the target
    and counted in :attr:`summary`; a continuous flow's topic selection is checked after each."""

    def __init__(self, cfg: DrConfig, flow: FlowConfig, continuous: bool) -> None:
        from kafka_dr.core.secret_refs import env_resolver
        from kafka_dr.kafka import clients
        from kafka_dr.kafka.selection import SelectionWatch

        self.flow, self.continuous, self.topic = flow, continuous, cfg.names.metrics_topic
        _ensure_metrics_topic(cfg, flow, self.topic)
        self.producer = clients.producer(cfg.cluster(flow.target), env_resolver())
        self.summary = JobSummary(flow.name)
        self.selection = SelectionWatch(cfg, flow, env_resolver())
        #: when a micro-batch last completed or no trigger ran (the stall watchdog, supervise)
        self.last_batch = [time.monotonic()]
        #: when a micro-batch last completed, else when the job started: how long the flow has
        #: copied nothing when a query fails (the restart alert waits for an outage, job.py)
        self.progressed_at = time.monotonic()
        #: a query of this job has started: its copy runs (the group-offset sync may begin)
        self.query_started = False

    def __call__(self, df, batch_id: int) -> None:
        from kafka_dr.spark.source import FIELDS

        self.record([{k: row[k] for k in FIELDS} for row in df.collect()], batch_id)

    def record(self, rows: list[dict], batch_id: int) -> None:
        """One micro-batch's (or an incremental run's) metrics rows, as dicts of the source's fields."""
        for d in rows:
            d["batch"] = batch_id
            d["at_ms"] = int(time.time() * 1000)
            # the job's restarts so far: the exporter counts their increases (kafka_dr.exporter)
            d["restarts"] = self.summary.restarts
            self._publish(d)
            self.summary.count(self.flow, d)
        self.producer.flush(30)
        if self.continuous:
            self.watch_selection()
        self.summary.batches += 1
        self.last_batch[0] = self.progressed_at = time.monotonic()
        if self.summary.batches == 1:
            log.info("timeline: first batch")

    def _publish(self, row: dict) -> None:
        line = json.dumps(stamped(row), separators=(",", ":"))
        log.info("kafka_dr.metrics %s", line)
        self.producer.produce(self.topic, key=self.flow.name.encode(), value=line.encode())

    def watch_selection(self) -> None:
        """Warn (once, then hourly) while the flow's selection matches no topic on its source."""
        empty = self.selection.check()  # logs its warning
        if empty is not None:
            self.summary.warnings.append(str(empty))


def _ensure_metrics_topic(cfg: DrConfig, flow: FlowConfig, topic: str) -> None:
    """Create the metrics topic on the target (a week's retention) unless it exists; a failure
    names the cluster and why (refused credentials, or no answer)."""
    from kafka_dr.core.secret_refs import env_resolver
    from kafka_dr.kafka import clients
    from kafka_dr.kafka.topics import ensure_topic

    target = cfg.cluster(flow.target)
    try:
        ensure_topic(
            clients.admin(target, env_resolver()), topic, partitions=1, config={"retention.ms": str(7 * 86400 * 1000)}
        )
    except Exception as e:  # noqa: BLE001 - named: refused credentials, or which cluster did not answer
        what = f"flow {flow.name}: creating {topic} on target"
        raise clients.unreachable(target, what, str(e), env_resolver()) from None


def lost_warning(flow, row: dict) -> str:
    """The job log's line for a metrics row that counts records lost to source retention."""
    span = f" (offsets {row['lost_first']}..{row['lost_last']})" if row.get("lost_first") is not None else ""
    return (
        f"flow {flow.name}: {row['lost_to_retention']} record(s) of {flow.source}/{row['topic']}[{row['partition']}]"
        f"{span} were deleted on the source before they were replicated (counted in lost_to_retention)"
    )

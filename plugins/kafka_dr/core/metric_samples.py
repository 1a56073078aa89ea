"""What the exporter serves, computed from what it read (pure): one :class:`Sample` per series.

Inputs are plain values read by the exporter (:mod:`kafka_dr.exporter.reads`); a figure that
could not be read is left out rather than guessed (a missing series, not a 0), so an alert
rule never fires, or stays quiet, on a value nobody measured.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kafka_dr.core import metric_catalog as m
from kafka_dr.core.config import DrConfig
from kafka_dr.core.metric_counters import Counters
from kafka_dr.core.replication_lag import PartitionLag

#: parity verdicts under which consumers can move (kafka_dr.core.parity)
MOVABLE = ("ready", "degraded")
#: the thresholds served as ``kafka_dr_threshold{name=...}`` for the alert rules and the dashboard
THRESHOLDS = (
    "replication_lag_max_seconds",
    "replication_lag_max_records",
    "heartbeat_max_age_seconds",
    "group_sync_max_age_seconds",
    "latency_p99_max_seconds",
)


@dataclass(frozen=True)
class Sample:
    metric: m.Metric
    labels: tuple[str, ...]  #: values in the order of ``metric.labels``
    value: float


@dataclass(frozen=True)
class Reading:
    """One read of the clusters. ``None`` for what could not be read."""

    now_ms: int
    health: Mapping[str, bool]
    stopped_sources: frozenset[str]  #: clusters a recorded failover stopped the flows from
    lags: Mapping[str, list[PartitionLag] | None]  #: by flow
    heartbeat_ages: Mapping[str, float | None]  #: by flow
    group_sync_ages: Mapping[tuple[str, str], float]  #: by (flow, group)
    dq: Mapping | None  #: the newest data-quality record
    parity: list[Mapping]  #: the recorded parity reports
    dr_runs: Mapping[str, Mapping]  #: the newest failover and failback records, by kind
    read_seconds: float


def flow_labels(cfg: DrConfig, name: str) -> tuple[str, str, str]:
    f = next(f for f in cfg.flows if f.name == name)
    return (f.name, f.source, f.target)


def cluster_samples(cfg: DrConfig, r: Reading) -> Iterable[Sample]:
    for name in cfg.clusters:
        if name in r.health:
            yield Sample(m.CLUSTER_UP, (name,), 1.0 if r.health[name] else 0.0)
    for f in cfg.flows:
        active = f.enabled and f.source not in r.stopped_sources
        yield Sample(m.FLOW_ACTIVE, (f.name, f.source, f.target), 1.0 if active else 0.0)


def lag_samples(cfg: DrConfig, r: Reading) -> Iterable[Sample]:
    for flow, lags in r.lags.items():
        base = flow_labels(cfg, flow)
        for p in lags or ():
            labels = (*base, p.topic, str(p.partition))
            yield Sample(m.LAG_RECORDS, labels, float(p.records))
            seconds = p.seconds(r.now_ms)
            if seconds is not None:
                yield Sample(m.LAG_SECONDS, labels, seconds)


def heartbeat_samples(cfg: DrConfig, r: Reading) -> Iterable[Sample]:
    for flow, age in r.heartbeat_ages.items():
        if age is not None:
            yield Sample(m.HEARTBEAT_AGE, flow_labels(cfg, flow), age)
    for (flow, group), age in sorted(r.group_sync_ages.items()):
        yield Sample(m.OFFSET_SYNC_AGE, (*flow_labels(cfg, flow), group), age)


def dq_samples(r: Reading) -> Iterable[Sample]:
    if not r.dq:
        return
    yield Sample(m.DQ_SUCCESS, (), 1.0 if r.dq.get("success") else 0.0)
    if isinstance(r.dq.get("ts_ms"), int):
        yield Sample(m.DQ_TIMESTAMP, (), r.dq["ts_ms"] / 1000)
    for topic, n in sorted((r.dq.get("failed_by_topic") or {}).items()):
        yield Sample(m.DQ_FAILED_CHECKS, (topic,), float(n))


def parity_samples(r: Reading) -> Iterable[Sample]:
    for rep in r.parity:
        pair = (str(rep["from"]), str(rep["to"]))
        yield Sample(m.PARITY_READY, pair, 1.0 if rep.get("verdict") in MOVABLE else 0.0)
        kinds: dict[str, int] = {}
        for d in rep.get("differences") or ():
            kinds[str(d.get("area"))] = kinds.get(str(d.get("area")), 0) + 1
        for kind, n in sorted(kinds.items()):
            yield Sample(m.PARITY_DIFFERENCES, (*pair, kind), float(n))


def dr_run_samples(r: Reading) -> Iterable[Sample]:
    for kind, run in sorted(r.dr_runs.items()):
        if isinstance(run.get("finished_ms"), int):
            yield Sample(m.LAST_RUN_TIMESTAMP, (kind,), run["finished_ms"] / 1000)
        yield Sample(m.LAST_RUN_SUCCESS, (kind,), 1.0 if run.get("success") else 0.0)
        for metric, key in (
            (m.LAST_RUN_DURATION, "duration_seconds"),
            (m.LAST_RUN_RPO_RECORDS, "missing_records"),
            (m.LAST_RUN_REREADS, "reread_records"),
        ):
            if isinstance(run.get(key), int | float):
                yield Sample(metric, (kind,), float(run[key]))


def threshold_samples(cfg: DrConfig) -> Iterable[Sample]:
    for name in THRESHOLDS:
        yield Sample(m.THRESHOLD, (name,), float(getattr(cfg.thresholds, name)))


def counter_samples(cfg: DrConfig, c: Counters) -> Iterable[Sample]:
    by_name = {x.name: x for x in m.ALL}
    for (name, flow, topic), value in sorted(c.by_topic.items()):
        yield Sample(by_name[name], (*flow_labels(cfg, flow), topic), value)
    for (name, flow), value in sorted(c.by_flow.items()):
        yield Sample(by_name[name], flow_labels(cfg, flow), value)
    for flow, at_ms in sorted(c.last_batch_ms.items()):
        yield Sample(m.LAST_BATCH, flow_labels(cfg, flow), at_ms / 1000)


def samples(cfg: DrConfig, r: Reading, c: Counters) -> list[Sample]:
    """Every series but the latency histogram's (``c.latency``) and the read-error counter."""
    return [
        *cluster_samples(cfg, r),
        *lag_samples(cfg, r),
        *heartbeat_samples(cfg, r),
        *dq_samples(r),
        *parity_samples(r),
        *dr_run_samples(r),
        *threshold_samples(cfg),
        *counter_samples(cfg, c),
        Sample(m.SCRAPE_SECONDS, (), r.read_seconds),
    ]

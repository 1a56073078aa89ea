"""Which windows a data-quality run compares, and the watermarks it leaves.

A run plans every flow's full windows (:func:`~kafka_dr.kafka.dq_inputs.plan_windows`), then,
unless asked for a full sweep, narrows each to what arrived since its verified watermark
(:func:`~kafka_dr.core.dq_watermark.narrow`). After validation, each window that passed
leaves its next watermark on the flow's target. The topic ids are read *before* planning: a
topic recreated in between carries its new id into the next run's check, which then compares
it in full.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from confluent_kafka import KafkaException

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.dq import PartitionWindow
from kafka_dr.core.dq_watermark import Watermark, narrow, next_mark
from kafka_dr.kafka.clients import ClusterUnreachable, SecretResolver, admin
from kafka_dr.kafka.dq_inputs import plan_windows
from kafka_dr.kafka.dq_watermarks import read_marks, topic_ids, write_marks

log = logging.getLogger(__name__)


@dataclass
class FlowPlan:
    """One flow's windows in a run, and what its watermarks need afterwards."""

    flow: FlowConfig
    windows: list[PartitionWindow]
    marks: Mapping[tuple[str, int], Watermark] = field(default_factory=dict)
    source_ids: Mapping[str, str] = field(default_factory=dict)
    target_ids: Mapping[str, str] = field(default_factory=dict)
    narrowed: int = 0  #: windows compared from their watermark


def plan_flow(
    cfg: DrConfig,
    flow: FlowConfig,
    topics: Iterable[str] | None,
    resolve: SecretResolver | None,
    now_ms: int,
    full: bool,
) -> FlowPlan:
    """The windows of one flow: full when ``full`` (or incremental runs are off), else each
    from its watermark where one is valid and no sweep of its partition is due."""
    if not cfg.data_quality.incremental:
        return FlowPlan(flow, plan_windows(cfg, flow, topics, resolve))
    marks = read_marks(cfg, flow, resolve)
    src_ids, dst_ids = _ids(cfg, flow, resolve)
    windows = plan_windows(cfg, flow, topics, resolve)
    plan = FlowPlan(flow, [], marks, src_ids, dst_ids)
    for w in windows:
        if full:
            plan.windows.append(w)
            continue
        narrowed, why = narrow(
            w,
            marks.get((w.topic, w.partition)),
            src_ids.get(w.topic, ""),
            dst_ids.get(w.target_topic, ""),
            now_ms,
            cfg.data_quality.full_sweep_hours,
        )
        if why is None:
            plan.narrowed += 1
        elif (w.topic, w.partition) in marks:
            log.info("data quality: %s compared in full: %s", w.where, why)
        plan.windows.append(narrowed)
    return plan


def _ids(cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None) -> tuple[dict[str, str], dict[str, str]]:
    """Topic ids of the flow's source topics and of their copies on the target."""
    from kafka_dr.core.loop import router_for
    from kafka_dr.kafka.topic_admin import topic_partitions

    router = router_for(cfg, flow)
    src = admin(cfg.cluster(flow.source), resolve)
    try:
        names = topic_partitions(src)
    except KafkaException as e:
        raise ClusterUnreachable(f"data quality of flow {flow.name}: listing topics: {e.args[0].str()}") from None
    routes = {t: router.target_topic(t) for t in names}
    routes = {t: tt for t, tt in routes.items() if tt is not None}
    dst = admin(cfg.cluster(flow.target), resolve)
    return topic_ids(src, flow.source, routes), topic_ids(dst, flow.target, routes.values())


def keep_marks(
    cfg: DrConfig,
    plan: FlowPlan,
    rows: Mapping[tuple[str, str, int], Mapping],
    now_ms: int,
    run_id: str,
    resolve: SecretResolver | None,
) -> int:
    """Write the next watermark of each window of ``plan`` that passed (``rows`` by (flow,
    topic, partition)). Returns the number written (0 when they could not be: the next run
    then starts from the previous ones)."""
    if not cfg.data_quality.incremental:
        return 0
    marks = []
    for w in plan.windows:
        row = rows.get((w.flow, w.topic, w.partition))
        if row is None:
            continue
        m = next_mark(
            w,
            row,
            plan.source_ids.get(w.topic, ""),
            plan.target_ids.get(w.target_topic, ""),
            now_ms,
            run_id,
            plan.marks.get((w.topic, w.partition)),
        )
        if m is not None:
            marks.append(m)
    try:
        return write_marks(cfg, plan.flow, marks, resolve)
    except Exception as e:  # noqa: BLE001 - the checks are done; the next run starts from the older marks
        log.error("data quality: keeping the watermarks of flow %s: %s", plan.flow.name, e)
        return 0

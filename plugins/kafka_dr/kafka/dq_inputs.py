"""What a data-quality run needs from the clusters, besides the records themselves.

- :func:`plan_windows`: per flow topic-partition, the compared window. The order of the reads
  is what makes the window safe: the flow's progress first (``end``), then the target's last
  stable offsets (``target_end``), then the progress again (``limit``). Progress and records
  are committed in the same Kafka transaction, so every copy of a source record below ``end``
  sits below ``target_end`` (nothing in flight is reported missing), and no copy the flow
  wrote below ``target_end`` names a source offset at or past ``limit`` (one that does was
  not written by the flow).
- :func:`schema_rows` and :func:`config_rows`: registry state and topic-config parity as rows
  of the comparison table, reusing the schema mirror's verification and the topic sync's diff.
- :func:`publish`: the run's summary on ``<prefix>.dq-results`` of every reachable cluster.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.dq import PartitionWindow, config_differences, is_compacted, window_bounds
from kafka_dr.core.formats import stamped
from kafka_dr.core.loop import router_for
from kafka_dr.core.topic_sync import plan_flow
from kafka_dr.kafka.clients import ClusterUnreachable, SecretResolver, client_config, producer
from kafka_dr.kafka.progress_store import read_committed_progress
from kafka_dr.kafka.topic_admin import REQUEST_TIMEOUT, describe_topic_configs, topic_partitions
from kafka_dr.kafka.topics import ensure_topic, partition_count, query_offsets

log = logging.getLogger(__name__)


def selected_flows(cfg: DrConfig, flows: Iterable[str] | None) -> list[FlowConfig]:
    """The enabled flows, or the named ones (an unknown name is an error naming the known ones)."""
    if flows is None:
        return [f for f in cfg.flows if f.enabled]
    known = {f.name: f for f in cfg.flows}
    unknown = [n for n in flows if n not in known]
    if unknown:
        raise ValueError(f"data quality: unknown flow(s) {', '.join(unknown)} (flows: {', '.join(known)})")
    return [known[n] for n in flows]


def _offsets(admin: AdminClient, cluster: str, tps: list[TopicPartition], spec) -> dict[tuple[str, int], int]:
    if not tps:
        return {}
    try:
        return query_offsets(admin, {tp: spec for tp in tps}, REQUEST_TIMEOUT)
    except KafkaException as e:
        raise ClusterUnreachable(f"data quality: listing offsets on {cluster}: {e.args[0].str()}") from None


def plan_windows(
    cfg: DrConfig, flow: FlowConfig, topics: Iterable[str] | None = None, resolve: SecretResolver | None = None
) -> list[PartitionWindow]:
    """The windows of one flow: every partition of every source topic its router copies
    (narrowed to ``topics`` when given), the heartbeat topic excluded."""
    router = router_for(cfg, flow)
    wanted = set(topics) if topics is not None else None
    src_admin = AdminClient(client_config(cfg.cluster(flow.source), resolve))
    dst_admin = AdminClient(client_config(cfg.cluster(flow.target), resolve))
    try:
        src_topics = topic_partitions(src_admin)
        dst_topics = topic_partitions(dst_admin)
    except KafkaException as e:
        raise ClusterUnreachable(f"data quality of flow {flow.name}: listing topics: {e.args[0].str()}") from None
    routes = {}
    for name, n in sorted(src_topics.items()):
        if name == cfg.names.heartbeat_topic or (wanted is not None and name not in wanted):
            continue
        target = router.target_topic(name)
        if target is not None:
            routes[name] = (target, n)
    src_tps = [TopicPartition(t, p) for t, (_, n) in routes.items() for p in range(n)]
    dst_tps = [
        TopicPartition(tt, p)
        for t, (tt, n) in routes.items()
        for p in range(n)
        if tt in dst_topics and p < dst_topics[tt]
    ]
    progress_pairs = [(tt, p) for t, (tt, n) in routes.items() for p in range(n)]
    try:
        policies = describe_topic_configs(src_admin, list(routes), explicit_only=False, missing_ok=True)
    except KafkaException as e:
        raise ClusterUnreachable(f"data quality of flow {flow.name}: topic configs: {e.args[0].str()}") from None

    starts = _offsets(src_admin, flow.source, src_tps, OffsetSpec.earliest())
    before = read_committed_progress(cfg, flow, progress_pairs, resolve)
    tstarts = _offsets(dst_admin, flow.target, dst_tps, OffsetSpec.earliest())
    tends = _offsets(dst_admin, flow.target, dst_tps, OffsetSpec.latest())
    after = read_committed_progress(cfg, flow, progress_pairs, resolve)

    out = []
    for t, (tt, n) in routes.items():
        for p in range(n):
            b, a = before.get((tt, p)), after.get((tt, p))
            start, end, limit = window_bounds(starts[(t, p)], b and b["next_offset"], a and a["next_offset"])
            out.append(
                PartitionWindow(
                    flow.name,
                    flow.source,
                    flow.target,
                    t,
                    tt,
                    p,
                    start,
                    end,
                    limit,
                    tstarts.get((tt, p), 0),
                    tends.get((tt, p), 0),
                    is_compacted(policies.get(t, {}).get("cleanup.policy")),
                )
            )
    return out


def schema_rows(cfg: DrConfig, resolve: SecretResolver | None = None) -> list[dict]:
    """One row per schema-mirror target: the registry state differences against the primary
    (read as the mirror's verification reads them). No ``schema_mirror`` section: no rows."""
    from kafka_dr.kafka.schema_mirror import verify

    sm = cfg.schema_mirror
    if sm is None:
        return []
    rows = []
    src_topic = cfg.cluster(sm.primary).schema_registry.topic
    src_exists = (
        partition_count(AdminClient(client_config(cfg.cluster(sm.primary), resolve)), src_topic, timeout=15) is not None
    )
    for target in sm.targets:
        dst_topic = cfg.cluster(target).schema_registry.topic
        row = {
            "kind": "schema_registry",
            "source": sm.primary,
            "target": target,
            "topic": src_topic,
            "target_topic": dst_topic,
        }
        if not src_exists:
            # no registry writes to the primary: equal only if the target has none either
            dst_exists = (
                partition_count(AdminClient(client_config(cfg.cluster(target), resolve)), dst_topic, timeout=15)
                is not None
            )
            rows.append(
                {
                    **row,
                    "source_count": 0,
                    "target_count": None,
                    "differences": int(dst_exists),
                    "detail": f"{sm.primary} has no topic {src_topic} but {target} has {dst_topic}"
                    if dst_exists
                    else None,
                }
            )
            continue
        res = verify(cfg, target, resolve)
        rows.append(
            {
                "kind": "schema_registry",
                "source": sm.primary,
                "target": target,
                "topic": cfg.cluster(sm.primary).schema_registry.topic,
                "target_topic": cfg.cluster(target).schema_registry.topic,
                "source_count": res.primary_records,
                "target_count": res.target_records,
                "differences": len(res.differences),
                "detail": "; ".join(res.differences[:10]) or None,
            }
        )
    return rows


def config_rows(
    cfg: DrConfig, flows: list[FlowConfig], topics: Iterable[str] | None = None, resolve: SecretResolver | None = None
) -> list[dict]:
    """One row per replicated topic of each flow: partition count and replicable configs equal?
    (the topic-config sync's own diff, read only)."""
    from kafka_dr.kafka.topic_sync import gather

    wanted = set(topics) if topics is not None else None
    rows = []
    for flow in flows:
        src = AdminClient(client_config(cfg.cluster(flow.source), resolve))
        dst = AdminClient(client_config(cfg.cluster(flow.target), resolve))
        sources, targets = gather(cfg, flow, src, dst)
        sources = {
            k: v for k, v in sources.items() if k != cfg.names.heartbeat_topic and (wanted is None or k in wanted)
        }
        for plan in plan_flow(cfg, flow, sources, targets).topics:
            diffs = config_differences(plan)
            rows.append(
                {
                    "kind": "topic_config",
                    "flow": flow.name,
                    "source": flow.source,
                    "target": flow.target,
                    "topic": plan.source_topic,
                    "target_topic": plan.target_topic,
                    "differences": len(diffs),
                    "detail": "; ".join(diffs) or None,
                }
            )
    return rows


def publish(cfg: DrConfig, record: dict, resolve: SecretResolver | None = None) -> list[str]:
    """Write the run's summary to ``<prefix>.dq-results`` on every cluster that answers;
    returns the clusters written to. An unreachable cluster is logged, not raised: the
    summary must reach the survivors."""
    topic = cfg.names.dq_results_topic
    value = json.dumps(stamped(record), separators=(",", ":")).encode()
    done = []
    for name, cluster in cfg.clusters.items():
        try:
            admin = AdminClient(client_config(cluster, resolve))
            ensure_topic(admin, topic, partitions=1, config={"retention.ms": str(30 * 86400 * 1000)}, timeout=10)
            p = producer(cluster, resolve, **{"message.timeout.ms": 15_000})
            p.produce(topic, key=record.get("run_id", "").encode(), value=value)
            if p.flush(20) == 0:
                done.append(name)
            else:
                log.error("data quality: summary not acknowledged by %s/%s", name, topic)
        except Exception as e:  # noqa: BLE001 - one cluster down must not stop the others
            log.error("data quality: publishing the summary to %s/%s: %s", name, topic, e)
    return done

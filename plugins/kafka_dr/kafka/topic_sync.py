"""Topic-config sync for one flow against the real clusters.

Gathers the metadata :func:`kafka_dr.core.topic_sync.plan_flow` needs (the source topics the
flow's router selects, their partition counts and explicitly set configs; the same for their
target topics), then applies the plan on the target:

- ``CreateTopics`` for missing target topics (an "already exists" answer means someone,
  e.g. the replication job, created it first: noted, synced on the next run);
- ``CreatePartitions`` to raise a partition count (never to lower one);
- ``IncrementalAlterConfigs`` with ``SET``/``DELETE`` operations only. The non-incremental
  ``AlterConfigs`` is never used: it replaces a topic's whole config, resetting every
  property it does not name (confluent-kafka's own warning).

Idempotent: a second run plans nothing. Every admin error is collected with the flow,
cluster and topic it concerns; the run applies what it can and then raises
:class:`TopicSyncFailed` listing all of them, with the drift report attached.
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.loop import router_for
from kafka_dr.core.topic_sync import FlowSyncPlan, TopicState, plan_flow
from kafka_dr.kafka.clients import ClusterUnreachable, SecretResolver, client_config
from kafka_dr.kafka.permissions import denied, is_denied
from kafka_dr.kafka.permissions import topic as topic_resource
from kafka_dr.kafka.topic_admin import (
    DENIED,
    REQUEST_TIMEOUT,
    RESULT_TIMEOUT,
    create_topics,
    describe_topic_configs,
    topic_partitions,
)

log = logging.getLogger(__name__)

METADATA_TIMEOUT = 15.0


class TopicSyncFailed(RuntimeError):
    """Some actions of a flow's sync failed; ``report`` is the drift report with ``errors``."""

    def __init__(self, report: dict) -> None:
        self.report = report
        lines = "\n".join(f"  {e}" for e in report["errors"])
        super().__init__(
            f"topic-config sync of flow {report['flow']} ({report['source']} -> {report['target']}): "
            f"{len(report['errors'])} action(s) failed:\n{lines}"
        )


def _answer(cfg: DrConfig, flow: FlowConfig, role: str, call):
    """Run an admin call; an unreachable cluster becomes one error naming it."""
    name = flow.source if role == "source" else flow.target
    try:
        return call()
    except KafkaException as e:
        cluster = cfg.cluster(name)
        raise ClusterUnreachable(
            f"topic-config sync of flow {flow.name}: {role} cluster {name!r} ({cluster.bootstrap_servers}) "
            f"did not answer: {e.args[0].str()}"
        ) from None


def gather(
    cfg: DrConfig, flow: FlowConfig, source: AdminClient, target: AdminClient
) -> tuple[dict[str, TopicState], dict[str, TopicState]]:
    """The flow's source topics and their existing target topics, as :class:`TopicState`."""
    router = router_for(cfg, flow)
    src_parts = _answer(cfg, flow, "source", lambda: topic_partitions(source, METADATA_TIMEOUT))
    selected = {name: n for name, n in src_parts.items() if router.target_topic(name) is not None}
    src_conf = _answer(
        cfg, flow, "source", lambda: describe_topic_configs(source, selected, missing_ok=True, cluster=flow.source)
    )
    sources = {name: TopicState(name, n, src_conf[name]) for name, n in selected.items() if name in src_conf}

    dst_parts = _answer(cfg, flow, "target", lambda: topic_partitions(target, METADATA_TIMEOUT))
    wanted = {router.target_topic(name) for name in sources}
    existing = {name: n for name, n in dst_parts.items() if name in wanted}
    dst_conf = _answer(
        cfg, flow, "target", lambda: describe_topic_configs(target, existing, missing_ok=True, cluster=flow.target)
    )
    targets = {name: TopicState(name, n, dst_conf[name]) for name, n in existing.items() if name in dst_conf}
    return sources, targets


def _refused(flow: FlowConfig, verb: str, operation: str, name: str) -> str:
    return str(denied(flow.target, f"{verb} topic {name!r}", operation, topic_resource(name)))


def apply(flow: FlowConfig, plan: FlowSyncPlan, target: AdminClient) -> tuple[list[str], list[str]]:
    """Apply a plan on the target cluster. Returns (errors, notes); both name flow, cluster, topic."""
    where = f"flow {flow.name}: {flow.target}"
    errors: list[str] = []
    notes: list[str] = []

    creates = [
        NewTopic(
            t.target_topic, num_partitions=t.create_partitions, replication_factor=-1, config=dict(t.create_configs)
        )
        for t in plan.topics
        if t.create
    ]
    for name, error in create_topics(target, creates).items():
        if error == "exists":
            notes.append(
                f"{where}/{name}: already existed when creating it (created concurrently); synced on the next run"
            )
        elif error == DENIED:
            errors.append(f"flow {flow.name}: {_refused(flow, 'create', 'CREATE', name)}")
        elif error is not None:
            errors.append(f"{where}/{name}: creating the topic: {error}")

    raises = {t.target_topic: t.raise_partitions for t in plan.topics if t.raise_partitions}
    if raises:
        futs = target.create_partitions(
            [NewPartitions(name, to) for name, (_, to) in raises.items()], request_timeout=REQUEST_TIMEOUT
        )
        for name, fut in futs.items():
            try:
                fut.result(timeout=RESULT_TIMEOUT)
            except KafkaException as e:
                frm, to = raises[name]
                if is_denied(e):
                    errors.append(f"flow {flow.name}: {_refused(flow, 'add partitions to', 'ALTER', name)}")
                    continue
                errors.append(f"{where}/{name}: raising partitions {frm} -> {to}: {e.args[0].str()}")

    resources = []
    for t in plan.topics:
        entries = [
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
            for k, (_, v) in sorted(t.set_configs.items())
        ]
        entries += [
            ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in sorted(t.delete_configs)
        ]
        if entries:
            resources.append(ConfigResource(ConfigResource.Type.TOPIC, t.target_topic, incremental_configs=entries))
    if resources:
        futs = target.incremental_alter_configs(resources, request_timeout=REQUEST_TIMEOUT)
        for res, fut in futs.items():
            try:
                fut.result(timeout=RESULT_TIMEOUT)
            except KafkaException as e:
                if is_denied(e):
                    errors.append(
                        f"flow {flow.name}: {_refused(flow, 'alter the configs of', 'ALTER_CONFIGS', res.name)}"
                    )
                    continue
                errors.append(f"{where}/{res.name}: incremental alter-configs: {e.args[0].str()}")
    return errors, notes


def sync_flow(cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None, dry_run: bool = False) -> dict:
    """Sync one flow's topics and return its drift report (JSON-serialisable).

    :param dry_run: plan and report only; write nothing
    :raises TopicSyncFailed: some actions failed (the others were applied)
    :raises ClusterUnreachable: the source or target did not answer
    """
    # both clients stay referenced until every future they created has completed
    source = AdminClient(client_config(cfg.cluster(flow.source), resolve))
    target = AdminClient(client_config(cfg.cluster(flow.target), resolve))
    sources, targets = gather(cfg, flow, source, target)
    plan = plan_flow(cfg, flow, sources, targets)
    report = plan.to_report(applied=not dry_run)
    if dry_run or not any(t.changes for t in plan.topics):
        return report
    errors, notes = _answer(cfg, flow, "target", lambda: apply(flow, plan, target))
    if notes:
        report["notes"] = notes
    if errors:
        report["errors"] = errors
        raise TopicSyncFailed(report)
    return report

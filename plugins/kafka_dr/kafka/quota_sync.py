"""Client-quota sync for one flow against the real clusters.

Reads every client quota on both clusters (:mod:`kafka_dr.kafka.client_quotas`) and what the
product set on each (:mod:`kafka_dr.kafka.sync_state`), plans with
:func:`kafka_dr.core.quota_sync.plan_quotas`, then on the target records the intent, sets and
deletes in one request, and records what it owns. Idempotent: a second run plans nothing.
"""

from __future__ import annotations

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.quota_sync import QuotaPlan, decode_owned, encode_owned, entity_mapper, plan_quotas, report
from kafka_dr.kafka.client_quotas import alter_quotas, describe_each
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.sync_state import read_owned, write_owned


def plan_flow(cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None) -> tuple[QuotaPlan, dict, set]:
    """What the flow's sync would do now, the target's quotas, and what it had recorded as its own."""
    topic = cfg.names.quota_state_topic
    quotas = describe_each(cfg, [flow.source, flow.target], resolve)
    source, target = quotas[flow.source], quotas[flow.target]
    source_owned = set().union(*read_owned(cfg, flow.source, topic, decode_owned, resolve).values())
    recorded = read_owned(cfg, flow.target, topic, decode_owned, resolve).get(flow.name, set())
    return plan_quotas(source, source_owned, target, recorded, entity_mapper(cfg, flow)), target, recorded


def sync_flow(cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None, dry_run: bool = False) -> dict:
    """Make the flow's target carry the source's client quotas; return the drift report."""
    topic = cfg.names.quota_state_topic
    plan, target, recorded = plan_flow(cfg, flow, resolve)
    out = report(flow, plan, target, dry_run)
    if dry_run:
        return out
    if plan.set_values:
        write_owned(cfg, flow.target, topic, flow.name, encode_owned(flow.name, plan.intent), resolve)
    alter_quotas(cfg, flow.target, plan.set_values, plan.delete, resolve)
    if plan.owned != recorded:
        write_owned(cfg, flow.target, topic, flow.name, encode_owned(flow.name, plan.owned), resolve)
    return out

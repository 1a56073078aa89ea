"""ACL sync for one flow against the real clusters.

Reads every binding on both clusters and what the product created on each
(:mod:`kafka_dr.kafka.sync_state`), plans with :func:`kafka_dr.core.acl_sync.plan_acls`, then on
the target: records the intent, creates, deletes, and records what it owns afterwards.
Idempotent: a second run plans nothing. A target without an authorizer (it refuses bindings;
every client may do everything there) is a "not set up" note, not a failure. Refused
bindings are collected; the run applies what it can and then raises :class:`AclSyncFailed`
with the report attached.
"""

from __future__ import annotations

from kafka_dr.core.acl_sync import AclPlan, decode_owned, encode_owned, plan_acls, report, scope_for
from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.kafka import clients
from kafka_dr.kafka.acl_admin import NoAuthorizer, create_acls, delete_acls, describe_acls
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.sync_state import read_owned, write_owned


class AclSyncFailed(RuntimeError):
    """Some bindings of a flow's sync were refused; ``report`` has them under ``errors``."""

    def __init__(self, report: dict) -> None:
        self.report = report
        lines = "\n".join(f"  {e}" for e in report["errors"])
        super().__init__(
            f"ACL sync of flow {report['flow']} ({report['source']} -> {report['target']}): "
            f"{len(report['errors'])} binding(s) refused:\n{lines}"
        )


def plan_flow(cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None) -> tuple[AclPlan, set]:
    """What the flow's sync would do now, and what it had recorded as its own on the target."""
    source = describe_acls(clients.admin(cfg.cluster(flow.source), resolve), flow.source)
    target = describe_acls(clients.admin(cfg.cluster(flow.target), resolve), flow.target)
    topic = cfg.names.acl_state_topic
    source_owned = set().union(*read_owned(cfg, flow.source, topic, decode_owned, resolve).values())
    recorded = read_owned(cfg, flow.target, topic, decode_owned, resolve).get(flow.name, set())
    scope = scope_for(cfg, flow, own_principals(cfg, flow, resolve))
    return plan_acls(source, source_owned, target, recorded, scope), recorded


def sync_flow(cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None, dry_run: bool = False) -> dict:
    """Make the flow's target hold the source's bindings (mapped); return the drift report."""
    target_admin = clients.admin(cfg.cluster(flow.target), resolve)
    try:
        plan, recorded = plan_flow(cfg, flow, resolve)
    except NoAuthorizer as e:
        return _not_set_up(flow, dry_run, e)
    topic = cfg.names.acl_state_topic
    out = report(flow, plan, dry_run)
    if dry_run:
        return out
    if plan.create:
        write_owned(cfg, flow.target, topic, flow.name, encode_owned(flow.name, plan.intent), resolve)
    try:
        refused_create = create_acls(target_admin, flow.target, plan.create)
    except NoAuthorizer as e:  # the target lets every client do everything: no bindings to keep
        return _not_set_up(flow, dry_run, e)
    refused_delete = delete_acls(target_admin, flow.target, plan.delete)
    owned = (plan.owned - set(refused_create)) | set(refused_delete)
    if owned != recorded:
        write_owned(cfg, flow.target, topic, flow.name, encode_owned(flow.name, owned), resolve)
    errors = [*refused_create.values(), *refused_delete.values()]
    if errors:
        out["errors"] = errors
        raise AclSyncFailed(out)
    return out


def own_principals(cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None) -> set[str]:
    """The principals kafka-dr logs in as on the flow's clusters (SASL users; none otherwise)."""
    out = set()
    for name in (flow.source, flow.target):
        user = clients.client_config(cfg.cluster(name), resolve).get("sasl.username")
        if user:
            out.add(f"User:{user}")
    return out


def _not_set_up(flow: FlowConfig, dry_run: bool, e: NoAuthorizer) -> dict:
    out = report(flow, AclPlan(), dry_run)
    out["notes"] = [f"not set up: {e}; nothing to sync"]
    return out

"""``dr_acl_sync`` and ``dr_quota_sync``: what applications need on each flow's target besides
the data, so that after a failover they can log in, read, write and commit there, throttled as
they were at home.

Each has a task per enabled flow (``sync_<flow>``) that returns its drift report as XCom and
logs it readably. ``dr_acl_sync`` creates the source's bindings missing on the target
(principals renamed by ``acl_sync.principals``) and deletes the ones the product created that
the source no longer has; an operator's own are never touched, and a target without an
authorizer is noted, not failed. ``dr_quota_sync`` does the same for client quotas by user and
client id. See docs/operations.md, "ACL and quota sync".
"""

from __future__ import annotations

import logging

from airflow.sdk import DAG

from kafka_dr.airflow.flow_sync_dag import per_flow_sync_dag
from kafka_dr.core.config import DrConfig

log = logging.getLogger(__name__)


def sync_acls(cfg: DrConfig, flow_name: str, dry_run: bool = False) -> dict:
    """Sync one flow's bindings; log and return the drift report, raise naming what failed."""
    from kafka_dr.airflow.secret_resolver import airflow_resolver
    from kafka_dr.core.acl_sync import format_report
    from kafka_dr.kafka.acl_sync import AclSyncFailed, sync_flow

    (flow,) = [f for f in cfg.flows if f.name == flow_name]
    try:
        report = sync_flow(cfg, flow, airflow_resolver(), dry_run=dry_run)
    except AclSyncFailed as e:
        log.error("ACL drift report (with failures):\n%s", format_report(e.report))
        raise
    log.info("ACL drift report:\n%s", format_report(report))
    for note in report.get("notes", ()):
        log.warning("%s", note)
    return report


def sync_quotas(cfg: DrConfig, flow_name: str, dry_run: bool = False) -> dict:
    """Sync one flow's client quotas; log and return the drift report."""
    from kafka_dr.airflow.secret_resolver import airflow_resolver
    from kafka_dr.core.quota_sync import format_report
    from kafka_dr.kafka.quota_sync import sync_flow

    (flow,) = [f for f in cfg.flows if f.name == flow_name]
    report = sync_flow(cfg, flow, airflow_resolver(), dry_run=dry_run)
    log.info("quota drift report:\n%s", format_report(report))
    return report


def build_acl_sync_dag(cfg: DrConfig) -> DAG:
    return per_flow_sync_dag(
        cfg,
        "dr_acl_sync",
        "Copy ACL bindings of replicated topics, selected groups and transactional ids to each target",
        cfg.schedules.acl_sync,
        __doc__,
        sync_acls,
    )


def build_quota_sync_dag(cfg: DrConfig) -> DAG:
    return per_flow_sync_dag(
        cfg,
        "dr_quota_sync",
        "Copy client quotas by user and client id to each target",
        cfg.schedules.quota_sync,
        __doc__,
        sync_quotas,
    )

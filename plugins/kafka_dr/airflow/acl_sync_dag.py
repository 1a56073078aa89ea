"""``dr_acl_sync``: the applications' ACL bindings exist on each flow's target, so that after a
failover they can log in, read, write and commit there.

A task per enabled flow (``sync_<flow>``): create the source's bindings missing on the target
(principals renamed by ``acl_sync.principals``), delete the ones the product created that the
source no longer has, and never touch an operator's own. Each task returns its drift report as
XCom and logs it readably; a target without an authorizer is noted, not failed. See
docs/operations.md, "ACL sync".
"""

from __future__ import annotations

import logging

from airflow.sdk import DAG, task

from kafka_dr.airflow.dag_config import kafka_dr_dag
from kafka_dr.core.acl_sync import format_report
from kafka_dr.core.config import DrConfig

log = logging.getLogger(__name__)


def sync_acls(cfg: DrConfig, flow_name: str, dry_run: bool = False) -> dict:
    """Sync one flow's bindings; log and return the drift report, raise naming what failed."""
    from kafka_dr.airflow.secret_resolver import airflow_resolver
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


def build_acl_sync_dag(cfg: DrConfig) -> DAG:
    with kafka_dr_dag(
        "dr_acl_sync",
        "Copy ACL bindings of replicated topics, selected groups and transactional ids to each target",
        cfg.schedules.acl_sync,
        __doc__,
    ) as dag:
        flows = [f for f in cfg.flows if f.enabled]
        for flow in flows:

            @task(task_id=f"sync_{flow.name}", retries=1)
            def sync(flow_name: str = flow.name) -> dict:
                return sync_acls(cfg, flow_name)

            sync()
        if not flows:

            @task(task_id="no_enabled_flows", retries=1)
            def nothing() -> str:
                return "no enabled flow: nothing to sync"

            nothing()
    return dag

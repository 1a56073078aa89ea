"""``dr_parity``: is each failover target ready for the applications? One task per direction an
enabled flow replicates (``parity_<source>_to_<target>``) computes the parity report
(:mod:`kafka_dr.workflows.parity`: topics, configs, ACLs, quotas, SCRAM users, consumer
groups, registry), records it on the target for the day the source is down, returns it as
XCom and fails (alerting) when the target is ``not ready``. See docs/operations.md, "Failover
readiness".
"""

from __future__ import annotations

import logging

from airflow.sdk import DAG, task

from kafka_dr.airflow.dag_config import kafka_dr_dag
from kafka_dr.airflow.notifier import failure_callbacks
from kafka_dr.core.config import DrConfig

log = logging.getLogger(__name__)


class NotReady(RuntimeError):
    """The target would fail the applications after a failover."""


def check_direction(cfg: DrConfig, source: str, target: str) -> dict:
    from kafka_dr.airflow.secret_resolver import airflow_resolver
    from kafka_dr.core.parity import NOT_READY, format_report
    from kafka_dr.workflows.parity import parity_report

    report = parity_report(cfg, source, target, airflow_resolver())
    log.info("parity report:\n%s", format_report(report))
    if report.get("recorded_age_s") is not None:
        log.warning("%s does not answer: the report above is the last one recorded", source)
    elif report["verdict"] == NOT_READY:
        blocking = [d for d in report["differences"] if d["severity"] == NOT_READY]
        raise NotReady(
            f"{target} is not ready for failover from {source}: "
            + "; ".join(f"{d['area']}: {d['what']}" for d in blocking)
        )
    return report


def build_parity_dag(cfg: DrConfig) -> DAG:
    alerts = failure_callbacks(cfg.alerts)
    with kafka_dr_dag(
        "dr_parity",
        "Is each failover target ready for the applications? Topics, configs, ACLs, quotas, users, groups",
        cfg.schedules.parity,
        __doc__,
    ) as dag:
        pairs = sorted({(f.source, f.target) for f in cfg.flows if f.enabled})
        for source, target in pairs:

            @task(task_id=f"parity_{source}_to_{target}", retries=1, on_failure_callback=alerts)
            def one(source: str = source, target: str = target) -> dict:
                return check_direction(cfg, source, target)

            one()
        if not pairs:

            @task(task_id="no_enabled_flows", retries=1)
            def nothing() -> str:
                return "no enabled flow: no failover direction to check"

            nothing()
    return dag

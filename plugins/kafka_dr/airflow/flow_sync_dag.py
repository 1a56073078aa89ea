"""The shape every per-flow sync DAG shares (topic configs, ACLs, client quotas): one task per
enabled flow, ``sync_<flow>``, running ``sync(cfg, flow_name)`` and returning its drift report
as XCom; a placeholder task when no flow is enabled."""

from __future__ import annotations

from collections.abc import Callable

from airflow.sdk import DAG, task

from kafka_dr.airflow.dag_config import kafka_dr_dag
from kafka_dr.core.config import DrConfig


def per_flow_sync_dag(
    cfg: DrConfig,
    dag_id: str,
    description: str,
    schedule: str | None,
    doc: str | None,
    sync: Callable[[DrConfig, str], dict],
    default_args: dict | None = None,
) -> DAG:
    with kafka_dr_dag(dag_id, description, schedule, doc, default_args=default_args) as dag:
        flows = [f for f in cfg.flows if f.enabled]
        for flow in flows:

            @task(task_id=f"sync_{flow.name}", retries=1)
            def one(flow_name: str = flow.name) -> dict:
                return sync(cfg, flow_name)

            one()
        if not flows:

            @task(task_id="no_enabled_flows", retries=1)
            def nothing() -> str:
                return "no enabled flow: nothing to sync"

            nothing()
    return dag

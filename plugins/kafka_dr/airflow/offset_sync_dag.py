"""``dr_offset_sync``: keep consumer groups' offsets translated on every flow's target
(MirrorMaker 2's ``sync.group.offsets.enabled``), so a failover finds them there.

A continuous flow's job syncs its groups itself, every ``consumer_groups.sync_interval_seconds``
(:mod:`kafka_dr.kafka.group_sync`): on schedule this DAG syncs the incremental flows, and its
tasks for continuous flows skip; triggered by hand it syncs every flow (a reconciliation).

One task per enabled flow: every consumer group of the flow's source, except the product's own
(``<internal_prefix>...``) and those starting with ``_``, is translated
(``kafka_dr.kafka.offset_translation``) and committed on the target under the same group id,
only while the group has no active member there and never backwards. Each translation is
recorded in ``<internal_prefix>.offset-sync`` on the target (what a failover reads when the
source is gone). The per-partition report is the task's XCom.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, task

from kafka_dr.airflow.dag_config import kafka_dr_dag
from kafka_dr.airflow.notifier import failure_callbacks
from kafka_dr.core.config import DrConfig, FlowMode


def build_offset_sync_dag(cfg: DrConfig) -> DAG:
    with kafka_dr_dag(
        "dr_offset_sync",
        "Translate consumer-group offsets onto each flow's target",
        cfg.schedules.offset_sync,
        __doc__,
        tags=("offsets",),
        default_args={"retries": 1, "retry_delay": pendulum.duration(seconds=10)},
    ) as dag:
        for flow in cfg.flows:
            if not flow.enabled:
                continue

            @task(task_id=f"sync_{flow.name}", on_failure_callback=failure_callbacks(cfg.alerts))
            def sync_one(flow_name: str = flow.name) -> dict:
                from airflow.providers.common.compat.sdk import AirflowSkipException
                from airflow.sdk import get_current_context

                from kafka_dr.airflow.secret_resolver import airflow_resolver
                from kafka_dr.workflows.offset_sync import sync_group_offsets

                f = next(x for x in cfg.flows if x.name == flow_name)
                if f.mode is FlowMode.CONTINUOUS and get_current_context()["dag_run"].run_type == "scheduled":
                    raise AirflowSkipException(
                        f"flow {flow_name} is continuous: its job syncs the groups every "
                        f"{cfg.consumer_groups.sync_interval_seconds:g}s"
                    )
                rows = sync_group_offsets(cfg, f, airflow_resolver())
                return {
                    "flow": flow_name,
                    "partitions": len(rows),
                    "committed": sum(1 for r in rows if r["committed"]),
                    "rows": rows,
                }

            sync_one()
    return dag

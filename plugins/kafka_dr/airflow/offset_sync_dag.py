"""``dr_offset_sync``: keep consumer groups' offsets translated on every flow's target
(MirrorMaker 2's ``sync.group.offsets.enabled``), so a failover finds them there.

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
from kafka_dr.core.config import DrConfig


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
                from kafka_dr.airflow.secret_resolver import airflow_resolver
                from kafka_dr.workflows.offset_sync import sync_group_offsets

                f = next(x for x in cfg.flows if x.name == flow_name)
                rows = sync_group_offsets(cfg, f, airflow_resolver())
                return {
                    "flow": flow_name,
                    "partitions": len(rows),
                    "committed": sum(1 for r in rows if r["committed"]),
                    "rows": rows,
                }

            sync_one()
    return dag

"""``dr_topic_config_sync``: every replicated topic exists on its target with the source's
partitions and topic configs.

A task per enabled flow (``sync_<flow>``): create missing target topics, raise partition
counts (never lower them), and apply config differences with incremental alter-configs
(``SET``/``DELETE``), skipping the excluded configs (built-in list plus
``topic_config.exclude``). Each task returns its drift report as XCom and logs it readably.
Topics no flow selects are never looked at. See docs/operations.md, "Topic-config sync".
"""

from __future__ import annotations

import logging

from airflow.sdk import DAG

from kafka_dr.airflow.dag_config import LONG_TASK
from kafka_dr.airflow.flow_sync_dag import per_flow_sync_dag
from kafka_dr.core.config import DrConfig
from kafka_dr.core.topic_sync import format_report

log = logging.getLogger(__name__)


def sync_topic_configs(cfg: DrConfig, flow_name: str, dry_run: bool = False) -> dict:
    """Sync one flow's topics; log and return the drift report, raise naming what failed."""
    from kafka_dr.airflow.secret_resolver import airflow_resolver
    from kafka_dr.kafka.topic_sync import TopicSyncFailed, sync_flow

    (flow,) = [f for f in cfg.flows if f.name == flow_name]
    try:
        report = sync_flow(cfg, flow, airflow_resolver(), dry_run=dry_run)
    except TopicSyncFailed as e:
        log.error("topic-config drift report (with failures):\n%s", format_report(e.report))
        raise
    log.info("topic-config drift report:\n%s", format_report(report))
    for note in report.get("notes", ()):
        log.warning("%s", note)
    return report


def build_topic_config_sync_dag(cfg: DrConfig) -> DAG:
    return per_flow_sync_dag(
        cfg,
        "dr_topic_config_sync",
        "Create missing target topics, raise partition counts, sync topic configs incrementally; report drift",
        cfg.schedules.topic_config_sync,
        __doc__,
        sync_topic_configs,
        default_args={"execution_timeout": LONG_TASK},  # every topic's configs
    )

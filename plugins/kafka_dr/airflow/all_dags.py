"""Every kafka-dr DAG, built from the config ($KAFKA_DR_CONFIG): what a deployment's one-line
DAG file imports, so that its DAGs come from the installed package::

    from kafka_dr.airflow.all_dags import *  # noqa: F403 - every kafka-dr DAG

(The repository's ``dags/`` holds one thin file per DAG instead; the wheel ships them too.)
"""

from __future__ import annotations

from kafka_dr.airflow.access_sync_dags import build_acl_sync_dag, build_quota_sync_dag
from kafka_dr.airflow.dag_config import config_path, dag_config
from kafka_dr.airflow.data_quality_dag import build_data_quality_dag
from kafka_dr.airflow.failback_dag import build_drain_dag, build_failback_dag
from kafka_dr.airflow.failover_dag import build_failover_dag
from kafka_dr.airflow.health import build_cluster_health_dag
from kafka_dr.airflow.heartbeat_dag import build_heartbeat_dag
from kafka_dr.airflow.offset_sync_dag import build_offset_sync_dag
from kafka_dr.airflow.parity_dag import build_parity_dag
from kafka_dr.airflow.preflight_dag import build_preflight_dag
from kafka_dr.airflow.replication_dag import build_replication_dags
from kafka_dr.airflow.schema_mirror_dag import build_schema_mirror_dag
from kafka_dr.airflow.topic_config_sync_dag import build_topic_config_sync_dag

BUILDERS = (
    build_acl_sync_dag,
    build_cluster_health_dag,
    build_data_quality_dag,
    build_drain_dag,
    build_failback_dag,
    build_failover_dag,
    build_heartbeat_dag,
    build_offset_sync_dag,
    build_parity_dag,
    build_preflight_dag,
    build_quota_sync_dag,
    build_schema_mirror_dag,
    build_topic_config_sync_dag,
)


def build_all(cfg, config_file: str) -> list:
    """Every DAG of ``cfg``: one per builder, and one replication DAG per flow."""
    return [*(build(cfg) for build in BUILDERS), *build_replication_dags(cfg, config_file)]


_DAGS = {d.dag_id: d for d in build_all(dag_config(), str(config_path().resolve()))}
globals().update(_DAGS)
__all__ = sorted(_DAGS)  # the names are known once the config is read

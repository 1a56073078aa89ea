"""ACL sync, built from the kafka-dr config ($KAFKA_DR_CONFIG)."""

from kafka_dr.airflow.access_sync_dags import build_acl_sync_dag
from kafka_dr.airflow.dag_config import dag_config

dag = build_acl_sync_dag(dag_config())

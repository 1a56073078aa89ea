"""Consumer-group offset sync onto every flow's target, built from the kafka-dr config ($KAFKA_DR_CONFIG)."""

from kafka_dr.airflow.dag_config import dag_config
from kafka_dr.airflow.offset_sync_dag import build_offset_sync_dag

dag = build_offset_sync_dag(dag_config())

"""The failback's last step (triggered from the UI), built from the kafka-dr config ($KAFKA_DR_CONFIG)."""

from kafka_dr.airflow.dag_config import dag_config
from kafka_dr.airflow.failback_dag import build_drain_dag

dag = build_drain_dag(dag_config())

"""Pre-flight validation (triggered), built from the kafka-dr config ($KAFKA_DR_CONFIG)."""

from kafka_dr.airflow.dag_config import dag_config
from kafka_dr.airflow.preflight_dag import build_preflight_dag

dag = build_preflight_dag(dag_config())

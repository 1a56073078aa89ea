"""Data-quality expectations across clusters, built from the kafka-dr config ($KAFKA_DR_CONFIG)."""

from kafka_dr.airflow.dag_config import dag_config
from kafka_dr.airflow.data_quality_dag import build_data_quality_dag

dag = build_data_quality_dag(dag_config())

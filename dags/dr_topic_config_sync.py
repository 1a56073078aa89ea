"""Topic-config sync, built from the kafka-dr config ($KAFKA_DR_CONFIG)."""

from kafka_dr.airflow.dag_config import dag_config
from kafka_dr.airflow.topic_config_sync_dag import build_topic_config_sync_dag

dag = build_topic_config_sync_dag(dag_config())

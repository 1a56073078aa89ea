"""Cluster health checks, built from the kafka-dr config ($KAFKA_DR_CONFIG)."""

from kafka_dr.airflow.dag_config import dag_config
from kafka_dr.airflow.health import build_cluster_health_dag

dag = build_cluster_health_dag(dag_config())

"""Heartbeats and replication latency, built from the kafka-dr config ($KAFKA_DR_CONFIG)."""

from kafka_dr.airflow.dag_config import dag_config
from kafka_dr.airflow.heartbeat_dag import build_heartbeat_dag

dag = build_heartbeat_dag(dag_config())

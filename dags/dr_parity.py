"""Failover readiness (the parity report), built from the kafka-dr config ($KAFKA_DR_CONFIG)."""

from kafka_dr.airflow.dag_config import dag_config
from kafka_dr.airflow.parity_dag import build_parity_dag

dag = build_parity_dag(dag_config())

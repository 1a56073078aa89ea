"""Schema-registry topic mirroring, built from the kafka-dr config ($KAFKA_DR_CONFIG)."""

from kafka_dr.airflow.dag_config import dag_config
from kafka_dr.airflow.schema_mirror_dag import build_schema_mirror_dag

dag = build_schema_mirror_dag(dag_config())

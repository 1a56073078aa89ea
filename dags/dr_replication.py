"""One replication DAG per flow, built from the kafka-dr config ($KAFKA_DR_CONFIG)."""

from kafka_dr.airflow.dag_config import config_path, dag_config
from kafka_dr.airflow.replication_dag import build_replication_dags

for _dag in build_replication_dags(dag_config(), str(config_path().resolve())):
    globals()[_dag.dag_id] = _dag

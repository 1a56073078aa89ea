"""``dr_cluster_health``: every configured cluster answers, and is the cluster we think it is.

A check per cluster: metadata answers within the timeout, and when the config pins a
``cluster_id`` the cluster reports that id (a DNS or config mix-up that points ``west`` at
``east`` would otherwise make replication copy a cluster onto itself).
"""

from __future__ import annotations

from airflow.sdk import DAG, task

from kafka_dr.airflow.dag_config import kafka_dr_dag
from kafka_dr.core.config import DrConfig


def check_cluster(cfg: DrConfig, name: str) -> dict:
    """Ask one cluster for metadata; raise naming the cluster when it is wrong or away."""
    from kafka_dr.airflow.secret_resolver import airflow_resolver
    from kafka_dr.kafka import clients

    cluster = cfg.cluster(name)
    found = clients.cluster_id(cluster, airflow_resolver(), timeout=15.0)
    if cluster.cluster_id and found != cluster.cluster_id:
        raise RuntimeError(
            f"cluster {name!r} at {cluster.bootstrap_servers} reports cluster id {found!r}, "
            f"but the config expects {cluster.cluster_id!r}: wrong address, or the cluster was rebuilt"
        )
    return {"cluster": name, "cluster_id": found, "bootstrap": cluster.bootstrap_servers}


def build_cluster_health_dag(cfg: DrConfig) -> DAG:
    with kafka_dr_dag(
        "dr_cluster_health",
        "Every configured Kafka cluster answers and has the expected cluster id",
        cfg.schedules.cluster_health,
        __doc__,
    ) as dag:
        for name in cfg.clusters:

            @task(task_id=f"check_{name}", retries=1)
            def check(cluster_name: str = name) -> dict:
                return check_cluster(cfg, cluster_name)

            check()
    return dag

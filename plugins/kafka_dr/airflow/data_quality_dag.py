"""``dr_data_quality``: prove the clusters agree, periodically and on demand (the failback gate).

One task, ``validate``, runs :func:`kafka_dr.dq.run_data_quality` in the task with a local
Spark session from ``spark`` (``master``, ``conf``): the comparison reads records in Spark
tasks, the driver only sees one row per topic-partition, and the task needs the result object
(the failback gate reads it), which a spark-submit child process would have to hand back.
Each run compares what arrived since the last verified watermarks, and everything every
``data_quality.full_sweep_hours``. A trigger may narrow the run with
``{"flows": [...], "topics": [...]}`` and ask for a full sweep with ``{"full": true}``.

A failed validation fails the task with a message naming every failing expectation and
topic-partition, and alerts through :class:`~kafka_dr.airflow.notifier.KafkaDrNotifier`
(e-mail, webhook). Every run's summary is also written to ``<prefix>.dq-results`` on each
cluster and its results are in the Data Docs site (see docs/data-quality.md).
"""

from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG, task

from kafka_dr.airflow.dag_config import kafka_dr_dag
from kafka_dr.airflow.notifier import failure_callbacks
from kafka_dr.core.config import DrConfig


def secrets_to_env(cfg: DrConfig, resolve) -> None:
    """Spark's Python workers inherit the environment: hand them the clusters' ``${airflow:...}``
    secrets the way the replication operator hands them to spark-submit."""
    from kafka_dr.core.secret_refs import config_refs, ref_env_name

    for cluster in cfg.clusters.values():
        for ref in config_refs(cluster.client):
            if ref.source == "airflow":
                os.environ[ref_env_name(ref)] = resolve(ref)


def validate_clusters(
    cfg: DrConfig, flows: list[str] | None = None, topics: list[str] | None = None, full: bool = False
) -> dict:
    """Run the checks; raise :class:`~kafka_dr.core.dq.DataQualityFailed` when one fails."""
    from kafka_dr.airflow.secret_resolver import airflow_resolver
    from kafka_dr.dq import DataQualityFailed, run_data_quality

    resolve = airflow_resolver()
    secrets_to_env(cfg, resolve)
    result = run_data_quality(cfg, flows=flows, topics=topics, resolve=resolve, full=full)
    if not result.success:
        raise DataQualityFailed(result)
    return {**result.to_record(), "figures": dict(result.figures)}


def build_data_quality_dag(cfg: DrConfig) -> DAG:
    with kafka_dr_dag(
        "dr_data_quality",
        "Data-quality expectations across clusters (Great Expectations); the failback gate",
        cfg.schedules.data_quality,
        __doc__,
        tags=("monitoring", "data-quality"),
    ) as dag:

        @task(
            task_id="validate",
            retries=1,
            retry_delay=pendulum.duration(seconds=30),
            execution_timeout=pendulum.duration(hours=1),  # a Spark comparison of every flow's partitions
            on_failure_callback=failure_callbacks(cfg.alerts),
        )
        def validate(**context) -> dict:
            conf = getattr(context.get("dag_run"), "conf", None) or {}
            return validate_clusters(cfg, conf.get("flows"), conf.get("topics"), bool(conf.get("full")))

        validate()
    return dag

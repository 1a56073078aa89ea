"""Load the config for DAG files: local file only, cached, never the network.

DAG files are parsed often (every ``min_file_process_interval``); they read the YAML named by
``KAFKA_DR_CONFIG`` and nothing else. The parse is cached by path and modification time so
several DAG files in one parse pay once. An invalid config raises ``ConfigError``, which
Airflow shows as the DAG file's import error: the operator sees every problem with its path.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from kafka_dr.core.config import DrConfig
from kafka_dr.core.config_load import ConfigError, load_config
from kafka_dr.core.parse_context import Problem

_cache: dict[tuple[str, float], DrConfig] = {}

#: How long a task may run before Airflow cuts it and retries it. The default fits the tasks that
#: make a few Kafka calls (each with its own timeout, seconds to a minute); a DAG whose tasks copy
#: or compare data sets its own. A hung task is cut and retried well within five minutes.
SHORT_TASK = timedelta(minutes=2)
LONG_TASK = timedelta(minutes=10)
#: Retries come soon: every task is idempotent, and a flow or a check waiting on a retry is late.
RETRY_DELAY = timedelta(seconds=20)

#: Settings shared by every kafka-dr DAG.
TAGS = ["kafka-dr"]
DEFAULT_ARGS = {"owner": "kafka-dr", "retries": 2, "retry_delay": RETRY_DELAY, "execution_timeout": SHORT_TASK}


def replication_dag_id(flow: str) -> str:
    """The DAG that runs a flow's replication job (one place: the failback starts it by name)."""
    return f"dr_replicate_{flow}"


#: A DAG without a schedule is an operator's action (failover, failback, preflight): when the
#: executor is full, which in an outage it is with periodic tasks waiting out timeouts on the
#: dead cluster, its tasks are queued before theirs.
TRIGGERED_PRIORITY = {"priority_weight": 100, "weight_rule": "absolute"}


def kafka_dr_dag(
    dag_id: str,
    description: str,
    schedule: str | None,
    doc_md: str | None,
    tags: tuple[str, ...] = (),
    default_args: dict | None = None,
    **kwargs,
):
    """A kafka-dr DAG with the house settings: tagged ``kafka-dr``, retries soon by default, tasks
    cut after :data:`SHORT_TASK` unless the DAG or task says otherwise, no catch-up, one run at a
    time (every kafka-dr DAG is idempotent but not concurrent-safe).
    A DAG without a schedule only runs when triggered, so it is never paused: a trigger from
    the REST API (a runbook, an incident bot) would otherwise queue forever."""
    import pendulum
    from airflow.sdk import DAG

    if schedule is None:
        kwargs.setdefault("is_paused_upon_creation", False)
        default_args = {**TRIGGERED_PRIORITY, **(default_args or {})}

    return DAG(
        dag_id=dag_id,
        description=description,
        schedule=schedule,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=[*TAGS, *tags],
        default_args={**DEFAULT_ARGS, **(default_args or {})},
        doc_md=doc_md,
        **kwargs,
    )


def config_path() -> Path:
    raw = os.environ.get("KAFKA_DR_CONFIG")
    if not raw:
        raise ConfigError(
            [
                Problem(
                    "KAFKA_DR_CONFIG", "not set", "point it at your kafka-dr YAML (the lab writes .lab/kafka-dr.yaml)"
                )
            ]
        )
    return Path(raw)


def dag_config() -> DrConfig:
    path = config_path()
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return load_config(path)  # raises a ConfigError naming the path
    key = (str(path), mtime)
    if key not in _cache:
        _cache.clear()
        _cache[key] = load_config(path)
    return _cache[key]

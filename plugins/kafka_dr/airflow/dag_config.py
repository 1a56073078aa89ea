"""Load the config for DAG files: a local file or an Airflow Variable, cached.

DAG files are parsed often (every ``min_file_process_interval``); they read the config
``KAFKA_DR_CONFIG`` names and nothing else:

- a path: the YAML file;
- ``airflow-variable:<key>``: the YAML text of Airflow Variable ``<key>``, looked up as Airflow
  looks up any Variable (its secrets backends first: ``AIRFLOW_VAR_<KEY>``, Vault, AWS Secrets
  Manager...; then its database). The text is written to a file named by its digest
  (:func:`variable_file`), so the Spark jobs and every task read what the DAG was built from.

The parse is cached by path and modification time so several DAG files in one parse pay once.
An invalid config raises ``ConfigError``, which Airflow shows as the DAG file's import error:
the operator sees every problem with its path.
"""

from __future__ import annotations

import hashlib
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


#: ``KAFKA_DR_CONFIG=airflow-variable:<key>``: the config is that Airflow Variable's text
VARIABLE_PREFIX = "airflow-variable:"


def config_path() -> Path:
    """The config file the DAGs are built from (a Variable's text written to one first)."""
    raw = os.environ.get("KAFKA_DR_CONFIG")
    if not raw:
        raise ConfigError(
            [
                Problem(
                    "KAFKA_DR_CONFIG",
                    "not set",
                    "point it at your kafka-dr YAML (the lab writes .lab/kafka-dr.yaml), "
                    f"or at an Airflow Variable holding it ({VARIABLE_PREFIX}<key>)",
                )
            ]
        )
    if raw.startswith(VARIABLE_PREFIX):
        return variable_file(raw.removeprefix(VARIABLE_PREFIX))
    return Path(raw)


def variable_file(key: str) -> Path:
    """Airflow Variable ``key``'s text as a file under ``$AIRFLOW_HOME/kafka-dr/`` named by its
    digest: a changed Variable is a new file, so a running job keeps the one it started with."""
    text = _variable_text(key)
    home = Path(os.environ.get("AIRFLOW_HOME") or Path.home() / "airflow")
    path = home / "kafka-dr" / f"config-{hashlib.sha256(text.encode()).hexdigest()[:16]}.yaml"
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)  # readers see the whole text or none
    return path


def _variable_text(key: str) -> str:
    """The Variable through the Task SDK (DAG parsing and tasks: secrets backends, then the
    database through Airflow's API); where that has no database (the api-server's status page),
    through Airflow's own model, which reads the database itself."""
    from airflow.sdk import Variable

    where = f"{VARIABLE_PREFIX}{key}"
    try:
        text = Variable.get(key, default=None)
        if text is None:
            text = _variable_from_database(key)
    except Exception as e:  # noqa: BLE001 - any backend's failure is the DAG file's import error
        raise ConfigError([Problem(f"KAFKA_DR_CONFIG={where}", f"cannot read the Variable: {e}")]) from None
    if not text or not str(text).strip():
        raise ConfigError(
            [Problem(f"KAFKA_DR_CONFIG={where}", "no such Variable, or it is empty", "put the YAML config in it")]
        )
    return str(text)


def _variable_from_database(key: str) -> str | None:
    try:
        from airflow.models import Variable

        return Variable.get(key, default_var=None)
    except Exception:  # noqa: BLE001 - a process without database access: the SDK's answer stands
        return None


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

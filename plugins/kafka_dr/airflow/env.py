"""The Airflow environment for running kafka-dr against a config (the lab's by default).

Airflow reads its settings from ``AIRFLOW__*`` variables and connections from
``AIRFLOW_CONN_*`` variables, so a project-local Airflow needs no shared state: this module
computes those variables. ``kafka-dr airflow env`` prints them as ``export`` lines.

Cluster connections are named ``kafka_dr_<cluster>`` (type ``generic``): host is the
bootstrap list and ``extra`` the non-secret librdkafka settings, so an operator looking at
Airflow's connection list sees what the DAGs talk to. Secrets stay references in the config.
"""

from __future__ import annotations

import json
from pathlib import Path

from kafka_dr.core.config import DrConfig
from kafka_dr.core.secret_refs import SecretRef, is_secret_key

REPO = Path(__file__).resolve().parents[3]


def cluster_conn_id(cluster: str) -> str:
    return f"kafka_dr_{cluster}"


def connection_env(cfg: DrConfig) -> dict[str, str]:
    env: dict[str, str] = {}
    for name, c in cfg.clusters.items():
        extra = {k: v for k, v in c.client.items() if not isinstance(v, SecretRef) and not is_secret_key(k)}
        env[f"AIRFLOW_CONN_{cluster_conn_id(name).upper()}"] = json.dumps(
            {"conn_type": "generic", "host": c.bootstrap_servers, "description": f"kafka-dr cluster {name}", "extra": extra}
        )
    env[f"AIRFLOW_CONN_{cfg.spark.connection.upper()}"] = json.dumps({"conn_type": "spark", "host": cfg.spark.master})
    return env


def airflow_env(airflow_home: Path, config_path: Path, cfg: DrConfig, repo: Path = REPO) -> dict[str, str]:
    """Everything Airflow needs to run this project's DAGs against ``config_path``."""
    airflow_home = airflow_home.resolve()
    env = {
        "AIRFLOW_HOME": str(airflow_home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(repo / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(repo / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_home / 'airflow.db'}",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(airflow_home / "logs"),
        "KAFKA_DR_CONFIG": str(Path(config_path).resolve()),
    }
    env.update(connection_env(cfg))
    return env

"""The Airflow environment for running kafka-dr against a config (the lab's by default).

Airflow reads its settings from ``AIRFLOW__*`` variables and connections from
``AIRFLOW_CONN_*`` variables, so a project-local Airflow needs no shared state: this module
computes those variables. ``kafka-dr airflow env`` prints them as ``export`` lines.

Cluster connections are named ``kafka_dr_<cluster>`` (type ``generic``): host is the
bootstrap list and ``extra`` the non-secret librdkafka settings, so an operator looking at
Airflow's connection list sees what the DAGs talk to. Secrets stay references in the config.

The UI and the REST API ask for a login: Airflow 3's SimpleAuthManager with one ``admin``
user (:data:`LAB_USER`), whose password :func:`ensure_login` generates once into a
``0600`` passwords file under ``AIRFLOW_HOME``. The password is never printed; the operator
reads it from that file. A production Airflow brings its own auth manager instead.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from kafka_dr.core.config import DrConfig
from kafka_dr.core.secret_refs import SecretRef, is_secret_key
from kafka_dr.shipped import folder

#: The lab's Airflow user (role admin: it triggers failover and failback).
LAB_USER = "operator"
PASSWORDS_FILE = "simple_auth_manager_passwords.json"


def passwords_file(airflow_home: Path) -> Path:
    return Path(airflow_home).resolve() / PASSWORDS_FILE


def ensure_login(airflow_home: Path, user: str = LAB_USER) -> Path:
    """Create the passwords file with a random password for ``user`` unless it has one.

    Airflow would generate one itself, but print it to its log; generated here, it only
    lives in the file (mode 0600)."""
    path = passwords_file(airflow_home)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        known = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        known = {}
    if not known.get(user):
        known[user] = secrets.token_urlsafe(12)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(known, f)
    os.chmod(path, 0o600)
    return path


def login_env(airflow_home: Path, user: str = LAB_USER) -> dict[str, str]:
    """Settings that make Airflow's UI and API require ``user``'s password."""
    return {
        "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{user}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords_file(airflow_home)),
    }


def cluster_conn_id(cluster: str) -> str:
    return f"kafka_dr_{cluster}"


def connection_env(cfg: DrConfig) -> dict[str, str]:
    env: dict[str, str] = {}
    for name, c in cfg.clusters.items():
        extra = {k: v for k, v in c.client.items() if not isinstance(v, SecretRef) and not is_secret_key(k)}
        env[f"AIRFLOW_CONN_{cluster_conn_id(name).upper()}"] = json.dumps(
            {
                "conn_type": "generic",
                "host": c.bootstrap_servers,
                "description": f"kafka-dr cluster {name}",
                "extra": extra,
            }
        )
    env[f"AIRFLOW_CONN_{cfg.spark.connection.upper()}"] = json.dumps({"conn_type": "spark", "host": cfg.spark.master})
    return env


def airflow_env(airflow_home: Path, config_path: Path, cfg: DrConfig) -> dict[str, str]:
    """Everything Airflow needs to run this project's DAGs against ``config_path``: the DAG
    files kafka-dr ships, and a plugins folder of Airflow's own (the status page comes through
    the package's entry point)."""
    airflow_home = airflow_home.resolve()
    env = {
        "AIRFLOW_HOME": str(airflow_home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(folder("dags")),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(airflow_home / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_home / 'airflow.db'}",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(airflow_home / "logs"),
        "KAFKA_DR_CONFIG": str(Path(config_path).resolve()),
    }
    env.update(login_env(airflow_home))
    env.update(connection_env(cfg))
    return env

"""A real Airflow (api-server, scheduler, dag-processor) as subprocesses, for browser tests.

Private ``AIRFLOW_HOME`` and port, the env of ``kafka-dr airflow env`` (login required), and
every process stopped by id when the block ends, on failure too. Logs stay in the home folder
so a failing test can be read afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from kafka_dr.airflow.env import LAB_USER, airflow_env, ensure_login
from kafka_dr.core.config_load import load_config

AIRFLOW = str(Path(sys.executable).with_name("airflow"))


def airflow_env_for(home: Path, config: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(airflow_env(home, config, load_config(config)))
    base = f"http://localhost:{port}"
    env.update(
        {
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__BASE_URL": base,
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{base}/execution/",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(24),
            "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(24),
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": "5",  # a retry after a hiccup comes at once, not in 5 min
            "PYSPARK_PYTHON": sys.executable,
        }
    )
    return env


def password(home: Path) -> str:
    return json.loads(ensure_login(home).read_text())[LAB_USER]


def wait_http(url: str, timeout: float, procs: dict[str, subprocess.Popen], home: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, p in procs.items():
            if p.poll() is not None:
                raise RuntimeError(
                    f"airflow {name} exited with {p.returncode}; see {home / (name + '.log')}:\n"
                    + (home / f"{name}.log").read_text()[-3000:]
                )
        try:
            with urllib.request.urlopen(url, timeout=3) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(1)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f}s; logs in {home}")


@contextlib.contextmanager
def running_airflow(home: Path, config: Path, port: int):
    """Yield ``(base_url, env)`` while Airflow runs; stop every process it started at the end."""
    home.mkdir(parents=True, exist_ok=True)
    env = airflow_env_for(home, config, port)
    ensure_login(home)
    migrate = subprocess.run([AIRFLOW, "db", "migrate"], env=env, capture_output=True, text=True)
    if migrate.returncode:
        raise RuntimeError(f"airflow db migrate failed:\n{migrate.stdout[-2000:]}\n{migrate.stderr[-2000:]}")
    procs: dict[str, subprocess.Popen] = {}
    try:
        for name, args in (
            ("api-server", ["api-server", "--port", str(port)]),
            ("scheduler", ["scheduler"]),
            ("dag-processor", ["dag-processor"]),
        ):
            log = open(home / f"{name}.log", "w")
            procs[name] = subprocess.Popen(
                [AIRFLOW, *args], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        wait_http(f"http://localhost:{port}/api/v2/monitor/health", 180, procs, home)
        yield f"http://localhost:{port}", env
    finally:
        for p in procs.values():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)

"""``kafka-dr airflow env|up|status|down``: Airflow for a config, printed or run as a service."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

VERBS = {
    "env": "print the export lines for an Airflow of your own",
    "up": "run Airflow (api-server, scheduler, dag-processor, triggerer, Celery worker; lab's PostgreSQL, Redis)",
    "status": "each process, PostgreSQL, Redis and Airflow's health (exit 0 only when all are healthy)",
    "down": "stop the processes `up` started, then Redis and PostgreSQL",
}


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    af = sub.add_parser("airflow", parents=[common], help="Airflow for a config: its environment, or run as a service")
    af.add_argument("airflow_cmd", choices=list(VERBS), help="; ".join(f"{k}: {v}" for k, v in VERBS.items()))
    af.add_argument("--dir", type=Path, default=None, help="lab folder (default: $KAFKA_DR_LAB_DIR or ./.lab)")
    af.add_argument("--config", type=Path, default=None, help="config file (default: the lab's)")
    af.add_argument("--home", type=Path, default=None, help="AIRFLOW_HOME (default: <lab>/airflow)")
    af.add_argument("--port", type=int, default=None, help="up: the UI and API port on 127.0.0.1 (default 8280)")
    af.add_argument("--db-port", type=int, default=None, help="up: PostgreSQL's port on 127.0.0.1 (default 15432)")
    af.set_defaults(handler=run)


def run(a: argparse.Namespace) -> int:
    from kafka_dr.lab.lab import default_lab_dir

    lab_dir = (a.dir or default_lab_dir()).resolve()
    return {"env": env, "up": up, "status": status, "down": down}[a.airflow_cmd](a, lab_dir)


def env(a: argparse.Namespace, lab_dir: Path) -> int:
    from kafka_dr.airflow.env import LAB_USER, airflow_env, ensure_login
    from kafka_dr.core.config_load import load_config

    path = a.config or lab_dir / "kafka-dr.yaml"
    home = a.home or lab_dir / "airflow"
    for key, value in airflow_env(home, path, load_config(path)).items():
        print(f"export {key}={shlex.quote(value)}")
    # Airflow starts its own parts (``airflow standalone``) as ``airflow ...`` from PATH.
    print(f'export PATH={shlex.quote(str(Path(sys.executable).parent))}:"$PATH"')
    pw = ensure_login(home)
    print(f"# Airflow login: user {LAB_USER!r}, password in {pw} (key {LAB_USER!r})", file=sys.stderr)
    return 0


def up_problems(a: argparse.Namespace, config: Path) -> list[str]:
    """Every reason not to start, found before anything starts."""
    problems = [
        f"{flag} {v}: not a TCP port (1-65535)"
        for flag, v in (("--port", a.port), ("--db-port", a.db_port))
        if v is not None and not 1 <= v <= 65535
    ]
    if a.port is not None and a.port == a.db_port:
        problems.append(f"--port and --db-port are both {a.port}")
    if not config.is_file():
        problems.append(f"no config at {config} (run `kafka-dr lab up` first, or pass --config)")
    return problems


def up(a: argparse.Namespace, lab_dir: Path) -> int:
    from kafka_dr.airflow.env import LAB_USER, passwords_file
    from kafka_dr.core.config_load import load_config
    from kafka_dr.core.inputs import InvalidInput
    from kafka_dr.lab.airflow_service import AirflowService, base_url, resolve_spec

    service = AirflowService(lab_dir)
    spec = resolve_spec(service.load().get("spec"), lab_dir, a.config, a.home, a.port, a.db_port)
    problems = up_problems(a, Path(spec.config))
    if problems:
        raise InvalidInput(problems)
    cfg = load_config(spec.config)
    st = service.up(spec, cfg)
    print_status(st)
    home = Path(spec.home)
    print(f"\nAirflow:   {base_url(spec.port)}/   (CeleryExecutor; metadata in PostgreSQL on 127.0.0.1:{spec.db_port})")
    print(f"user:      {LAB_USER}")
    print(f"password:  cat {shlex.quote(str(passwords_file(home)))}   (JSON: user -> password)")
    print(f"logs:      {home}/<process>.log, task logs under {home / 'logs'}, PostgreSQL's in {lab_dir / 'postgres'}")
    here = f" --dir {shlex.quote(str(lab_dir))}" if a.dir else ""
    print(f"stop it:   {shlex.quote(str(Path(sys.executable).with_name('kafka-dr')))} airflow down{here}")
    return 0


def status(a: argparse.Namespace, lab_dir: Path) -> int:
    from kafka_dr.lab.airflow_service import AirflowService

    st = AirflowService(lab_dir).status()
    print_status(st)
    return 0 if not st.problems else 1


def down(a: argparse.Namespace, lab_dir: Path) -> int:
    from kafka_dr.lab.airflow_service import AirflowService

    stopped = AirflowService(lab_dir).down()
    print(f"Airflow stopped ({', '.join(stopped) or 'nothing was running'}): {lab_dir}")
    return 0


def print_status(st) -> None:
    """One row per process, PostgreSQL and Redis, then the health endpoint's view; the last line says
    whether all is healthy."""
    from kafka_dr.lab.airflow_service import COMPONENTS, base_url

    print(f"{'process':<15}{'pid':<9}state")
    for p in st.processes:
        print(f"{p.role:<15}{p.pid if p.alive else '-':<9}{'running' if p.alive else 'stopped'}")
    db = "answering" if st.postgres_answering else ("starting" if st.postgres_pid else "stopped")
    print(f"{'postgresql':<15}{st.postgres_pid or '-':<9}{db} (127.0.0.1:{st.spec.db_port})")
    broker = "answering" if st.broker_answering else "stopped"
    print(f"{'redis':<15}{st.broker_pid or '-':<9}{broker} (Celery's broker)")
    health = st.health or {}
    seen = ", ".join(f"{c} {(health.get(c) or {}).get('status') or '-'}" for c in COMPONENTS)
    print(f"health:        {seen if st.health else 'the API does not answer'}")
    if st.problems:
        print(f"Airflow not healthy: {'; '.join(st.problems)}")
    else:
        print(f"Airflow healthy: {base_url(st.spec.port)}/")

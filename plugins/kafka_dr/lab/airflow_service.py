"""The lab's Airflow as a running service: api-server, scheduler, dag-processor, triggerer and
a Celery worker (the CeleryExecutor, as the official Helm chart runs it), on the lab's own
PostgreSQL (:mod:`kafka_dr.lab.postgres`) with Redis as the broker (:mod:`kafka_dr.lab.redis_broker`).

Tasks run in the worker, not under the scheduler: a scheduler that dies and starts again
adopts the tasks still running (a continuous flow's replication job among them) instead of
resetting them, so replication goes on through it.

Everything it keeps lives in the lab folder::

    airflow.json             what runs: the settings, each process's pid and start time (0600:
                             it also holds the API's signing keys, shared by all processes)
    postgres/                the metadata database's cluster
    broker/                  Redis's socket and log
    airflow/                 AIRFLOW_HOME (unless --home): <role>.log per process, logs/ for tasks

The environment is ``kafka-dr airflow env``'s (DAGs and plugins from this repository, the
cluster connections, the login) plus the database URL, the executor and the ports. ``up`` is
idempotent: running processes are left alone, a dead one is started again with the same
settings. A process is only signalled when ``/proc`` shows the recorded start time and an
``airflow`` command line under that pid, so a recycled pid is never touched.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from kafka_dr.airflow.env import airflow_env, ensure_login
from kafka_dr.core.config import DrConfig
from kafka_dr.lab import processes
from kafka_dr.lab.lab import LabError
from kafka_dr.lab.postgres import Postgres, port_in_use
from kafka_dr.lab.processes import proc_state, session_members, stop_session
from kafka_dr.lab.redis_broker import RedisBroker

#: Stopped in the reverse order (the worker first, the API last: tasks being stopped still report to it).
ROLES = ("api-server", "scheduler", "dag-processor", "triggerer", "celery-worker")
#: Started in this order: the dag-processor needs no API and parses the DAG files while the
#: api-server starts (both spend their first seconds importing); the scheduler waits for the API.
START_ORDER = ("dag-processor", "api-server", "scheduler", "triggerer", "celery-worker")
#: The health endpoint's components that must say "healthy".
COMPONENTS = ("metadatabase", "scheduler", "dag_processor", "triggerer")
DEFAULT_PORT = 8280
DEFAULT_DB_PORT = 15432
AIRFLOW = str(Path(sys.executable).with_name("airflow"))
CELERY_ALONE = ("--without-gossip", "--without-mingle")


@dataclass(frozen=True)
class ServiceSpec:
    """What the service runs with: the config, AIRFLOW_HOME, the API's and the database's port."""

    config: str
    home: str
    port: int
    db_port: int


def resolve_spec(
    recorded: dict | None,
    lab_dir: Path,
    config: Path | None,
    home: Path | None,
    port: int | None,
    db_port: int | None,
) -> ServiceSpec:
    """The settings of this ``up``: what is given, else what the lab's service last ran with,
    else the defaults (the lab's config, ``<lab>/airflow``, 8280, 15432; 8080 is the lab Spark master's UI)."""
    last = recorded or {}
    return ServiceSpec(
        config=str(Path(config).resolve()) if config else last.get("config") or str(lab_dir / "kafka-dr.yaml"),
        home=str(Path(home).resolve()) if home else last.get("home") or str(lab_dir / "airflow"),
        port=port or last.get("port") or DEFAULT_PORT,
        db_port=db_port or last.get("db_port") or DEFAULT_DB_PORT,
    )


def base_url(port: int) -> str:
    return f"http://127.0.0.1:{port}"


#: Celery pool processes kept forked while idle (the rest, up to 24, fork as tasks arrive)
CELERY_READY = 12


def role_argv(role: str, port: int) -> list[str]:
    """The ``airflow`` command line of one role. Task logs are read from the local disk, so the
    scheduler and triggerer serve none (their log servers would take fixed ports)."""
    return {
        "api-server": ["api-server", "--host", "127.0.0.1", "--port", str(port)],
        "scheduler": ["scheduler", "--skip-serve-logs"],
        "dag-processor": ["dag-processor"],
        "triggerer": ["triggerer", "--skip-serve-logs"],
        # as many task slots as the core's parallelism. Twelve stay forked: the two continuous
        # flows hold two, and a failover triggered as a minute's periodic tasks arrive must
        # find a process ready, not wait for one forked on demand on a busy machine; no gossip
        # or mingle: the lab runs one worker
        "celery-worker": ["celery", "worker", "--skip-serve-logs", "--autoscale", f"24,{CELERY_READY}", *CELERY_ALONE],
    }[role]


def new_keys() -> dict[str, str]:
    return {"jwt_secret": secrets.token_urlsafe(32), "secret_key": secrets.token_urlsafe(32)}


def service_env(
    spec: ServiceSpec, cfg: DrConfig, db_url: str, broker_url: str, keys: dict[str, str], inherited: dict[str, str]
) -> dict[str, str]:
    """The processes' environment: the caller's, without any Airflow or kafka-dr setting of its
    own, plus ``kafka-dr airflow env`` and the service's settings."""
    env = {k: v for k, v in inherited.items() if not k.startswith("AIRFLOW") and k != "KAFKA_DR_CONFIG"}
    env.update(airflow_env(Path(spec.home), Path(spec.config), cfg))
    url = base_url(spec.port)
    env.update(
        {
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": db_url,
            "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
            "AIRFLOW__CELERY__BROKER_URL": broker_url,
            # task states for adoption: a restarted scheduler asks the backend what still runs
            "AIRFLOW__CELERY__RESULT_BACKEND": f"db+{db_url}",
            # two continuous flows hold a slot each for an hour; the periodic DAGs need room beside
            # them, and in an outage their tasks wait out timeouts on the dead cluster while a
            # triggered failover needs slots at once. Task processes mostly wait on the network,
            # so more slots cost memory, not CPU
            "AIRFLOW__CORE__PARALLELISM": "24",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(spec.port),
            "AIRFLOW__API__BASE_URL": url,
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
            # a task's first call (PATCH .../run) to a busy API outlasted the default 5 s: the task
            # died unstarted and waited out a retry delay or, when the API had marked it running,
            # the heartbeat timeout below
            "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "30",
            # a task whose supervisor stopped heartbeating is failed (and retried) after this
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "120",
            # a task left "running" by a killed scheduler is adopted at the next orphan sweep
            # (default every 300 s) once the dead scheduler's heartbeat is 30 s old; it runs on
            # meanwhile, but its end is only seen once adopted
            "AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL": "30",
            # an edited DAG file is parsed again at once; an unchanged one (the config it reads
            # may have changed) every two minutes, by one process: parsing every 30 s by two
            # took most of a core from the flows on a small machine
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "120",
            "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
            # every process signs and checks the same tokens: the task runners' and the UI's
            "AIRFLOW__API_AUTH__JWT_SECRET": keys["jwt_secret"],
            "AIRFLOW__API__SECRET_KEY": keys["secret_key"],
            "PYSPARK_PYTHON": sys.executable,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{inherited.get('PATH', '/usr/bin:/bin')}",
        }
    )
    return env


def health_problems(health: dict | None) -> list[str]:
    """What the health endpoint's answer says is not healthy (empty: all healthy)."""
    if health is None:
        return ["the API does not answer"]
    return [
        f"{c} {(health.get(c) or {}).get('status') or 'not reported'}"
        for c in COMPONENTS
        if (health.get(c) or {}).get("status") != "healthy"
    ]


def fetch_health(port: int, timeout: float = 30.0) -> dict | None:
    """The API's ``/api/v2/monitor/health`` (no login needed), or ``None`` when it does not answer."""
    try:
        with urllib.request.urlopen(f"{base_url(port)}/api/v2/monitor/health", timeout=timeout) as r:
            return json.loads(r.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


# --- processes ---------------------------------------------------------------------------


class PartExited(LabError):
    """A part of the service exited while the service was starting."""

    def __init__(self, role: str, message: str) -> None:
        super().__init__(message)
        self.role = role


def is_ours(entry: dict | None, rereads: int = 5) -> bool:
    """Whether a recorded part of the service still runs (:func:`kafka_dr.lab.processes.is_ours`
    with an ``airflow`` command line, or the title Celery gives its worker: ``[celeryd: ...]``)."""
    return processes.is_ours(entry, ("airflow", "celeryd"), rereads)


def leftover_sessions(state: dict) -> list[int]:
    """Sessions of the service whose leader died with processes left in them: a killed Celery
    worker's pool processes, and the tasks they ran, go on in its session. A session id is not
    given to a new process while any member still uses it, so these are still ours."""
    dead = [e["pid"] for e in (state.get("processes") or {}).values() if e and e.get("pid") and not is_ours(e)]
    out = []
    for sid in sorted(set(dead)):
        members = session_members(sid)
        if members and sid not in members:  # a live leader with this pid is another process's session
            out.append(sid)
    return out


@dataclass(frozen=True)
class ProcessStatus:
    role: str
    pid: int | None
    alive: bool


@dataclass(frozen=True)
class ServiceStatus:
    spec: ServiceSpec
    processes: list[ProcessStatus]
    postgres_pid: int | None
    postgres_answering: bool
    health: dict | None
    broker_pid: int | None = None
    broker_answering: bool = True

    @property
    def problems(self) -> list[str]:
        dead = [f"{p.role} not running" for p in self.processes if not p.alive]
        db = [] if self.postgres_answering else ["postgresql not answering"]
        broker = [] if self.broker_answering else ["the Celery broker (redis) not answering"]
        return dead + db + broker + health_problems(self.health)


class AirflowService:
    """The Airflow service of the lab in ``lab_dir``."""

    def __init__(self, lab_dir: Path) -> None:
        self.lab_dir = Path(lab_dir).resolve()
        self._children: dict[str, subprocess.Popen] = {}  # the parts this object started: how they ended

    @property
    def state_file(self) -> Path:
        return self.lab_dir / "airflow.json"

    def load(self) -> dict:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {}

    def _save(self, state: dict) -> None:
        self.lab_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(state, f, indent=2)
        tmp.replace(self.state_file)

    def postgres(self, spec: ServiceSpec) -> Postgres:
        return Postgres(self.lab_dir / "postgres", spec.db_port)

    def broker(self) -> RedisBroker:
        return RedisBroker(self.lab_dir / "broker")

    def running(self, state: dict | None = None) -> dict[str, dict]:
        state = self.load() if state is None else state
        return {role: e for role, e in state.get("processes", {}).items() if is_ours(e)}

    def up(self, spec: ServiceSpec, cfg: DrConfig, timeout: float = 240.0) -> ServiceStatus:
        """Start what is not running; wait until the health endpoint calls every part healthy."""
        state = self.load()
        running = self.running(state)
        recorded = state.get("spec")
        if running and recorded and ServiceSpec(**recorded) != spec:
            raise LabError(
                f"the Airflow service of the lab in {self.lab_dir} runs with other settings "
                f"({', '.join(f'{k} {v}' for k, v in recorded.items() if asdict(spec)[k] != v)}); "
                "run `kafka-dr airflow down` first"
            )
        if "api-server" not in running and port_in_use(spec.port):
            raise LabError(f"port {spec.port} on 127.0.0.1 is already in use; choose another --port")
        pg = self.postgres(spec)
        pg.ensure()
        broker = self.broker()
        broker.ensure()
        # what a dead part left in its session goes before its replacement starts, as a service
        # manager's restart does (a killed worker's pool processes would take tasks beside the
        # new worker's); a scheduler leaves nothing: its tasks run in the worker
        for sid in leftover_sessions(state):
            stop_session(sid, timeout=10.0)  # idle pool processes may ignore SIGTERM: not the full wait
        keys = state.get("keys") or new_keys()
        state = {"spec": asdict(spec), "keys": keys, "processes": running}
        self._save(state)
        env = service_env(spec, cfg, pg.url, broker.url, keys, dict(os.environ))
        home = Path(spec.home)
        ensure_login(home)
        if not running:  # a part restarted beside running ones finds the database migrated
            self._migrate(env, home)
        deadline = time.monotonic() + timeout
        restarted: set[str] = set()
        for role in START_ORDER:
            if role not in running:
                state["processes"][role] = self._start(role, spec, env, home)
                self._save(state)
            if role == "api-server":
                # the API answers (its first requests are the slow ones) before a scheduler
                # queues a task whose start call would wait on it
                self._wait_restarting(spec, env, home, state, deadline, lambda health: health is not None, restarted)
        self._wait_restarting(spec, env, home, state, deadline, lambda health: not health_problems(health), restarted)
        return self.status()

    def status(self) -> ServiceStatus:
        state = self.load()
        if not state.get("spec"):
            raise LabError(f"no Airflow service in {self.lab_dir} (run `kafka-dr airflow up`)")
        spec = ServiceSpec(**state["spec"])
        processes = [
            ProcessStatus(role, e.get("pid"), is_ours(e))
            for role in ROLES
            for e in [state.get("processes", {}).get(role) or {}]
        ]
        pg = self.postgres(spec)
        pid = pg.pid()
        answering = bool(pid) and pg.answering()
        broker = self.broker()
        return ServiceStatus(spec, processes, pid, answering, fetch_health(spec.port), broker.pid(), broker.answering())

    def down(self) -> list[str]:
        """Stop every process the service started, then PostgreSQL; returns what was stopped."""
        state = self.load()
        stopped = []
        for role in reversed(ROLES):
            entry = state.get("processes", {}).get(role)
            if is_ours(entry):
                stop_session(entry["pid"])
                stopped.append(role)
        for sid in leftover_sessions(state):
            stop_session(sid)
            stopped.append(f"tasks of an earlier session {sid}")
        if self.broker().stop():
            stopped.append("redis")
        if state.get("spec"):
            pg = self.postgres(ServiceSpec(**state["spec"]))
            if pg.running():
                pg.stop()
                stopped.append("postgresql")
            state["processes"] = {}
            self._save(state)
        return stopped

    # --- internals ---------------------------------------------------------------------

    def _migrate(self, env: dict[str, str], home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [AIRFLOW, "db", "migrate"], env=env, capture_output=True, text=True, cwd=home, check=False
        )
        (home / "db-migrate.log").write_text(proc.stdout + proc.stderr)
        if proc.returncode:
            raise LabError(f"airflow db migrate failed (log: {home / 'db-migrate.log'}): {proc.stderr.strip()[-800:]}")

    def _start(self, role: str, spec: ServiceSpec, env: dict[str, str], home: Path) -> dict:
        with open(home / f"{role}.log", "ab") as log:
            proc = subprocess.Popen(
                [AIRFLOW, *role_argv(role, spec.port)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own session: down stops its tasks with it
                cwd=home,
            )
        self._children[role] = proc
        seen = proc_state(proc.pid)
        if seen is None:
            raise LabError(f"airflow {role} exited at once; see {home / (role + '.log')}")
        return {"pid": proc.pid, "start": seen[0]}

    def _wait_restarting(
        self,
        spec: ServiceSpec,
        env: dict[str, str],
        home: Path,
        state: dict,
        deadline: float,
        ready: Callable[[dict | None], bool],
        restarted: set[str],
    ) -> None:
        """:meth:`_wait`; a part that dies meanwhile is started again, once, as a service manager
        restarts a part that died (a second death is the error)."""
        while True:
            try:
                return self._wait(spec, deadline, ready)
            except PartExited as e:
                if e.role in restarted:
                    raise
                restarted.add(e.role)
                state["processes"][e.role] = self._start(e.role, spec, env, home)
                self._save(state)

    def _ended(self, role: str) -> str:
        """How a part this object started ended: its exit code or the signal that killed it."""
        proc = self._children.get(role)
        if proc is None:
            return "ended"
        try:  # an exiting process loses its command line a moment before it can be waited for
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return f"no longer runs as recorded (pid {proc.pid} is alive with another command line or start time)"
        return f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"

    def _wait(self, spec: ServiceSpec, deadline: float, ready) -> None:
        """Until ``ready(health)``; a process of the service that exits meanwhile ends the wait."""
        health = None
        while time.monotonic() < deadline:
            state = self.load()
            for role, entry in state["processes"].items():
                if not is_ours(entry):
                    log = Path(spec.home) / f"{role}.log"
                    tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
                    raise PartExited(
                        role, f"airflow {role} {self._ended(role)} during start-up (log: {log}); last output:\n{tail}"
                    )
            health = fetch_health(spec.port, timeout=30)
            if ready(health):
                return
            time.sleep(2)
        raise LabError(
            f"Airflow did not become healthy in time ({', '.join(health_problems(health))}); logs in {spec.home}"
        )

"""The lab's Spark standalone cluster: one master and N workers from the installed pyspark.

Everything lives in one folder (``<lab>/spark``)::

    spark.json                    the layout (ports, workers, cores, memory) and the daemons' pids
    master.properties             the master's Spark properties (also what marks its command line)
    worker.properties             the workers' (idem)
    master.log, worker-<i>.log    each daemon's output
    work/worker-<i>/              the executors' folders (their stdout and stderr, per application)

The pyspark wheel has no ``sbin/`` scripts: a daemon is ``$SPARK_HOME/bin/spark-class <class>``
with ``SPARK_HOME`` the pyspark package folder and ``SPARK_LOCAL_IP=127.0.0.1`` (else a worker
registers under the machine's external address). A pid is signalled only when its command line
names this folder's properties file, so a recycled pid is never touched. ``up`` is idempotent:
it starts what is not running and returns once every worker is registered with the master.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from kafka_dr.lab.records import read_record, write_record
from kafka_dr.lab.topology import spark_section

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"

#: each daemon's own JVM: small, and no compiler or collector threads taking the machine's cores
DAEMON_ENV = {"SPARK_DAEMON_MEMORY": "256m", "SPARK_DAEMON_JAVA_OPTS": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"}

#: The master's properties. No REST submission server (it would take port 6066, one for every
#: lab on the machine). A job that sets no ``spark.cores.max`` gets one core, so several jobs
#: (the lab's two continuous flows, a data-quality run) share the workers instead of the first
#: one taking every core and the others waiting for it to end.
MASTER_PROPERTIES = {"spark.master.rest.enabled": "false", "spark.deploy.defaultCores": "1"}

_MEMORY = re.compile(r"^[1-9][0-9]*[mMgG]$")


class SparkClusterError(RuntimeError):
    """The cluster could not be started or does not match what was asked (exit 1)."""


def default_port() -> int:
    """The master's port: ``$KAFKA_DR_LAB_SPARK_PORT`` or Spark's own 7077."""
    return int(os.environ.get("KAFKA_DR_LAB_SPARK_PORT") or 7077)


def default_webui_port() -> int:
    """The master's web UI: ``$KAFKA_DR_LAB_SPARK_WEBUI_PORT`` or Spark's own 8080 (workers' follow it)."""
    return int(os.environ.get("KAFKA_DR_LAB_SPARK_WEBUI_PORT") or 8080)


def spark_home() -> Path:
    """The installed pyspark package: its ``bin/`` and ``jars/`` are a Spark distribution."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


@dataclass(frozen=True)
class SparkLayout:
    """What the cluster is: the master's ports, and ``workers`` workers of ``cores`` cores and
    ``memory`` each. Worker i (1-based) serves its web UI on ``webui_port + i``."""

    port: int
    webui_port: int
    workers: int = 2
    cores: int = 2
    memory: str = "2g"

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def ui_url(self, worker: int = 0) -> str:
        """The master's web UI (``worker`` 0) or worker ``worker``'s."""
        return f"http://127.0.0.1:{self.webui_port + worker}"

    def ports(self) -> list[int]:
        return [self.port, *(self.webui_port + i for i in range(self.workers + 1))]

    def problems(self) -> list[str]:
        """Why this layout cannot run, one line each (the command line's --options named)."""
        out = []
        for flag, v in (("--workers", self.workers), ("--cores", self.cores)):
            if v < 1:
                out.append(f"{flag} {v}: must be at least 1")
        for flag, v in (("--port", self.port), ("--webui-port", self.webui_port)):
            if not 1024 <= v <= 65535 - self.workers:
                out.append(f"{flag} {v}: must be between 1024 and {65535 - self.workers}")
        if self.webui_port <= self.port <= self.webui_port + self.workers:
            out.append(
                f"--port {self.port}: taken by a web UI (the master's on --webui-port {self.webui_port}, "
                f"worker i's on {self.webui_port}+i)"
            )
        if not _MEMORY.match(self.memory):
            out.append(f"--memory {self.memory!r}: expected a size such as 1g or 512m")
        return out


def daemon_names(layout: SparkLayout) -> list[str]:
    return ["master", *(f"worker-{i}" for i in range(1, layout.workers + 1))]


def daemon_command(home: Path, folder: Path, layout: SparkLayout, name: str) -> list[str]:
    """The command line of daemon ``name`` (``master`` or ``worker-<i>``); its properties file
    is what :func:`is_ours` looks for."""
    spark_class = str(home / "bin" / "spark-class")
    if name == "master":
        return [
            spark_class,
            MASTER_CLASS,
            *("--host", "127.0.0.1", "--port", str(layout.port), "--webui-port", str(layout.webui_port)),
            *("--properties-file", str(folder / "master.properties")),
        ]
    i = int(name.removeprefix("worker-"))
    return [
        spark_class,
        WORKER_CLASS,
        *("--host", "127.0.0.1", "--webui-port", str(layout.webui_port + i)),
        *("--cores", str(layout.cores), "--memory", layout.memory),
        *("--work-dir", str(folder / "work" / name)),
        *("--properties-file", str(folder / "worker.properties")),
        layout.master_url,
    ]


def daemon_env(environ: dict[str, str], home: Path) -> dict[str, str]:
    """The daemons' environment: the caller's, with Spark's home and every address on loopback.
    Executors inherit it from their worker."""
    return {**environ, **DAEMON_ENV, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}


def properties_text(props: dict[str, str]) -> str:
    return "".join(f"{k} {v}\n" for k, v in props.items())


def is_ours(cmdline: str, folder: Path, name: str) -> bool:
    """Whether a command line is daemon ``name`` of the cluster in ``folder``: its class and this
    folder's properties file (workers also their own work folder)."""
    args = cmdline.split("\0")
    if name == "master":
        return MASTER_CLASS in args and str(folder / "master.properties") in args
    return WORKER_CLASS in args and str(folder / "work" / name) in args


def registered(master_json: dict, layout: SparkLayout) -> dict[str, dict]:
    """The workers the master lists, by daemon name (matched by web UI port): ``{"worker-1": entry}``.
    A restarted worker is listed twice for a while, its lost registration DEAD: the ALIVE one counts."""
    by_ui = {layout.ui_url(i): f"worker-{i}" for i in range(1, layout.workers + 1)}
    out: dict[str, dict] = {}
    for w in master_json.get("workers", []):
        name = by_ui.get(w.get("webuiaddress"))
        if name and (name not in out or w.get("state") == "ALIVE"):
            out[name] = w
    return out


@dataclass(frozen=True)
class DaemonStatus:
    name: str
    pid: int | None
    state: str  #: alive, starting (runs, not yet answering or registered), dead (registered, lost), stopped
    cores: int | None
    ui: str

    @property
    def alive(self) -> bool:
        return self.state == "alive"


class SparkCluster:
    """The Spark standalone cluster whose files are in ``folder`` (see the module docstring)."""

    def __init__(self, folder: Path, environ: dict[str, str] | None = None) -> None:
        self.folder = Path(folder).resolve()
        #: the daemons' environment (default this process's): executors inherit it, PATH included
        self.environ = environ

    @property
    def state_file(self) -> Path:
        return self.folder / "spark.json"

    def layout(self) -> SparkLayout | None:
        state = self._load()
        return SparkLayout(**state["layout"]) if state.get("layout") else None

    def running_master(self) -> str | None:
        """The master's URL while its process runs, else None."""
        layout = self.layout()
        return layout.master_url if layout and self._running("master") else None

    # --- lifecycle ---------------------------------------------------------------------

    def up(self, layout: SparkLayout, timeout: float = 120.0) -> SparkLayout:
        """Start what is not running of ``layout`` and wait until every worker is registered.
        A cluster already running with another layout is an error (``down`` first)."""
        current = self.layout()
        if current is not None and current != layout and any(self._running(n) for n in daemon_names(current)):
            raise SparkClusterError(
                f"the lab's Spark cluster in {self.folder} runs as {_shape(current)}; "
                f"run `kafka-dr lab spark down` before starting {_shape(layout)}"
            )
        names = daemon_names(layout)
        to_start = [n for n in names if not self._running(n)]
        taken = [p for p in _own_ports(layout, to_start) if _port_open(p)]
        if taken:
            raise SparkClusterError(
                f"port {taken[0]} on 127.0.0.1 is already in use; choose another --port/--webui-port"
            )
        self.folder.mkdir(parents=True, exist_ok=True)
        self._save({"layout": asdict(layout), "pids": {n: self._running(n) for n in names}})
        (self.folder / "master.properties").write_text(properties_text(MASTER_PROPERTIES))
        (self.folder / "worker.properties").write_text(properties_text({}))
        deadline = time.monotonic() + timeout
        if "master" in to_start:
            self._start(layout, "master")
        self._wait(layout, ["master"], deadline)
        for name in to_start:
            if name != "master":
                self._start(layout, name)
        self._wait(layout, names, deadline)
        return layout

    def down(self, timeout: float = 30.0, wipe: bool = False) -> None:
        """Stop the workers (they stop their executors), then the master; ``wipe``: delete the folder too."""
        layout = self.layout()
        for name in reversed(daemon_names(layout) if layout else []):
            pid = self._running(name)
            if pid:
                _terminate(pid, timeout)
        if wipe:
            shutil.rmtree(self.folder, ignore_errors=True)
        elif layout is not None:
            state = self._load()
            state["pids"] = {}
            self._save(state)

    def status(self) -> list[DaemonStatus]:
        """The master and each worker: pid, state, cores (the master's: all the workers'), UI."""
        layout = self.layout()
        if layout is None:
            return []
        doc = _master_json(layout, 3.0) if self._running("master") else None
        workers = registered(doc or {}, layout)
        out = []
        for i, name in enumerate(daemon_names(layout)):
            pid = self._running(name)
            entry = doc if name == "master" else workers.get(name)
            if not pid:
                state = "stopped"
            elif entry is None:
                state = "starting"
            else:
                state = "alive" if entry.get("status", entry.get("state")) == "ALIVE" else "dead"
            cores = entry.get("cores") if entry and pid else None
            out.append(DaemonStatus(name, pid, state, cores, layout.ui_url(i)))
        return out

    # --- internals ---------------------------------------------------------------------

    def _load(self) -> dict:
        return read_record(self.state_file)

    def _save(self, state: dict) -> None:
        write_record(self.state_file, state)

    def _running(self, name: str) -> int | None:
        """The recorded pid of daemon ``name`` if that process still is it."""
        pid = self._load().get("pids", {}).get(name)
        return pid if pid and _cmdline_is(pid, lambda c: is_ours(c, self.folder, name)) else None

    def _start(self, layout: SparkLayout, name: str) -> None:
        home = spark_home()
        log = open(self.folder / f"{name}.log", "ab")  # noqa: SIM115 - handed to the child, closed below
        try:
            proc = subprocess.Popen(
                daemon_command(home, self.folder, layout, name),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.folder,
                env=daemon_env(dict(os.environ if self.environ is None else self.environ), home),
            )
        finally:
            log.close()
        state = self._load()
        state.setdefault("pids", {})[name] = proc.pid
        self._save(state)

    def _wait(self, layout: SparkLayout, names: list[str], deadline: float) -> None:
        """Until the master answers and lists every worker of ``names`` as ALIVE."""
        while True:
            gone = [n for n in names if not self._running(n)]
            if gone:
                raise SparkClusterError(
                    f"the lab's Spark {gone[0]} exited during start-up; last output:\n{self._tail(gone[0])}"
                )
            doc = _master_json(layout, 3.0)
            if doc is not None:
                workers = registered(doc, layout)
                waiting = [n for n in names if n != "master" and workers.get(n, {}).get("state") != "ALIVE"]
                if not waiting:
                    return
            else:
                waiting = names
            if time.monotonic() >= deadline:
                raise SparkClusterError(
                    f"the lab's Spark cluster ({layout.master_url}): {', '.join(waiting)} not registered in time; "
                    f"see {self.folder}/*.log"
                )
            time.sleep(0.5)

    def _tail(self, name: str) -> str:
        log = self.folder / f"{name}.log"
        return log.read_text(errors="replace")[-2000:] if log.exists() else ""


def lab_spark_master(lab_root: Path) -> str | None:
    """The master URL of the lab's Spark cluster (``<lab>/spark``) while it runs, else None."""
    return SparkCluster(Path(lab_root) / "spark").running_master()


def point_lab_config(config_file: Path, master: str | None) -> bool:
    """Set the ``spark`` section of the lab's config to ``master`` (None: local Spark), keeping
    the rest and the file's header; False when the lab has no config."""
    if not config_file.exists():
        return False
    text = config_file.read_text()
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    doc = yaml.safe_load(text) or {}
    doc["spark"] = spark_section(master)
    config_file.write_text(header + yaml.safe_dump(doc, sort_keys=False))
    return True


def _shape(layout: SparkLayout) -> str:
    return f"{layout.master_url} with {layout.workers} worker(s) of {layout.cores} core(s) and {layout.memory}"


def _own_ports(layout: SparkLayout, names: list[str]) -> list[int]:
    """The fixed ports the daemons ``names`` listen on (workers' RPC ports are Spark's choice)."""
    ports = {"master": [layout.port, layout.webui_port]}
    ports.update({f"worker-{i}": [layout.webui_port + i] for i in range(1, layout.workers + 1)})
    return [p for n in names for p in ports[n]]


def _master_json(layout: SparkLayout, timeout: float) -> dict | None:
    """The master's view (``/json/``: workers, cores, state), or None while it does not answer."""
    try:
        with urllib.request.urlopen(f"{layout.ui_url()}/json/", timeout=timeout) as r:
            return json.loads(r.read())
    except (OSError, ValueError):
        return None


def _cmdline_is(pid: int, check) -> bool:
    """``check`` on the process's command line; an empty one (the launcher execs java) is read again."""
    for _ in range(100):
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False
        if raw:
            return check(raw.decode(errors="replace"))
        if _gone(pid):
            return False
        time.sleep(0.05)
    return False


def _gone(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)  # a daemon this process started must not linger as a zombie
    except ChildProcessError:
        pass
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _terminate(pid: int, timeout: float) -> None:
    """SIGTERM a daemon (a worker then stops its executors); after ``timeout`` SIGKILL its process
    group, which holds the executors it started."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pid, sig) if sig == signal.SIGKILL else os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if _gone(pid):
                return
            time.sleep(0.1)


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.3)
        return s.connect_ex(("127.0.0.1", port)) == 0

"""The local lab: N single-node KRaft Apache Kafka clusters on loopback.

Everything lives under one folder (default ``./.lab``)::

    lab.json                 what was started: clusters, ports, pids, cluster ids
    kafka-dr.yaml            the product config for these clusters
    clusters/<name>/         server.properties, data/, broker.log, console.log

Operations are idempotent: ``up`` leaves running brokers alone and restarts stopped ones with
their data; ``down`` stops exactly the pids it recorded (checked against the process's
command line, so a recycled pid is never killed) and with ``wipe`` removes the folder.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from kafka_dr.lab import secure as lab_secure
from kafka_dr.lab.jars import DEFAULT_KAFKA_VERSION, ensure_jars
from kafka_dr.lab.secure import KEYSTORE_PASSWORD_ENV
from kafka_dr.lab.topology import LabCluster, lab_clusters, lab_config_yaml

LOG4J = Path(__file__).with_name("log4j2.properties")
HEAP = os.environ.get("KAFKA_DR_LAB_HEAP", "-Xms128m -Xmx512m")


class LabError(RuntimeError):
    pass


@dataclass
class ClusterStatus:
    name: str
    bootstrap: str
    pid: int | None
    running: bool
    answering: bool
    cluster_id: str | None
    topics: int | None


def default_lab_dir() -> Path:
    return Path(os.environ.get("KAFKA_DR_LAB_DIR", ".lab")).resolve()


def default_base_port() -> int:
    """The first broker port of a new lab: ``$KAFKA_DR_LAB_BASE_PORT`` or 19092."""
    return int(os.environ.get("KAFKA_DR_LAB_BASE_PORT") or 19092)


def _listener_properties(c: LabCluster, keystore: Path | None) -> str:
    """Listeners: plain (PLAINTEXT on ``port``), or for a secure/proxied cluster a client
    listener (SASL_SSL or PLAINTEXT, advertised at the proxy when there is one) plus an
    INTERNAL plaintext loopback listener for the broker itself."""
    if c.internal_port is None:
        return f"""listeners=PLAINTEXT://127.0.0.1:{c.port},CONTROLLER://127.0.0.1:{c.controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{c.port}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
"""
    proto = "SASL_SSL" if c.secure else "PLAINTEXT"
    out = f"""listeners=CLIENT://127.0.0.1:{c.port},INTERNAL://127.0.0.1:{c.internal_port},CONTROLLER://127.0.0.1:{c.controller_port}
advertised.listeners=CLIENT://127.0.0.1:{c.proxy_port or c.port},INTERNAL://127.0.0.1:{c.internal_port}
listener.security.protocol.map=CLIENT:{proto},INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=INTERNAL
"""
    if c.secure:
        # The keystore password comes from the broker's environment (Kafka's EnvVarConfigProvider),
        # so no file of the lab but secrets.env holds a secret.
        out += f"""config.providers=env
config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.client.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PKCS12
ssl.keystore.location={keystore}
ssl.keystore.password=${{env:{KEYSTORE_PASSWORD_ENV}}}
ssl.key.password=${{env:{KEYSTORE_PASSWORD_ENV}}}
"""
    return out


def _server_properties(c: LabCluster, data_dir: Path, keystore: Path | None = None) -> str:
    return f"""# Lab broker {c.name}: one KRaft node that is both broker and controller.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{c.controller_port}
{_listener_properties(c, keystore).strip()}
controller.listener.names=CONTROLLER
log.dirs={data_dir}
num.partitions=1
default.replication.factor=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=8
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.cleaner.backoff.ms=1000
log.retention.check.interval.ms=5000
"""


class Lab:
    def __init__(self, root: Path | None = None, kafka_version: str = DEFAULT_KAFKA_VERSION) -> None:
        self.root = (root or default_lab_dir()).resolve()
        self.kafka_version = kafka_version

    # --- state -----------------------------------------------------------------------

    @property
    def state_file(self) -> Path:
        return self.root / "lab.json"

    @property
    def config_file(self) -> Path:
        return self.root / "kafka-dr.yaml"

    def _load(self) -> dict:
        if not self.state_file.exists():
            return {}
        return json.loads(self.state_file.read_text())

    def _save(self, state: dict) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        tmp.replace(self.state_file)

    def clusters(self) -> list[LabCluster]:
        state = self._load()
        return [
            LabCluster(c["name"], c["port"], c["controller_port"], c.get("secure", False), c.get("proxy_port"))
            for c in state.get("clusters", [])
        ]

    @property
    def secure(self) -> bool:
        return bool(self._load().get("secure"))

    def _cluster_dir(self, name: str) -> Path:
        return self.root / "clusters" / name

    # --- lifecycle ---------------------------------------------------------------------

    def up(
        self,
        count: int = 2,
        base_port: int | None = None,
        timeout: float = 90.0,
        secure: bool = False,
        proxied: tuple[str, ...] = (),
    ) -> Path:
        """Start (or keep) ``count`` clusters; returns the written config file.

        ``secure``: SASL_SSL (SCRAM-SHA-512) client listeners with a generated CA and broker
        certificate; the credentials are in ``<dir>/secrets.env`` (mode 600), the config
        refers to them as ``${env:...}``. ``proxied``: clusters whose clients are sent to a
        TCP proxy the caller runs on ``port+50`` (network-fault drills)."""
        base_port = base_port or default_base_port()
        state = self._load()
        if state.get("clusters"):
            existing = len(state["clusters"])
            if existing != count or bool(state.get("secure")) != secure:
                raise LabError(
                    f"the lab in {self.root} has {existing} {'secure ' if state.get('secure') else ''}cluster(s); "
                    f"run `kafka-dr lab down --wipe` before starting {count}{' secure' if secure else ''}"
                )
            clusters = self.clusters()
        else:
            clusters = lab_clusters(count, base_port, secure, proxied)
            for c in clusters:
                for port in (c.port, c.controller_port, c.internal_port, c.proxy_port):
                    if port is None:
                        continue
                    if _port_open(port):
                        raise LabError(f"port {port} on 127.0.0.1 is already in use; choose another --base-port")
            state = {
                "kafka_version": self.kafka_version,
                "secure": secure,
                "clusters": [
                    {
                        "name": c.name,
                        "port": c.port,
                        "controller_port": c.controller_port,
                        "secure": c.secure,
                        "proxy_port": c.proxy_port,
                        "pid": None,
                        "cluster_id": None,
                    }
                    for c in clusters
                ],
            }
            self._save(state)
            if secure:
                lab_secure.prepare(self.root)
        jars = ensure_jars(state.get("kafka_version", self.kafka_version))
        for c in clusters:
            self._start(c, jars)
        ids = {c.name: self._wait_ready(c, timeout) for c in clusters}
        if secure:
            for c in clusters:
                lab_secure.create_user(self.root, c.direct)
        state = self._load()
        for entry in state["clusters"]:
            entry["cluster_id"] = ids[entry["name"]]
        self._save(state)
        self.config_file.write_text(
            lab_config_yaml(clusters, ids, str(lab_secure.ca_file(self.root)) if secure else None)
        )
        return self.config_file

    def start(self, name: str, timeout: float = 90.0) -> None:
        c = self._named(name)
        self._start(c, ensure_jars(self._load().get("kafka_version", self.kafka_version)))
        self._wait_ready(c, timeout)

    def stop(self, name: str, timeout: float = 30.0) -> None:
        self._stop(self._named(name), timeout)

    def kill(self, name: str) -> None:
        """SIGKILL one broker: a crash, not a clean shutdown (for drills)."""
        c = self._named(name)
        pid = self._pid(c.name)
        if pid and self._is_ours(c, pid):
            os.kill(pid, signal.SIGKILL)
            _wait_gone(pid, 10)

    def rebuild(self, name: str, timeout: float = 90.0) -> str:
        """Replace one cluster by a new, empty one on the same ports (the fail-forward drill):
        stop it, delete its data, format and start it. Returns the new cluster id, which the
        lab's config file then carries."""
        c = self._named(name)
        self._stop(c, 30)
        shutil.rmtree(self._cluster_dir(name) / "data", ignore_errors=True)
        self.start(name, timeout)
        new_id = self._wait_ready(c, timeout)
        state = self._load()
        for entry in state["clusters"]:
            if entry["name"] == name:
                entry["cluster_id"] = new_id
        self._save(state)
        clusters = self.clusters()
        self.config_file.write_text(lab_config_yaml(clusters, {e["name"]: e["cluster_id"] for e in state["clusters"]}))
        return new_id

    def down(self, wipe: bool = False) -> None:
        for c in self.clusters():
            self._stop(c, 30)
        if wipe and self.root.exists():
            shutil.rmtree(self.root)

    def status(self) -> list[ClusterStatus]:
        out = []
        for c in self.clusters():
            pid = self._pid(c.name)
            running = bool(pid and self._is_ours(c, pid))
            answering, cid, topics = False, None, None
            if running:
                try:
                    cid, topics = _metadata(c.direct, 5.0)
                    answering = True
                except Exception:  # noqa: BLE001 - status reports, never raises
                    pass
            out.append(ClusterStatus(c.name, c.bootstrap, pid if running else None, running, answering, cid, topics))
        return out

    # --- internals ---------------------------------------------------------------------

    def _named(self, name: str) -> LabCluster:
        for c in self.clusters():
            if c.name == name:
                return c
        known = ", ".join(c.name for c in self.clusters()) or "none (run `kafka-dr lab up`)"
        raise LabError(f"no lab cluster named {name!r} in {self.root} (known: {known})")

    def _pid(self, name: str) -> int | None:
        for entry in self._load().get("clusters", []):
            if entry["name"] == name:
                return entry.get("pid")
        return None

    def _set_pid(self, name: str, pid: int | None) -> None:
        state = self._load()
        for entry in state["clusters"]:
            if entry["name"] == name:
                entry["pid"] = pid
        self._save(state)

    def _props(self, c: LabCluster) -> Path:
        return self._cluster_dir(c.name) / "server.properties"

    def _is_ours(self, c: LabCluster, pid: int) -> bool:
        """Is ``pid`` this cluster's broker? Checked by command line, never by pid alone.

        The java launcher may exec itself again at start-up; while it does, the command line
        reads empty, so an empty read is retried briefly before it counts as "not ours".
        """
        for _ in range(100):  # 5 s: on a loaded machine the re-exec can take seconds
            try:
                raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                return False
            if raw:
                return str(self._props(c)) in raw.decode(errors="replace")
            if _is_zombie(pid):
                return False
            time.sleep(0.05)
        return False

    def _start(self, c: LabCluster, jars: Path) -> None:
        pid = self._pid(c.name)
        if pid and self._is_ours(c, pid):
            return
        d = self._cluster_dir(c.name)
        data = d / "data"
        d.mkdir(parents=True, exist_ok=True)
        self._props(c).write_text(
            _server_properties(c, data, lab_secure.keystore_file(self.root) if c.secure else None)
        )
        cp = f"{jars}/*"
        if not (data / "meta.properties").exists():
            cluster_uuid = _kafka_uuid()
            fmt = subprocess.run(
                ["java", "-cp", cp, "kafka.tools.StorageTool", "format", "-t", cluster_uuid, "-c", str(self._props(c))],
                capture_output=True,
                text=True,
                check=False,
            )
            if fmt.returncode != 0:
                raise LabError(
                    f"formatting the storage of lab cluster {c.name!r} failed:\n{fmt.stderr.strip()[-1500:]}"
                )
        for port in (c.port, c.controller_port, c.internal_port):
            if port and _port_open(port):
                raise LabError(f"cannot start lab cluster {c.name!r}: port {port} is taken by another process")
        console = open(d / "console.log", "ab")
        cmd = [
            "java",
            *HEAP.split(),
            "-XX:+UseSerialGC",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={LOG4J}",
            f"-Dkafka.dr.log={d / 'broker.log'}",
            "-cp",
            cp,
            "kafka.Kafka",
            str(self._props(c)),
        ]
        env = {**os.environ, **(lab_secure.broker_env(self.root) if c.secure else {})}
        proc = subprocess.Popen(
            cmd,
            stdout=console,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=d,
            env=env,
        )
        console.close()
        self._set_pid(c.name, proc.pid)

    def _wait_ready(self, c: LabCluster, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            pid = self._pid(c.name)
            if not pid or not self._is_ours(c, pid):
                log = self._cluster_dir(c.name) / "console.log"
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise LabError(f"lab cluster {c.name!r} exited during start-up; last output:\n{tail}")
            if not _port_open(c.internal_port or c.port):
                time.sleep(0.3)
                continue
            try:
                cid, _ = _metadata(c.direct, 3.0)
                return cid
            except Exception as e:  # noqa: BLE001 - retried until the deadline
                last = str(e)
                time.sleep(0.5)
        raise LabError(
            f"lab cluster {c.name!r} ({c.bootstrap}) did not answer metadata requests within {timeout:.0f}s: {last}"
        )

    def _stop(self, c: LabCluster, timeout: float) -> None:
        pid = self._pid(c.name)
        if pid and self._is_ours(c, pid):
            os.kill(pid, signal.SIGTERM)
            if not _wait_gone(pid, timeout):
                os.kill(pid, signal.SIGKILL)
                _wait_gone(pid, 10)
        self._set_pid(c.name, None)


def _kafka_uuid() -> str:
    """A Kafka cluster id: URL-safe base64 of a random UUID. Like Kafka's own ``Uuid``, never
    one starting with '-' (the storage tool would read it as an option)."""
    import base64

    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not s.startswith("-"):
            return s


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.3)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        if not Path(f"/proc/{pid}").exists() or _is_zombie(pid):
            return True
        time.sleep(0.1)
    return False


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def _metadata(bootstrap: str, timeout: float) -> tuple[str, int]:
    from confluent_kafka.admin import AdminClient

    # log_level 0: a broker that is still starting would fill the terminal with librdkafka's
    # connection-refused lines; failures surface as the exception below instead.
    client = AdminClient(
        {"bootstrap.servers": bootstrap, "socket.connection.setup.timeout.ms": int(timeout * 1000), "log_level": 0}
    )
    md = client.list_topics(timeout=timeout)
    if not md.brokers:
        raise LabError(f"{bootstrap} answered without brokers")
    return md.cluster_id, len([t for t in md.topics if not t.startswith("__")])

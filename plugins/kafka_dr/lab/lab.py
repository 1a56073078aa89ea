"""The local lab: N KRaft Apache Kafka clusters of one to five brokers each, on loopback.

Everything lives under one folder (default ``./.lab``)::

    lab.json                 what was started: clusters, ports, per-broker pids, cluster ids
    kafka-dr.yaml            the product config for these clusters (every broker in bootstrap_servers)
    clusters/<broker>/       server.properties, data/, broker.log, console.log; the folder is
                             named like the broker: east for a one-broker cluster, east-1... otherwise

Every broker is a combined KRaft node (broker and controller) and every node of a cluster a
static voter, formatted with the cluster's one id (:mod:`kafka_dr.lab.broker` says why and
which replication settings follow from the broker count). Ports and names are in
:mod:`kafka_dr.lab.topology`, the state file in :mod:`kafka_dr.lab.state`.

Operations are idempotent: ``up`` leaves running brokers alone and restarts stopped ones with
their data; ``down`` stops exactly the pids it recorded (checked against the process's
command line, so a recycled pid is never killed) and with ``wipe`` removes the folder.
``start``, ``stop`` and ``kill`` take a cluster name (all its brokers) or one broker's name.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from kafka_dr.lab import broker
from kafka_dr.lab import secure as lab_secure
from kafka_dr.lab.broker import LabError
from kafka_dr.lab.jars import DEFAULT_KAFKA_VERSION, ensure_jars
from kafka_dr.lab.probe import ClusterView, probe
from kafka_dr.lab.spark_cluster import SparkCluster, lab_spark_master
from kafka_dr.lab.state import LabState
from kafka_dr.lab.topology import LabBroker, LabCluster, find_named, known_names, lab_clusters, lab_config_yaml

__all__ = ["BrokerStatus", "ClusterStatus", "Lab", "LabError", "default_base_port", "default_lab_dir"]

Nodes = tuple[LabBroker, ...]
BIND_RELAUNCHES = 3  #: starts of a broker whose port was taken for a moment (see _relaunch_after_lost_bind)


@dataclass(frozen=True)
class BrokerStatus:
    """One broker as ``lab status`` sees it. ``answering``: its process runs and the cluster's
    metadata counts it as alive; ``cluster_id`` and ``topics`` are its cluster's."""

    name: str
    cluster: str
    bootstrap: str
    pid: int | None
    running: bool
    answering: bool
    cluster_id: str | None
    topics: int | None


@dataclass(frozen=True)
class ClusterStatus:
    """One cluster: its brokers and, when any answers, its partition health."""

    name: str
    bootstrap: str
    brokers: tuple[BrokerStatus, ...]
    cluster_id: str | None
    topics: int | None
    under_replicated: int | None
    offline: int | None

    @property
    def answering(self) -> bool:
        return all(b.answering for b in self.brokers)


def default_lab_dir() -> Path:
    return Path(os.environ.get("KAFKA_DR_LAB_DIR", ".lab")).resolve()


def default_base_port() -> int:
    """The first broker port of a new lab: ``$KAFKA_DR_LAB_BASE_PORT`` or 19092."""
    return int(os.environ.get("KAFKA_DR_LAB_BASE_PORT") or 19092)


def _shape(count: int, secure: bool, brokers: int) -> str:
    return f"{count} {'secure ' if secure else ''}cluster(s)" + (f" of {brokers} brokers" if brokers > 1 else "")


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

    @property
    def _state(self) -> LabState:
        return LabState(self.state_file)

    def clusters(self) -> list[LabCluster]:
        return self._state.clusters()

    @property
    def secure(self) -> bool:
        return bool(self._state.load().get("secure"))

    def names(self) -> str:
        """The cluster and broker names the verbs take, for messages (``east, west`` or ``east (east-1, ...)``)."""
        return known_names(self.clusters())

    # --- lifecycle ---------------------------------------------------------------------

    def up(
        self,
        count: int = 2,
        base_port: int | None = None,
        timeout: float = 90.0,
        secure: bool = False,
        proxied: tuple[str, ...] = (),
        brokers: int = 1,
    ) -> Path:
        """Start (or keep) ``count`` clusters of ``brokers`` brokers; returns the written config file.

        ``secure``: SASL_SSL (SCRAM-SHA-512) client listeners with a generated CA and broker
        certificate; the credentials are in ``<dir>/secrets.env`` (mode 600), the config
        refers to them as ``${env:...}``. ``proxied``: clusters whose clients are sent to a
        TCP proxy the caller runs on each broker's ``port+50`` (network-fault drills; see
        :meth:`kafka_dr.lab.proxy.TcpProxy.for_cluster`)."""
        clusters = self.clusters()
        if clusters:
            have = (len(clusters), self.secure, clusters[0].brokers)
            if have != (count, secure, brokers):
                raise LabError(
                    f"the lab in {self.root} has {_shape(*have)}; "
                    f"run `kafka-dr lab down --wipe` before starting {_shape(count, secure, brokers)}"
                )
        else:
            clusters = lab_clusters(count, base_port or default_base_port(), secure, proxied, brokers)
            _check_ports_free(clusters)
            self._state.create(self.kafka_version, secure, clusters)
            if secure:
                lab_secure.prepare(self.root)
        self._start([(c, c.nodes) for c in clusters], timeout)
        if secure:
            for c in clusters:
                lab_secure.create_users(self.root, c.direct)
        self._write_config()
        if secure:
            self._grant_product_acls()
        return self.config_file

    def start(self, name: str, timeout: float = 90.0) -> None:
        """Start a stopped cluster or broker; returns once every one of them is in the cluster's metadata."""
        self._start([self._resolve(name)], timeout)

    def stop(self, name: str, timeout: float = 30.0) -> None:
        """Stop a cluster (all its brokers at once) or one broker, keeping the data."""
        self._stop(self._resolve(name)[1], timeout)

    def kill(self, name: str) -> None:
        """SIGKILL a cluster's brokers or one broker: a crash, not a clean shutdown (for drills)."""
        nodes = self._resolve(name)[1]
        broker.kill([pid for b in nodes if (pid := self._running(b))])
        self._state.set_pids({b.name: None for b in nodes})

    def data_dirs(self, name: str) -> dict[str, Path]:
        """Each broker's log directory, of a cluster or of one broker, by broker name."""
        return {b.name: self._dir(b) / "data" for b in self._resolve(name)[1]}

    def rebuild(self, name: str, timeout: float = 90.0) -> str:
        """Replace one cluster by a new, empty one on the same ports (the fail-forward drill):
        stop every broker, delete their data, format them with a new shared cluster id and
        start them. Returns the new cluster id, which the lab's config file then carries."""
        c, nodes = self._resolve(name)
        if name != c.name:
            raise LabError(f"rebuild replaces a whole cluster: name {c.name!r}, not its broker {name!r}")
        self._stop(nodes, 30)
        for b in nodes:
            shutil.rmtree(self._dir(b) / "data", ignore_errors=True)
        self._state.set_cluster_id(c.name, None)
        new_id = self._start([(c, nodes)], timeout)[c.name]
        self._write_config()
        return new_id

    def down(self, wipe: bool = False) -> None:
        from kafka_dr.lab.airflow_service import AirflowService  # it imports this module

        AirflowService(self.root).down()  # the lab's Airflow (kafka-dr airflow up) and its PostgreSQL too
        SparkCluster(self.root / "spark").down()  # the lab's Spark cluster (kafka-dr lab spark) too
        self._stop(tuple(b for c in self.clusters() for b in c.nodes), 30)
        if wipe and self.root.exists():
            shutil.rmtree(self.root)

    def status(self) -> list[BrokerStatus]:
        """One row per broker (see :meth:`cluster_status` for the clusters' partition health)."""
        return [b for c in self.cluster_status() for b in c.brokers]

    def cluster_status(self) -> list[ClusterStatus]:
        return [self._cluster_status(c) for c in self.clusters()]

    # --- internals ---------------------------------------------------------------------

    def _cluster_status(self, c: LabCluster) -> ClusterStatus:
        pids = {b.name: self._running(b) for b in c.nodes}
        view: ClusterView | None = None
        if any(pids.values()):
            try:
                view = probe(",".join(b.direct for b in c.nodes if pids[b.name]), 5.0)
            except Exception:  # noqa: BLE001 - status reports, never raises
                view = None
        rows = tuple(
            BrokerStatus(
                b.name,
                c.name,
                b.address,
                pids[b.name],
                bool(pids[b.name]),
                bool(pids[b.name] and view and b.node_id in view.broker_ids),
                view.cluster_id if view else None,
                view.topics if view else None,
            )
            for b in c.nodes
        )
        return ClusterStatus(
            c.name,
            c.bootstrap,
            rows,
            view.cluster_id if view else None,
            view.topics if view else None,
            view.under_replicated if view else None,
            view.offline if view else None,
        )

    def _resolve(self, name: str) -> tuple[LabCluster, Nodes]:
        found = find_named(self.clusters(), name)
        if found is None:
            known = self.names() or "none (run `kafka-dr lab up`)"
            raise LabError(f"no lab cluster or broker named {name!r} in {self.root} (known: {known})")
        return found

    def _dir(self, b: LabBroker) -> Path:
        return self.root / "clusters" / b.name

    def _props(self, b: LabBroker) -> Path:
        return self._dir(b) / "server.properties"

    def _running(self, b: LabBroker) -> int | None:
        """The broker's pid while its process runs, else None."""
        pid = self._state.pid(b.name)
        return pid if pid and broker.is_broker(pid, self._props(b)) else None

    def _start(self, targets: list[tuple[LabCluster, Nodes]], timeout: float) -> dict[str, str]:
        """Start the brokers of ``targets`` that do not run (formatting new ones first), then
        wait until each cluster's metadata counts every one of them. Returns the cluster ids."""
        jars = ensure_jars(self._state.load().get("kafka_version", self.kafka_version))
        todo = [(c, b) for c, nodes in targets for b in nodes if not self._running(b)]
        for c, b in todo:
            self._dir(b).mkdir(parents=True, exist_ok=True)
            keystore = lab_secure.keystore_file(self.root) if c.secure else None
            self._props(b).write_text(broker.server_properties(c, b, self._dir(b) / "data", keystore))
            for port in (b.port, b.controller_port, b.internal_port):
                if port and broker.port_open(port):
                    raise LabError(f"cannot start lab broker {b.name!r}: port {port} is taken by another process")
        self._format([(c, b) for c, b in todo if not (self._dir(b) / "data" / "meta.properties").exists()], jars)
        for c, b in todo:
            self._launch(c, b, jars)
        ids = {c.name: self._wait_ready(c, nodes, timeout, jars) for c, nodes in targets}
        for name, cluster_id in ids.items():
            self._state.set_cluster_id(name, cluster_id)
        return ids

    def _format(self, todo: list[tuple[LabCluster, LabBroker]], jars: Path) -> None:
        """Format new nodes' storage in parallel, every node of a cluster with the cluster's id."""
        runs = []
        for c, b in todo:
            cluster_id = self._state.cluster_id(c.name)
            if cluster_id is None:
                cluster_id = broker.kafka_uuid()
                self._state.set_cluster_id(c.name, cluster_id)
            runs.append((b, broker.format_storage(jars, self._props(b), cluster_id)))
        for b, proc in runs:
            _, err = proc.communicate()
            if proc.returncode != 0:
                raise LabError(f"formatting the storage of lab broker {b.name!r} failed:\n{err.strip()[-1500:]}")

    def _launch(self, c: LabCluster, b: LabBroker, jars: Path) -> None:
        env = lab_secure.broker_env(self.root) if c.secure else {}
        self._state.set_pids({b.name: broker.launch(self._dir(b), self._props(b), jars, env)})

    def _wait_ready(self, c: LabCluster, nodes: Nodes, timeout: float, jars: Path) -> str:
        """Wait until the cluster's metadata, asked of ``nodes``, counts all of them; returns the cluster id."""
        deadline = time.monotonic() + timeout
        last = ""
        relaunches = dict.fromkeys((b.name for b in nodes), BIND_RELAUNCHES)
        while time.monotonic() < deadline:
            for b in nodes:
                if not self._running(b):
                    self._relaunch_after_lost_bind(c, b, jars, relaunches)
            if not all(broker.port_open(b.internal_port or b.port) for b in nodes):
                time.sleep(0.3)
                continue
            try:
                view = probe(",".join(b.direct for b in nodes), 3.0)
            except Exception as e:  # noqa: BLE001 - retried until the deadline
                last = str(e)
            else:
                missing = [b.name for b in nodes if b.node_id not in view.broker_ids]
                if not missing:
                    return view.cluster_id
                last = f"the metadata does not list {', '.join(missing)} yet"
            time.sleep(0.5)
        names = ", ".join(b.name for b in nodes)
        raise LabError(
            f"lab broker(s) {names} ({c.bootstrap}) did not answer metadata requests within {timeout:.0f}s: {last}"
        )

    def _relaunch_after_lost_bind(self, c: LabCluster, b: LabBroker, jars: Path, left: dict[str, int]) -> None:
        """Start again a broker that exited because one of its ports was briefly taken, else raise.

        A client that keeps connecting to a stopped broker's port can be given that very port
        as its own local port when the port lies in the kernel's ephemeral range (32768-60999
        on Linux): the connection reaches itself and holds the port until the client drops it."""
        cause = broker.exit_cause(self._dir(b))
        if "Address already in use" not in cause or not left[b.name]:
            raise LabError(f"lab broker {b.name!r} exited during start-up: {cause}")
        left[b.name] -= 1
        time.sleep(1)
        self._launch(c, b, jars)

    def _stop(self, nodes: Nodes, timeout: float) -> None:
        broker.terminate([pid for b in nodes if (pid := self._running(b))], timeout)
        self._state.set_pids({b.name: None for b in nodes})

    def _grant_product_acls(self) -> None:
        """kafka-dr's principal gets exactly what ``kafka-dr acls`` prints for the lab's config."""
        from kafka_dr.core.config_load import load_config
        from kafka_dr.core.product_acls import product_acls

        cfg = load_config(self.config_file)
        for c in self.clusters():
            lab_secure.grant(c.name, c.direct, product_acls(cfg, f"User:{lab_secure.LAB_USER}", c.name))

    def _write_config(self) -> None:
        ca = str(lab_secure.ca_file(self.root)) if self.secure else None
        master = lab_spark_master(self.root)  # while the lab's Spark cluster runs, jobs run there
        self.config_file.write_text(lab_config_yaml(self.clusters(), self._state.cluster_ids(), ca, master))


def _check_ports_free(clusters: list[LabCluster]) -> None:
    """Every port a new lab will listen on, before anything starts."""
    for c in clusters:
        for b in c.nodes:
            for port in (b.port, b.controller_port, b.internal_port, b.proxy_port):
                if port is not None and broker.port_open(port):
                    raise LabError(f"port {port} on 127.0.0.1 is already in use; choose another --base-port")

"""One lab broker as a process: its ``server.properties``, its storage, starting and signalling it.

Every broker is a combined KRaft node (``process.roles=broker,controller``) and every node of
a cluster is a static voter (``controller.quorum.voters``), so an N-broker cluster is an
N-node quorum without a separate controller tier: three JVMs rather than six on a small
machine, and a quorum that survives one node's crash. All nodes of a cluster are formatted
with the same cluster id. Replication follows the broker count: one broker keeps every
replication factor at 1; two use RF 2 with min ISR 1; three or more RF 3 with min ISR 2, so
one broker may die while acks=all producers and transactions keep committing.

A pid is only signalled when ``/proc/<pid>/cmdline`` names that broker's own
``server.properties``, so a recycled pid is never killed.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

from kafka_dr.lab.secure import KEYSTORE_PASSWORD_ENV, LAB_ADMIN
from kafka_dr.lab.topology import LabBroker, LabCluster

LOG4J = Path(__file__).with_name("log4j2.properties")
HEAP = os.environ.get("KAFKA_DR_LAB_HEAP", "-Xms128m -Xmx512m")
#: more JVM options for every lab broker (the test suite's brokers compile with C1 only)
JVM_OPTS_ENV = "KAFKA_DR_LAB_JVM_OPTS"
#: options after which a broker's class sharing is the operator's own
OPERATOR_SHARING = ("-Xshare", "-XX:SharedArchiveFile", "-XX:ArchiveClassesAtExit")


class LabError(RuntimeError):
    pass


def listener_properties(b: LabBroker, keystore: Path | None) -> str:
    """Listeners: plain (PLAINTEXT on ``port``), or for a secure/proxied cluster a client
    listener (SASL_SSL or PLAINTEXT, advertised at the proxy when there is one) plus an
    INTERNAL plaintext loopback listener for the broker itself."""
    if b.internal_port is None:
        return f"""listeners=PLAINTEXT://127.0.0.1:{b.port},CONTROLLER://127.0.0.1:{b.controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{b.port}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
"""
    proto = "SASL_SSL" if b.secure else "PLAINTEXT"
    listeners = (
        f"CLIENT://127.0.0.1:{b.port},INTERNAL://127.0.0.1:{b.internal_port},CONTROLLER://127.0.0.1:{b.controller_port}"
    )
    out = f"""listeners={listeners}
advertised.listeners=CLIENT://{b.address},INTERNAL://127.0.0.1:{b.internal_port}
listener.security.protocol.map=CLIENT:{proto},INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=INTERNAL
"""
    if b.secure:
        # The keystore password comes from the broker's environment (Kafka's EnvVarConfigProvider),
        # so no file of the lab but secrets.env holds a secret.
        # An authorizer, as production clusters have: the brokers' own plaintext loopback
        # listeners (principal ANONYMOUS) and the lab's admin are its only super users.
        out += f"""authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:ANONYMOUS;User:{LAB_ADMIN}
config.providers=env
config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.client.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PKCS12
ssl.keystore.location={keystore}
ssl.keystore.password=${{env:{KEYSTORE_PASSWORD_ENV}}}
ssl.key.password=${{env:{KEYSTORE_PASSWORD_ENV}}}
"""
    return out


def replication_properties(brokers: int) -> str:
    """Replication factors and min ISR for a cluster of ``brokers`` (see the module docstring).
    One broker leaves ``min.insync.replicas`` at Kafka's default, as topic configs show it."""
    rf = min(brokers, 3)
    isr = 2 if rf == 3 else 1
    return (
        f"default.replication.factor={rf}\n"
        + (f"min.insync.replicas={isr}\n" if brokers > 1 else "")
        + f"offsets.topic.replication.factor={rf}\n"
        f"transaction.state.log.replication.factor={rf}\n"
        f"transaction.state.log.min.isr={isr}\n"
        f"share.coordinator.state.topic.replication.factor={rf}\n"
        f"share.coordinator.state.topic.min.isr={isr}\n"
    )


def server_properties(c: LabCluster, b: LabBroker, data_dir: Path, keystore: Path | None = None) -> str:
    if c.brokers == 1:
        title = f"# Lab broker {b.name}: one KRaft node that is both broker and controller."
    else:
        title = f"# Lab broker {b.name}: node {b.node_id} of {c.brokers} of cluster {c.name}, broker and controller."
    return f"""{title}
process.roles=broker,controller
node.id={b.node_id}
controller.quorum.voters={c.voters}
{listener_properties(b, keystore).strip()}
controller.listener.names=CONTROLLER
log.dirs={data_dir}
num.partitions=1
auto.create.topics.enable=false
{replication_properties(c.brokers).strip()}
offsets.topic.num.partitions=8
transaction.state.log.num.partitions=8
group.initial.rebalance.delay.ms=0
log.cleaner.backoff.ms=1000
log.retention.check.interval.ms=5000
# An idle broker's CPU is mostly threads waking to poll (8 I/O and 3 network by default) and
# the controller's no-op record every 500 ms; lab brokers idle beside the work (docs/operations.md).
num.io.threads=2
num.network.threads=2
metadata.max.idle.interval.ms=5000
"""


def jvm_options(jars: Path) -> list[str]:
    """A lab JVM's options: ``$KAFKA_DR_LAB_JVM_OPTS``, then the broker class archive when it
    exists (:mod:`kafka_dr.lab.broker_archive`) and those options leave class sharing alone."""
    from kafka_dr.lab.broker_archive import archive_file

    extra = os.environ.get(JVM_OPTS_ENV, "").split()
    archive = archive_file(jars)
    if archive.is_file() and not any(o.startswith(OPERATOR_SHARING) for o in extra):
        # a JVM that cannot map it starts without it; its warning would read as a broker's last words
        extra += [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
    return ["-XX:+UseSerialGC", *extra]


def format_storage(jars: Path, props: Path, cluster_id: str) -> subprocess.Popen:
    """Start ``kafka.tools.StorageTool format`` for one node; the caller waits (nodes format in parallel)."""
    options = [o for o in jvm_options(jars) if not o.startswith("-XX:ArchiveClassesAtExit")]
    return subprocess.Popen(
        ["java", *options, "-cp", f"{jars}/*", "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(props)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def launch(folder: Path, props: Path, jars: Path, env: dict[str, str]) -> int:
    """Start ``kafka.Kafka props`` in its own session; output to ``folder/console.log``. Returns the pid."""
    cmd = [
        "java",
        *HEAP.split(),
        *jvm_options(jars),
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={LOG4J}",
        f"-Dkafka.dr.log={folder / 'broker.log'}",
        "-cp",
        f"{jars}/*",
        "kafka.Kafka",
        str(props),
    ]
    with open(folder / "console.log", "ab") as console:
        proc = subprocess.Popen(
            cmd,
            stdout=console,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=folder,
            env={**os.environ, **env},
        )
    return proc.pid


def is_broker(pid: int, props: Path) -> bool:
    """Is ``pid`` the broker started with ``props``? Checked by command line, never by pid alone.

    The java launcher may exec itself again at start-up; while it does, the command line
    reads empty, so an empty read is retried briefly before it counts as "not ours".
    """
    for _ in range(100):  # 5 s: on a loaded machine the re-exec can take seconds
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False
        if raw:
            return str(props) in raw.decode(errors="replace").split("\0")
        if is_zombie(pid):
            return False
        time.sleep(0.05)
    return False


def exit_cause(folder: Path) -> str:
    """Why the broker in ``folder`` exited, in a line: the JVM's last words on the console
    (it cannot start at all), else the innermost causes of the last failure in its log."""
    console, log = folder / "console.log", folder / "broker.log"
    said = console.read_text(errors="replace").strip() if console.exists() else ""
    if said:
        return f"{said.splitlines()[-1][:500]} (see {console})"
    lines = log.read_text(errors="replace").splitlines()[-500:] if log.exists() else []
    causes = [ln.split("Caused by:", 1)[1].strip() for ln in lines if ln.lstrip().startswith("Caused by:")]
    errors = [ln.strip() for ln in lines if " ERROR " in ln]
    found = "; ".join(causes[-2:]) or (errors[-1] if errors else "its log names no error")
    return f"{found[:800]} (see {log})"


def terminate(pids: list[int], timeout: float) -> None:
    """SIGTERM every pid at once (a quorum shuts down together), SIGKILL what is left after ``timeout``."""
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for pid in pids:
        if not wait_gone(pid, max(0.0, deadline - time.monotonic())):
            kill([pid])


def kill(pids: list[int]) -> None:
    """SIGKILL: a crash, not a clean shutdown."""
    for pid in pids:
        _signal(pid, signal.SIGKILL)
    for pid in pids:
        wait_gone(pid, 10)


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:  # it ended between the check and the signal
        pass


def kafka_uuid() -> str:
    """A Kafka cluster id: URL-safe base64 of a random UUID. Like Kafka's own ``Uuid``, never
    one starting with '-' (the storage tool would read it as an option)."""
    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not s.startswith("-"):
            return s


def port_open(port: int) -> bool:
    """Does something listen on 127.0.0.1:``port``?"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.3)
        if s.connect_ex(("127.0.0.1", port)) != 0:
            return False
        # In the ephemeral range the kernel may give this probe ``port`` itself as its own end:
        # a connection to itself, not to a listener.
        return s.getsockname() != s.getpeername()


def wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        if not Path(f"/proc/{pid}").exists() or is_zombie(pid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True

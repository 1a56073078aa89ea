"""The single faults of a game day: each injects one failure and, where an operator's process
supervisor would, restarts what it killed. None of them touches kafka-dr: healing the
replication is the product's job (Spark re-runs tasks, the replication DAG restarts its job,
clients find new leaders).

Each fault returns an :class:`Injected`: when it began and when the failure itself ended (a
killed broker back, the network restored), which flows it interrupts, and what it did.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_dr.gameday import processes
from kafka_dr.gameday.deploy import EAST, WEST, Deployment
from kafka_dr.lab.spark_cluster import SparkLayout

EAST_TO_WEST, WEST_TO_EAST = "east_to_west", "west_to_east"
NETWORK_CUT_S = 60.0
BROKER_DOWN_S = 20.0
#: a broker restarted after a kill -9 recovers every log first: on the loaded 2-core lab host
#: that has taken over 90 s, the lab's default wait
BROKER_START_TIMEOUT_S = 300.0


@dataclass
class Injected:
    fault: str
    began: float  #: epoch seconds
    ended: float | None = None  #: when the failure itself was over (None: at once)
    #: the flows it can interrupt: a cluster is an end of both flows, and a lost scheduler holds
    #: both replication jobs' tasks (its restart must adopt them, not stop them)
    flows: tuple[str, ...] = (EAST_TO_WEST, WEST_TO_EAST)
    notes: list[str] = field(default_factory=list)


def _wait(what: str, check: Callable[[], object], timeout: float, every: float = 1.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"game day: {what} not within {timeout:.0f}s")


def _driver(flow: str) -> processes.Proc:
    return _wait(
        f"a running driver of {flow}",
        lambda: next(iter(processes.replication_drivers(processes.process_table(), flow)), None),
        300,
    )


def spark_executor(d: Deployment) -> Injected:
    """kill -9 one executor JVM: the master starts another, the driver re-runs its tasks."""
    _driver(EAST_TO_WEST)
    victim = _wait("an executor JVM", lambda: next(iter(processes.executors(processes.process_table())), None), 120)
    began = time.time()
    processes.kill9(victim.pid)
    return Injected("spark-executor", began, notes=[f"killed executor pid {victim.pid}"])


def spark_worker(d: Deployment) -> Injected:
    """kill -9 a whole worker that runs an executor (its executors die with it); restarted 10 s later."""
    table = processes.process_table()
    running = {s.name: s.pid for s in d.spark.status() if s.pid and s.name.startswith("worker-")}
    busy = [n for n, pid in running.items() if processes.executors(processes.descendants(table, pid))]
    name = (busy or sorted(running))[0]
    began = time.time()
    processes.kill9(running[name])
    time.sleep(10)
    layout: SparkLayout | None = d.spark.layout()
    assert layout is not None
    d.spark.up(layout)
    return Injected("spark-worker", began, time.time(), notes=[f"killed {name} (pid {running[name]}), restarted"])


def spark_driver(d: Deployment) -> Injected:
    """kill -9 the east -> west job's driver (spark-submit in client mode, under its Airflow task)."""
    driver = _driver(EAST_TO_WEST)
    began = time.time()
    processes.kill9(driver.pid)
    return Injected("spark-driver", began, flows=(EAST_TO_WEST,), notes=[f"killed driver pid {driver.pid}"])


def _leader_broker(d: Deployment, cluster: str, topic: str) -> str:
    from confluent_kafka.admin import AdminClient

    lab_cluster = next(c for c in d.lab.clusters() if c.name == cluster)
    admin = AdminClient({"bootstrap.servers": lab_cluster.direct, "log_level": 0})
    md = admin.list_topics(topic, timeout=10)
    leader = md.topics[topic].partitions[0].leader
    return f"{cluster}-{leader}"


def _leader_kill(d: Deployment, cluster: str, topic: str, fault: str) -> Injected:
    """kill -9 the broker leading partition 0 of a busy topic; it is started again after a while."""
    name = _leader_broker(d, cluster, topic)
    began = time.time()
    d.lab.kill(name)
    time.sleep(BROKER_DOWN_S)
    d.lab.start(name, BROKER_START_TIMEOUT_S)
    return Injected(fault, began, time.time(), notes=[f"killed {name} (leader of {topic}-0), restarted"])


def target_leader(d: Deployment, topic: str) -> Injected:
    return _leader_kill(d, WEST, topic, "target-leader")


def source_leader(d: Deployment, topic: str) -> Injected:
    return _leader_kill(d, EAST, topic, "source-leader")


def target_rolling_restart(d: Deployment) -> Injected:
    """Each west broker stopped and started in turn, the next only once the cluster is whole."""
    began = time.time()
    west = next(c for c in d.lab.clusters() if c.name == WEST)
    for b in west.nodes:
        d.lab.stop(b.name)
        d.lab.start(b.name, BROKER_START_TIMEOUT_S)
        _wait(f"west whole again after restarting {b.name}", lambda: _healthy(d, WEST), 180, 2)
    return Injected("target-rolling-restart", began, time.time(), notes=[f"restarted {len(west.nodes)} brokers"])


def _healthy(d: Deployment, cluster: str) -> bool:
    status = next(s for s in d.lab.cluster_status() if s.name == cluster)
    return status.under_replicated == 0 and status.offline == 0 and all(b.answering for b in status.brokers)


def target_network_cut(d: Deployment, seconds: float = NETWORK_CUT_S) -> Injected:
    assert d.proxy is not None
    began = time.time()
    d.proxy.cut()
    time.sleep(seconds)
    d.proxy.restore()
    return Injected("target-network-cut", began, time.time(), notes=[f"west unreachable {seconds:.0f}s"])


def airflow_scheduler(d: Deployment) -> Injected:
    """kill -9 the scheduler's main process, then start it again as its service would."""
    from kafka_dr.lab.airflow_service import ServiceSpec

    state = d.airflow.load()
    pid = state["processes"]["scheduler"]["pid"]
    began = time.time()
    processes.kill9(pid)
    time.sleep(5)
    assert d.cfg is not None
    restarted = time.time()
    d.airflow.up(ServiceSpec(**state["spec"]), d.cfg)
    # over once the new scheduler runs its loop (its first heartbeat), not when its process
    # started: the next fault, the disaster's failover included, meets a scheduler at work
    _wait("the restarted scheduler's heartbeat", lambda: _heartbeat_since(d, restarted), 180, every=0.5)
    return Injected("airflow-scheduler", began, time.time(), notes=[f"killed scheduler pid {pid}, restarted"])


def _heartbeat_since(d: Deployment, since: float) -> bool:
    assert d.api is not None
    try:
        beat = d.api.scheduler_heartbeat()
    except Exception:  # noqa: BLE001 - an api-server busy with the restart: ask again
        return False
    return beat is not None and beat >= since

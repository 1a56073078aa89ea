"""Test session wiring: a real Kafka lab and a project-local Airflow, both started here.

The lab for tests lives in ``.lab-test/`` on ports 29092+ so it never collides with a user's
``kafka-dr lab up`` (``.lab/``, 19092+). It starts on first use by a test that asks for the
``lab`` fixture (unit tests never do) and is stopped and wiped at the end of the session,
on failure too.

Airflow reads its settings when first imported, so they are set here, at import time,
before any test module imports Airflow.
"""

from __future__ import annotations

import atexit
import fcntl
import gc
import logging
import os
import subprocess
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


#: each pytest-xdist worker's base port: its labs, game day and services take base-1012 (the
#: operator UI's Airflow) to base+2340 (the game day's PostgreSQL), clear of the other workers',
#: of a user's labs (19092-19999) and of the kernel's ephemeral ports (32768-60999)
WORKER_BASE_PORTS = (29092, 24092, 14092, 62092)


def _worker_ports_and_folders() -> None:
    """Under pytest-xdist (``make test`` runs three) every worker but the first moves the
    suite's ports and folders out of the others' way, before anything below reads them: its
    labs, Spark cluster, game day, Airflow and PostgreSQL run once per worker. Variables already
    set win, so a run can still place them itself."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker.removeprefix("gw"))
    if index == 0:
        return
    if index >= len(WORKER_BASE_PORTS):
        raise pytest.UsageError(f"the suite's ports leave room for {len(WORKER_BASE_PORTS)} workers: run it with fewer")
    base = WORKER_BASE_PORTS[index]
    for name, value in {
        "KAFKA_DR_TEST_BASE_PORT": base,
        "KAFKA_DR_TEST_AIRFLOW_PORT": base - 1012,
        "KAFKA_DR_TEST_POSTGRES_PORT": base - 660,
        "KAFKA_DR_TEST_LAB_DIR": REPO / f".lab-test-{worker}",
        "KAFKA_DR_TEST_GAMEDAY_DIR": REPO / f".lab-test-gameday-{worker}",
        "KAFKA_DR_TEST_UI_DIR": REPO / f".lab-test-ui-{worker}",
    }.items():
        os.environ.setdefault(name, str(value))


_worker_ports_and_folders()
TEST_LAB = Path(os.environ.get("KAFKA_DR_TEST_LAB_DIR", REPO / ".lab-test"))
TEST_BASE_PORT = int(os.environ.get("KAFKA_DR_TEST_BASE_PORT", "29092"))
#: the test Spark cluster's master and web UIs (workers' UIs follow the master's); +1900 is past
#: every lab the suite starts (the documented commands' at +1500 has three clusters)
TEST_SPARK_PORT = int(os.environ.get("KAFKA_DR_TEST_SPARK_PORT") or TEST_BASE_PORT + 1900)
TEST_SPARK_WEBUI_PORT = int(os.environ.get("KAFKA_DR_TEST_SPARK_WEBUI_PORT") or TEST_SPARK_PORT + 3)
AIRFLOW_HOME = TEST_LAB / "airflow"
#: shared by every worker of one run (``machine_share``)
MACHINE_LOCK = REPO / ".lab-test-machine.lock"

os.environ.update(
    {
        "AIRFLOW_HOME": str(AIRFLOW_HOME),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(AIRFLOW_HOME / "plugins"),  # the status page: an entry point
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{AIRFLOW_HOME / 'airflow.db'}",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(AIRFLOW_HOME / "logs"),
        "KAFKA_DR_CONFIG": str(TEST_LAB / "kafka-dr.yaml"),
    }
)
# The suite's brokers compile with C1 only: a test's broker lives for minutes under light load,
# where C2's compilations cost more CPU than they give back (docs/testing.md)
os.environ.setdefault("KAFKA_DR_LAB_JVM_OPTS", "-XX:TieredStopAtLevel=1")


#: A config of two clusters on TEST-NET addresses (nothing answers there) and a flow each way:
#: a DAG file that touched the network while it is parsed would hang or fail with it.
UNREACHABLE = """
clusters:
  east: {bootstrap_servers: "192.0.2.1:9092"}
  west: {bootstrap_servers: "192.0.2.2:9092"}
flows:
  - {source: east, target: west}
  - {source: west, target: east}
"""


#: Longer trials of faults the short game day (tests/e2e/test_gameday.py) injects too, with the
#: same proof. They run in the whole suite like every other test; ``pytest -m drill`` runs them alone.
DRILL = "drill"


#: A test that needs the whole machine: under ``make test``'s workers it runs while no other
#: test does. The short game day (6 brokers, a Spark cluster, Airflow on PostgreSQL, traffic)
#: keeps both cores busy on its own; it measures how soon replication flows again after each
#: fault, and with other tests' JVMs beside it that measures the machine instead.
WHOLE_MACHINE = "whole_machine"


def pytest_configure(config):
    config.addinivalue_line("markers", f"{DRILL}: a longer trial of a fault the short game day also injects")
    config.addinivalue_line("markers", f"{WHOLE_MACHINE}: runs while no other test of the suite runs")


class MachineShare:
    """What a test holds of the machine; an exclusive holder can :meth:`share` it once the
    part that needs the machine alone is over."""

    def __init__(self, gate=None, machine=None) -> None:
        self._gate, self._machine = gate, machine

    def share(self) -> None:
        """From alone to shared: the others' tests start again beside this one's rest."""
        if self._machine is not None and self._gate is not None:
            fcntl.flock(self._machine, fcntl.LOCK_SH)  # only gate holders wait for the machine
            fcntl.flock(self._gate, fcntl.LOCK_UN)
            self._gate = None


@contextmanager
def machine_share(exclusive: bool):
    """Every test of a parallel run holds the machine shared; a ``whole_machine`` one alone.
    Two flocks, so a waiting exclusive holder is not starved: everyone passes a gate (held
    briefly by a test, and throughout by an exclusive one) before taking the machine."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield MachineShare()
        return
    with open(MACHINE_LOCK.with_suffix(".gate"), "a") as gate, open(MACHINE_LOCK, "a") as machine:
        fcntl.flock(gate, fcntl.LOCK_EX)
        fcntl.flock(machine, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        if not exclusive:
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield MachineShare(gate if exclusive else None, machine)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """Each test holds the machine shared from before its setup to after its teardown; the wait
    for it comes first, outside the test's own timeout (pytest-timeout's timer starts inside)."""
    if item.get_closest_marker(WHOLE_MACHINE):
        yield  # its module's fixture holds the machine alone (tests/e2e/test_gameday.py)
    elif item.nodeid.startswith(UNIT):
        yield  # no lab and a few seconds each: they run while the game day is still starting up
    else:
        with machine_share(exclusive=False):
            yield


#: The suite's files of 40 s or more, longest first, by their mean time over three clean-clone
#: runs. ``make test`` hands whole files to its workers in collection order, so these go first
#: and the short ones fill in behind them: each worker's last file is a short one and the
#: workers end close together (docs/testing.md).
LONGEST_FIRST = (
    "tests/e2e/test_gameday.py",
    "tests/integration/test_faults.py",
    "tests/integration/test_documented_commands.py",
    "tests/integration/test_bench.py",
    "tests/integration/test_secure_lab.py",
    "tests/integration/test_access_sync_secure_lab.py",
    "tests/e2e/test_operator_ui.py",
    "tests/integration/test_data_quality.py",
    "tests/integration/test_prometheus_alerts.py",
    "tests/integration/test_failover.py",
    "tests/integration/test_bad_input.py",
    "tests/integration/test_crash_recovery.py",
    "tests/e2e/test_installed_deployment.py",
    "tests/integration/test_packaging.py",
    "tests/e2e/test_failback_drill.py",
    "tests/integration/test_replication.py",
    "tests/integration/test_executor_env.py",
    "tests/integration/test_monitoring_dags.py",
    "tests/integration/test_group_sync.py",
    "tests/integration/test_lab.py",
    "tests/integration/test_task_copier.py",
    "tests/integration/test_spark_cluster.py",
    "tests/integration/test_drain.py",
    "tests/integration/test_spark_warm_workers.py",
    "tests/integration/test_offset_translation.py",
    "tests/integration/test_upgrade.py",
    "tests/integration/test_streaming_handover.py",
    "tests/integration/test_failover_active_active.py",
)


UNIT = "tests/unit/"


def pytest_collection_modifyitems(config, items):
    """The game day first, the unit tests next (the other workers run them beside its start-up),
    then the longest files, then the rest as collected."""
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}

    def order(item) -> tuple[int, int]:
        path = item.nodeid.split("::", 1)[0]
        if path == LONGEST_FIRST[0]:
            return (0, 0)
        return (1, 0) if path.startswith(UNIT) else (2, rank.get(path, len(rank)))

    items.sort(key=order)  # stable: within a rank, as collected


@pytest.fixture(scope="session")
def lab():
    """The running two-cluster lab (east, west). Started once, wiped at the end."""
    from kafka_dr.lab.lab import Lab

    lab = Lab(TEST_LAB)
    lab.down(wipe=True)  # a crashed earlier session may have left brokers behind
    stopped = False

    def stop() -> None:
        nonlocal stopped
        if not stopped:
            stopped = True
            # Destroy the Kafka clients tests left unreferenced while the brokers still
            # answer; otherwise they log connection-refused lines after pytest's summary.
            gc.collect()
            lab.down(wipe=True)

    atexit.register(stop)  # even if pytest is interrupted
    try:
        lab.up(count=2, base_port=TEST_BASE_PORT)
        yield lab
    finally:
        stop()


@pytest.fixture(scope="session")
def lab_config(lab):
    from kafka_dr.core.config_load import load_config

    return load_config(lab.config_file)


@pytest.fixture(scope="session")
def airflow_db(lab):
    """A migrated SQLite Airflow database under the test lab (``dag.test()`` needs one)."""
    AIRFLOW_HOME.mkdir(parents=True, exist_ok=True)
    airflow = Path(sys.executable).with_name("airflow")
    proc = subprocess.run([str(airflow), "db", "migrate"], capture_output=True, text=True, env=os.environ.copy())
    assert proc.returncode == 0, f"airflow db migrate failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return AIRFLOW_HOME


@pytest.fixture(scope="session")
def lab3():
    """A second lab with three clusters (east, west, north) for the copy-flag tree."""
    from kafka_dr.lab.lab import Lab

    lab = Lab(TEST_LAB.with_name(TEST_LAB.name + "-3"))
    lab.down(wipe=True)
    atexit.register(lambda: lab.down(wipe=True))
    try:
        lab.up(count=3, base_port=TEST_BASE_PORT + 500)
        yield lab
    finally:
        lab.down(wipe=True)


@pytest.fixture(scope="module")
def secure_lab():
    """Two SASL_SSL clusters with an authorizer at base port + 1000, their credentials in this
    process's env; one per test module (each module's tests change its ACLs and users)."""
    from kafka_dr.lab.lab import Lab
    from kafka_dr.lab.secure import KEYSTORE_PASSWORD_ENV, read_secrets

    lab = Lab(TEST_LAB.with_name(TEST_LAB.name + "-secure"))
    lab.down(wipe=True)
    atexit.register(lambda: lab.down(wipe=True))
    lab.up(count=2, base_port=TEST_BASE_PORT + 1000, secure=True)
    secrets = read_secrets(lab.root)
    saved = {k: os.environ.get(k) for k in secrets}
    os.environ.update({k: v for k, v in secrets.items() if k != KEYSTORE_PASSWORD_ENV})
    try:
        yield lab, secrets
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        lab.down(wipe=True)


@pytest.fixture(scope="session")
def spark_cluster():
    """A Spark standalone cluster of two one-core workers (kafka_dr.lab.spark_cluster) in a folder
    beside the test lab, whose config it leaves alone: jobs go there with ``--master
    spark_cluster.running_master()``. Started on first use (about 10 s), stopped at the end."""
    from kafka_dr.lab.spark_cluster import SparkCluster, SparkLayout
    from wheels import python_for

    # the executors find a bare Python 3.12 by name (python3.12) for a deployment on 3.12 whose
    # job ships its environment; every other job names its Python by its full path
    bare = str(Path(python_for("3.12")).parent)
    environ = {**os.environ, "PATH": f"{bare}:{os.environ['PATH']}"}
    cluster = SparkCluster(TEST_LAB.with_name(TEST_LAB.name + "-spark"), environ)
    cluster.down(wipe=True)  # a crashed earlier session may have left daemons behind
    atexit.register(cluster.down)
    try:
        cluster.up(SparkLayout(TEST_SPARK_PORT, TEST_SPARK_WEBUI_PORT, workers=2, cores=1, memory="1g"))
        yield cluster
    finally:
        cluster.down()


# py4j logs at INFO from __del__ during interpreter shutdown, after logging's streams closed
logging.getLogger("py4j").setLevel(logging.WARNING)


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the in-process replication tests."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kafka-dr-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def topic_name(request):
    """A topic name unique to this test, so tests never see each other's records."""
    return f"t.{request.node.name[:40].replace('[', '-').replace(']', '')}.{uuid.uuid4().hex[:6]}"

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
import gc
import logging
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TEST_LAB = Path(os.environ.get("KAFKA_DR_TEST_LAB_DIR", REPO / ".lab-test"))
TEST_BASE_PORT = int(os.environ.get("KAFKA_DR_TEST_BASE_PORT", "29092"))
#: the test Spark cluster's master and web UIs (workers' UIs follow the master's); +1900 is past
#: every lab the suite starts (the documented commands' at +1500 has three clusters)
TEST_SPARK_PORT = int(os.environ.get("KAFKA_DR_TEST_SPARK_PORT") or TEST_BASE_PORT + 1900)
TEST_SPARK_WEBUI_PORT = int(os.environ.get("KAFKA_DR_TEST_SPARK_WEBUI_PORT") or TEST_SPARK_PORT + 3)
AIRFLOW_HOME = TEST_LAB / "airflow"

os.environ.update(
    {
        "AIRFLOW_HOME": str(AIRFLOW_HOME),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{AIRFLOW_HOME / 'airflow.db'}",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(AIRFLOW_HOME / "logs"),
        "KAFKA_DR_CONFIG": str(TEST_LAB / "kafka-dr.yaml"),
    }
)


#: Longer trials of faults the short game day (tests/e2e/test_gameday.py) injects too, with the
#: same proof: the whole suite (``make test``) leaves them out; ``pytest -m drill``, or naming
#: their files, runs them.
DRILL = "drill"


def pytest_configure(config):
    config.addinivalue_line("markers", f"{DRILL}: a longer trial of a fault the short game day also injects")


def pytest_collection_modifyitems(config, items):
    if config.getoption("markexpr") or config.args_source != pytest.Config.ArgsSource.TESTPATHS:
        return  # a marker expression, or the files or tests named, choose for themselves
    drills = [item for item in items if item.get_closest_marker(DRILL)]
    if drills:
        config.hook.pytest_deselected(items=drills)
        items[:] = [item for item in items if not item.get_closest_marker(DRILL)]


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

    cluster = SparkCluster(TEST_LAB.with_name(TEST_LAB.name + "-spark"))
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

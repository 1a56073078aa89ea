"""Every command README.md and docs/ print, run as a subprocess exactly as printed, the way a
user types it: in a checkout of their own (this repository's files, their own ``.lab``), from
a shell whose state is what the document's earlier lines set (``eval``, ``source``,
``export``). Each command must exit as documented, end with the line it should, and print no
Python traceback. tests/documented_commands.py lists the commands and what they must print.

The lab these commands start is the user's lab, on ports of its own
(``KAFKA_DR_LAB_BASE_PORT``) so that it never meets the suite's lab; it is wiped at the end.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import TEST_BASE_PORT, TEST_LAB, TEST_SPARK_PORT, TEST_SPARK_WEBUI_PORT
from documented_commands import COMMANDS, REPO, RUN, SESSION, documented

pytestmark = pytest.mark.lab

#: the order a user meets them in: the lab, the demo, replication, Airflow, failover, the lab
#: verbs, a cluster of three brokers, a three-cluster lab, then the secure lab of docs/reliability.md
ORDER = [
    ".venv/bin/kafka-dr lab up",
    ".venv/bin/kafka-dr lab status",
    ".venv/bin/kafka-dr lab monitoring up",
    ".venv/bin/kafka-dr lab monitoring status",
    ".venv/bin/kafka-dr lab monitoring down",
    ".venv/bin/kafka-dr lab spark up --workers 2",
    ".venv/bin/kafka-dr lab spark status",
    ".venv/bin/kafka-dr lab spark down",
    ".venv/bin/python -m kafka_dr.spark.class_archive",
    ".venv/bin/kafka-dr pack-executor-env --out /tmp/kafka-dr-executor-env.tar.gz",
    ".venv/bin/python -m kafka_dr.lab.broker_archive",
    "make demo",
    "make check",
    "make dist",
    ".venv/bin/kafka-dr replicate --config .lab/kafka-dr.yaml --flow east_to_west --mode incremental",
    "spark-submit spark_jobs/replicate.py --config kafka-dr.yaml --flow east_to_west --mode incremental",
    ".venv/bin/kafka-dr failover --from east --to west --dry-run --force",
    ".venv/bin/kafka-dr airflow status",
    ".venv/bin/kafka-dr airflow down",
    ".venv/bin/airflow db migrate",
    ".venv/bin/airflow dags test dr_cluster_health",
    ".venv/bin/airflow dags test dr_heartbeat",
    ".venv/bin/airflow dags test dr_topic_config_sync",
    ".venv/bin/airflow dags test dr_schema_mirror",
    ".venv/bin/kafka-dr acl-sync --dry-run",
    ".venv/bin/kafka-dr acl-sync --flow east_to_west",
    ".venv/bin/kafka-dr quota-sync --dry-run",
    ".venv/bin/kafka-dr acls --principal User:kafka-dr",
    ".venv/bin/airflow dags test dr_preflight",
    ".venv/bin/kafka-dr lab stop east",
    ".venv/bin/kafka-dr lab start east",
    ".venv/bin/kafka-dr lab kill east",
    ".venv/bin/kafka-dr lab down",
    ".venv/bin/kafka-dr lab down --wipe",
    ".venv/bin/kafka-dr lab up --clusters 1 --brokers 3 --dir .lab-brokers --base-port 19792",
    ".venv/bin/kafka-dr lab kill east-2 --dir .lab-brokers",
    ".venv/bin/kafka-dr lab status --dir .lab-brokers",
    ".venv/bin/kafka-dr lab start east-2 --dir .lab-brokers",
    ".venv/bin/kafka-dr lab down --wipe --dir .lab-brokers",
    ".venv/bin/kafka-dr lab up --clusters 3",
    ".venv/bin/kafka-dr lab up --secure --dir .lab-secure --base-port 19592",
    ".venv/bin/kafka-dr replicate --flow east_to_west --mode incremental",
]
CHECKOUT_FILES = (
    *(".venv", "Makefile", "pyproject.toml", "constraints.txt", "setup.py", "MANIFEST.in", "CHANGELOG.md"),
    *("plugins", "spark_jobs", "dags", "expectations", "examples", "monitoring"),
    *("tests", "README.md", "docs"),  # make check runs the unit tests, which read the documents too
)


def test_order_covers_every_command_that_runs():
    assert sorted(ORDER) == sorted(c for c, check in COMMANDS.items() if check.how == RUN)


KAFKA_DR = str(REPO / ".venv" / "bin" / "kafka-dr")


def _wipe_labs(root: Path, env: dict) -> None:
    for lab in (".lab", ".lab-secure", ".lab-brokers"):
        if (root / lab).exists():
            subprocess.run(
                [KAFKA_DR, "lab", "--dir", str(root / lab), "down", "--wipe"],
                cwd=root,
                env=env,
                capture_output=True,
                timeout=180,
            )


@pytest.fixture(scope="module")
def checkout():
    """A user's checkout (this repository's files) and a user's environment: the suite's own
    Airflow and Kafka settings removed, the virtualenv's bin on PATH as after ``activate``.
    A fixed folder beside the suite's lab, so that a crashed earlier run's brokers are stopped first."""
    root = TEST_LAB.with_name(TEST_LAB.name + "-checkout")
    # A fresh shell: no settings of ours, and none of make's own (``make test`` runs the suite,
    # and a nested make would print its directory changes).
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AIRFLOW", "KAFKA_DR", "PYSPARK", "SPARK_", "PYTEST_"))
        and k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")
    }
    env["PATH"] = f"{REPO / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["KAFKA_DR_LAB_BASE_PORT"] = str(TEST_BASE_PORT + 1500)
    # the user's Spark cluster beside the suite's own (conftest.spark_cluster)
    env["KAFKA_DR_LAB_SPARK_PORT"] = str(TEST_SPARK_PORT + 10)
    env["KAFKA_DR_LAB_SPARK_WEBUI_PORT"] = str(TEST_SPARK_WEBUI_PORT + 10)
    env["KAFKA_DR_LAB_MONITORING_PORT"] = str(TEST_BASE_PORT + 2420)  # past the game day's ports
    env["KAFKA_DR_LOG_DIR"] = str(root / "logs")
    # `make check` runs the unit tests through the checkout's link to tests/: their Airflow home
    # goes into the checkout, not into the running suite's lab folder that the link resolves to
    env["KAFKA_DR_TEST_LAB_DIR"] = str(root / ".lab-test")
    _wipe_labs(root, env)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for name in CHECKOUT_FILES:
        (root / name).symlink_to(REPO / name)
    yield root, env
    _wipe_labs(root, env)
    shutil.rmtree(root, ignore_errors=True)


def _session_lines(command: str) -> list[str]:
    """The lines a user ran before ``command`` in its code block that set the shell's state."""
    doc = next(d for d in documented() if d.command == command)
    return [line for line in doc.block if COMMANDS[line].how == SESSION]


@pytest.mark.parametrize("command", ORDER)
def test_documented_command_works_as_printed(checkout, command):
    root, env = checkout
    check = COMMANDS[command]
    if command.startswith("spark-submit"):  # the user's own config file beside the checkout
        shutil.copy(root / ".lab" / "kafka-dr.yaml", root / "kafka-dr.yaml")
    script = "set -e\n" + "\n".join([*_session_lines(command), command])
    proc = subprocess.run(["bash", "-c", script], cwd=root, env=env, capture_output=True, text=True, timeout=900)
    out = f"--- stdout\n{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-4000:]}"
    assert proc.returncode == check.exit_code, out
    if command.startswith(".venv/bin/airflow"):
        assert re.search(check.last_line, proc.stdout + proc.stderr), out
        return
    assert "Traceback" not in proc.stdout + proc.stderr, out
    if not command.startswith("spark-submit"):  # our commands keep Spark's log lines off the console
        assert not re.search(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (WARN|INFO) ", proc.stderr, re.M), out
    lines = [ln for ln in (proc.stdout if proc.stdout.strip() else proc.stderr).splitlines() if ln.strip()]
    assert lines and re.search(check.last_line, lines[-1]), out

"""The distributable package: the wheel and sdist `python -m build` makes hold everything a
deployment needs, and kafka-dr installed from the wheel into a virtualenv of its own (no
checkout on any path) brings its DAGs, its status-page plugin and its provider entry to Airflow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import UNREACHABLE
from wheels import build, copy_checkout, python_for, uv_install

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SHIPPED = ("dags", "spark_jobs", "expectations", "examples", "monitoring")
ONE_LINE_DAG_FILE = "from kafka_dr.airflow.all_dags import *  # noqa: F403 - every kafka-dr DAG\n"


def _tracked(folder: str) -> set[str]:
    out = subprocess.run(["git", "ls-files", folder], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return {line.removeprefix(f"{folder}/") for line in out.splitlines()}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    build(copy_checkout(tmp_path_factory.mktemp("source") / "kafka-dr"), out)
    return out


def _version() -> str:
    from kafka_dr import __version__

    return __version__


def test_the_wheel_holds_the_library_dags_jobs_suites_examples_and_entry_points(dist):
    wheel = dist / f"kafka_dr-{_version()}-py3-none-any.whl"
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in SHIPPED:
        inside = {
            n.removeprefix(f"kafka_dr/_shipped/{folder}/")
            for n in names
            if n.startswith(f"kafka_dr/_shipped/{folder}/")
        }
        assert inside == _tracked(folder), folder
    assert {
        "kafka_dr/airflow/templates/status.html",
        "kafka_dr/airflow/plugin.py",
        "kafka_dr/kafka/java/ClientQuotas.java",
        "kafka_dr/bench/java/BrokerRequests.java",
    } <= names
    info = f"kafka_dr-{_version()}.dist-info"
    entry_points = zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()
    assert "kafka_dr_status = kafka_dr.airflow.plugin:KafkaDrStatusPlugin" in entry_points
    assert "provider_info = kafka_dr.airflow.provider:get_provider_info" in entry_points
    metadata = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode()
    required = [line.split(": ", 1)[1] for line in metadata.splitlines() if line.startswith("Requires-Dist: ")]
    runtime = [r for r in required if "extra ==" not in r]
    assert runtime and not [r for r in runtime if "==" in r], f"exact pins belong in constraints.txt: {runtime}"
    assert any(r.startswith("psycopg2-binary") and 'extra == "lab"' in r for r in required)


def test_the_sdist_carries_the_top_level_folders_the_build_ships(dist):
    sdist = dist / f"kafka_dr-{_version()}.tar.gz"
    root = f"kafka_dr-{_version()}/"
    names = {n.removeprefix(root) for n in tarfile.open(sdist).getnames()}
    for folder in SHIPPED:
        assert {f"{folder}/{f}" for f in _tracked(folder)} <= names, folder
    assert {"CHANGELOG.md", "constraints.txt", "setup.py", "pyproject.toml"} <= names


#: the lowest Airflow pyproject.toml declares; the highest tested is constraints.txt's
LOWEST_AIRFLOW = "3.1.8"
#: the Pythons pyproject.toml declares beyond the lab's 3.11 (which runs the rest of the suite):
#: the highest with the lab's constraints, the other with the lowest Airflow
INSTALLS = [("3.13", "constraints.txt"), ("3.12", f"apache-airflow=={LOWEST_AIRFLOW}")]


@pytest.fixture(scope="module", params=INSTALLS, ids=[f"py{p}-{pins}" for p, pins in INSTALLS])
def installed(request, dist, tmp_path_factory) -> dict:
    """kafka-dr from the wheel in a virtualenv of its own on another Python than the lab's, with
    the lab's constraints or with the lowest Airflow it declares (the rest resolved around it);
    every command runs from a folder outside the checkout, with no checkout folder on any path."""
    minor, pinned = request.param
    home = tmp_path_factory.mktemp("installed")
    venv = home / "venv"
    subprocess.run([python_for(minor), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    wheel = dist / f"kafka_dr-{_version()}-py3-none-any.whl"
    if pinned == "constraints.txt":
        pins = ["-c", str(REPO / "constraints.txt")]
    else:
        # as Airflow's own constraints for 3.1 would: its Fernet predates cryptography 51 (it sets
        # an attribute cryptography 51's MultiFernet no longer takes; Airflow 3.3 wraps it)
        (home / "airflow.txt").write_text(pinned + "\ncryptography<51\n")
        pins = ["--override", str(home / "airflow.txt")]
    proc = subprocess.run(
        uv_install(venv) + [str(wheel), *pins],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (home / "kafka-dr.yaml").write_text(UNREACHABLE)
    dags = home / "dags"
    dags.mkdir()
    (dags / "kafka_dr_dags.py").write_text(ONE_LINE_DAG_FILE)
    airflow_home = home / "airflow"
    env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": os.environ.get("HOME", str(home)),
        "JAVA_HOME": os.environ.get("JAVA_HOME", ""),
        "KAFKA_DR_CONFIG": str(home / "kafka-dr.yaml"),
        "AIRFLOW_HOME": str(airflow_home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(airflow_home / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_home / 'airflow.db'}",
    }
    versions = _run(
        {"home": home, "env": env},
        "python",
        "-c",
        "import sys, airflow; print(sys.version_info[:2], airflow.__version__)",
    )
    assert versions.split(")")[0] == f"({minor.replace('.', ', ')}", versions
    if pinned != "constraints.txt":
        assert versions.split()[-1] == LOWEST_AIRFLOW
    return {"venv": venv, "home": home, "env": env}


def _run(installed: dict, *command: str, timeout: float = 300) -> str:
    proc = subprocess.run(
        list(command), cwd=installed["home"], env=installed["env"], capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"{command}: {proc.stdout[-2000:]}{proc.stderr[-3000:]}"
    return proc.stdout


def test_the_installed_package_finds_its_shipped_folders_inside_itself(installed):
    assert _run(installed, "kafka-dr", "--version").strip() == f"kafka-dr {_version()}"
    where = _run(installed, "python", "-c", "from kafka_dr.shipped import folder; print(folder('spark_jobs'))")
    site = installed["venv"] / "lib"
    assert Path(where.strip()).is_relative_to(site) and (Path(where.strip()) / "replicate.py").is_file(), where
    assert not Path(where.strip()).is_relative_to(REPO)


@pytest.mark.parametrize("source", ["file", "secrets backend", "database"])
def test_a_one_line_dag_file_brings_every_dag_of_the_installed_package(installed, source):
    """The config from a file, or from an Airflow Variable: through a secrets backend (Airflow's
    environment-variable backend, ``AIRFLOW_VAR_<KEY>``) or from Airflow's database."""
    env = dict(installed["env"])
    text = (installed["home"] / "kafka-dr.yaml").read_text()
    if source != "file":
        env["KAFKA_DR_CONFIG"] = "airflow-variable:kafka_dr_config"
    if source == "secrets backend":
        env["AIRFLOW_VAR_KAFKA_DR_CONFIG"] = text
    elif source == "database":
        _run(installed, "airflow", "db", "migrate", timeout=600)
        _run(installed, "airflow", "variables", "set", "kafka_dr_config", text)
    installed = {**installed, "env": env}
    probe = (
        "import json, os\n"
        "try:\n    from airflow.dag_processing.dagbag import DagBag\n"
        "except ImportError:  # Airflow 3.1\n    from airflow.models.dagbag import DagBag\n"
        "b = DagBag(dag_folder=os.environ['AIRFLOW__CORE__DAGS_FOLDER'])\n"
        "print(json.dumps({'errors': {k: str(v) for k, v in b.import_errors.items()}, 'dags': sorted(b.dags),"
        " 'files': sorted({d.fileloc for d in b.dags.values()})}))"
    )
    parsed = json.loads(_run(installed, "python", "-c", probe).strip().splitlines()[-1])
    assert parsed["errors"] == {}
    repo_dags = {f.stem for f in (REPO / "dags").glob("dr_*.py")}
    expected = (repo_dags - {"dr_replication"}) | {"dr_replicate_east_to_west", "dr_replicate_west_to_east"}
    assert set(parsed["dags"]) == expected
    assert parsed["files"] == [str(installed["home"] / "dags" / "kafka_dr_dags.py")]
    if source != "file":  # the jobs and tasks read the Variable's text from the file it was written to
        written = list((Path(env["AIRFLOW_HOME"]) / "kafka-dr").glob("config-*.yaml"))
        assert [p.read_text() for p in written] == [text]


def test_airflow_lists_the_status_page_plugin_and_the_provider_from_the_installed_package(installed):
    plugins = json.loads(_run(installed, "airflow", "plugins", "--output", "json"))
    status = [p for p in plugins if p["name"] == "kafka_dr_status"]
    assert len(status) == 1, plugins
    assert "kafka_dr" in json.dumps(status[0]) and "dr-status" in json.dumps(status[0])
    providers = json.loads(_run(installed, "airflow", "providers", "list", "--output", "json"))
    assert {"package_name": "kafka-dr", "version": _version()}.items() <= next(
        p for p in providers if p["package_name"] == "kafka-dr"
    ).items(), providers


def test_the_installed_package_runs_spark_jobs_and_packs_the_executors_environment_on_its_python(installed):
    """PySpark's Python workers on this Python, and the executors' archive packed from it."""
    job = (
        "from pyspark.sql import SparkSession\n"
        "s = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false').getOrCreate()\n"
        "print(s.sparkContext.parallelize(range(100), 2).map(lambda x: x * 2).sum())\n"
        "s.stop()"
    )
    out = _run(installed, "python", "-c", job, timeout=300).strip().splitlines()[-1]
    assert out == "9900", out
    packed = _run(installed, "kafka-dr", "pack-executor-env", "--out", str(installed["home"] / "env.tar.gz"))
    assert "confluent-kafka==" in packed and "pyarrow==" in packed
    names = tarfile.open(installed["home"] / "env.tar.gz").getnames()
    assert "kafka_dr/spark/source.py" in names and not [n for n in names if n.startswith("kafka_dr/_shipped/")]

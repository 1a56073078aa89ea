"""Every DAG file imports cleanly, is tagged, has retries, and parsing stays light.

Parsing uses a config whose clusters do not exist (nothing listens on those addresses): a
DAG file that touched the network at parse time would hang or fail here. Each parse runs in
a fresh interpreter so the "heavy modules" check sees only what parsing imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import UNREACHABLE

REPO = Path(__file__).resolve().parents[3]
PROBE = REPO / "tests" / "dag_parse_probe.py"


def _parse(config_path: Path, airflow_home: Path) -> dict:
    env = {
        **os.environ,
        "KAFKA_DR_CONFIG": str(config_path),
        "AIRFLOW_HOME": str(airflow_home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_home / 'airflow.db'}",
    }
    proc = subprocess.run([sys.executable, str(PROBE)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def parsed(tmp_path_factory):
    d = tmp_path_factory.mktemp("dagparse")
    cfg = d / "kafka-dr.yaml"
    cfg.write_text(UNREACHABLE)
    return _parse(cfg, d / "airflow")


def test_no_import_errors(parsed):
    assert parsed["import_errors"] == {}
    assert "dr_cluster_health" in parsed["dags"]


def test_every_dag_tagged_and_every_task_retries(parsed):
    for dag_id, dag in parsed["dags"].items():
        assert "kafka-dr" in dag["tags"], dag_id
        assert dag["tasks"], f"{dag_id} has no tasks"
        for task_id, retries in dag["tasks"].items():
            assert retries >= 1, f"{dag_id}.{task_id} has no retries"


def test_a_hung_task_is_cut_and_retried_soon(parsed):
    """Every task has a time limit and comes back within half a minute of a failure; the tasks
    that make a few Kafka calls (the pre-flight before a flow starts, the heartbeats, the health
    checks) are cut within two minutes, so a task hung at its start delays nothing for long."""
    short = {"dr_heartbeat", "dr_cluster_health", "dr_preflight", "dr_offset_sync"}
    for dag_id, dag in parsed["dags"].items():
        for task_id, timing in dag["timing"].items():
            where = f"{dag_id}.{task_id}"
            assert timing["execution_timeout"], f"{where} has no execution_timeout"
            assert timing["retry_delay"] <= 30, f"{where} retries after {timing['retry_delay']}s"
            if dag_id in short or task_id == "preflight":
                assert timing["execution_timeout"] <= 120, where
    # a continuous flow's job runs for its max duration (an hour by default), then stops itself
    assert parsed["dags"]["dr_replicate_east_to_west"]["timing"]["replicate"]["execution_timeout"] > 3600


def test_a_dag_that_only_runs_when_triggered_is_never_paused(parsed):
    # A failover triggered through the REST API (a runbook, an incident bot) must run, not sit
    # queued behind a pause nobody sees; scheduled DAGs follow Airflow's own setting.
    manual = {d for d, dag in parsed["dags"].items() if dag["schedule"] == "NullTimetable"}
    assert {"dr_failover", "dr_failback", "dr_drain", "dr_preflight"} <= manual
    assert {d: parsed["dags"][d]["paused_upon_creation"] for d in manual} == dict.fromkeys(manual, False)


def test_an_operators_triggered_dag_goes_before_the_periodic_ones(parsed):
    # in an outage the executor fills with periodic tasks waiting out timeouts on the dead
    # cluster: the failover's tasks must be queued first when a slot frees
    for dag_id, dag in parsed["dags"].items():
        weights = {w for w, _ in dag["priority"].values()}
        if dag["schedule"] == "NullTimetable":
            assert {tuple(v) for v in dag["priority"].values()} == {(100, "absolute")}, dag_id
        else:
            assert max(weights) < 100, dag_id


def test_parsing_imports_no_client_libraries(parsed):
    # Kafka, Spark and GX clients are imported inside tasks, never when a DAG file is parsed.
    assert parsed["heavy_modules"] == []


def test_invalid_config_is_an_import_error_naming_every_problem(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "clusters:\n  east: {bootstrap_servers: 'a:1'}\nflows:\n  - {source: east, target: eest}\n  - {source: east}\n"
    )
    out = _parse(bad, tmp_path / "airflow")
    errors = "\n".join(out["import_errors"].values())
    assert "flows[0].target: unknown cluster 'eest'" in errors
    assert "flows[1].target: missing required key" in errors


def test_the_game_day_knows_every_dag_the_files_define(parsed, tmp_path):
    """It unpauses the DAGs once Airflow lists all of them, named from the files alone."""
    from kafka_dr.core.config_load import load_config
    from kafka_dr.gameday.deploy import Deployment

    (tmp_path / "kafka-dr.yaml").write_text(UNREACHABLE)
    deployment = Deployment(tmp_path / "gameday")
    deployment.cfg = load_config(tmp_path / "kafka-dr.yaml")
    assert deployment.dag_ids() == set(parsed["dags"])

"""The lab's Airflow service without starting Airflow: its command lines, environment, settings
and health judgement, and how it recognises and stops its own processes."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_dr.core.config_load import load_config
from kafka_dr.lab.airflow_service import (
    AirflowService,
    ServiceSpec,
    health_problems,
    is_ours,
    leftover_sessions,
    resolve_spec,
    role_argv,
    service_env,
)
from kafka_dr.lab.lab import LabError
from kafka_dr.lab.processes import proc_state, session_members, start_ticks, stop_session

CONFIG = """\
clusters:
  east: {bootstrap_servers: "127.0.0.1:1"}
  west: {bootstrap_servers: "127.0.0.1:2"}
flows:
  - {source: east, target: west}
"""
HEALTHY = {c: {"status": "healthy"} for c in ("metadatabase", "scheduler", "dag_processor", "triggerer")}


@pytest.fixture
def spec(tmp_path) -> ServiceSpec:
    (tmp_path / "kafka-dr.yaml").write_text(CONFIG)
    return ServiceSpec(str(tmp_path / "kafka-dr.yaml"), str(tmp_path / "airflow"), 48280, 45432)


def test_the_api_listens_on_loopback_and_no_part_serves_logs_on_a_fixed_port():
    assert role_argv("api-server", 48280) == ["api-server", "--host", "127.0.0.1", "--port", "48280"]
    assert role_argv("scheduler", 1) == ["scheduler", "--skip-serve-logs"]
    assert role_argv("triggerer", 1) == ["triggerer", "--skip-serve-logs"]
    assert role_argv("dag-processor", 1) == ["dag-processor"]


def test_the_environment_is_the_services_own_whatever_the_shell_had(spec):
    inherited = {
        "PATH": "/usr/bin",
        "JAVA_HOME": "/jdk",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "sqlite:////tmp/other.db",
        "AIRFLOW__CORE__EXECUTOR": "SequentialExecutor",
        "KAFKA_DR_CONFIG": "/elsewhere.yaml",
    }
    url = "postgresql+psycopg2://kafka_dr:pw@127.0.0.1:45432/airflow"
    broker = "redis+socket:///lab/broker/redis.sock"
    env = service_env(spec, load_config(spec.config), url, broker, {"jwt_secret": "j", "secret_key": "s"}, inherited)
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == url
    # tasks run in a Celery worker: a restarted scheduler adopts them (their states in the database)
    assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert env["AIRFLOW__CELERY__BROKER_URL"] == broker
    assert env["AIRFLOW__CELERY__RESULT_BACKEND"] == f"db+{url}"
    assert env["KAFKA_DR_CONFIG"] == spec.config
    assert env["AIRFLOW_HOME"] == spec.home
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://127.0.0.1:48280/execution/"
    assert env["AIRFLOW__API__BASE_URL"] == "http://127.0.0.1:48280"
    assert env["AIRFLOW__API_AUTH__JWT_SECRET"] == "j" and env["AIRFLOW__API__SECRET_KEY"] == "s"
    # a task's start call waits for a busy API instead of dying unstarted
    assert float(env["AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT"]) >= 30
    # a task a killed scheduler left running is adopted within a minute, not five
    assert float(env["AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL"]) <= 30
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS"] == "False"  # login required
    assert env["JAVA_HOME"] == "/jdk"
    assert env["PATH"] == f"{Path(sys.executable).parent}{os.pathsep}/usr/bin"
    assert env["AIRFLOW_CONN_KAFKA_DR_EAST"]  # the cluster connections of `kafka-dr airflow env`


def test_settings_are_what_is_given_else_what_ran_last_else_the_lab_defaults(tmp_path):
    lab = tmp_path / "lab"
    assert resolve_spec(None, lab, None, None, None, None) == ServiceSpec(
        str(lab / "kafka-dr.yaml"), str(lab / "airflow"), 8280, 15432
    )
    last = {"config": "/c.yaml", "home": "/h", "port": 48280, "db_port": 45432}
    assert resolve_spec(last, lab, None, None, None, None) == ServiceSpec("/c.yaml", "/h", 48280, 45432)
    given = resolve_spec(last, lab, tmp_path / "x.yaml", None, 48281, None)
    assert given == ServiceSpec(str(tmp_path / "x.yaml"), "/h", 48281, 45432)


@pytest.mark.parametrize(
    "health, problems",
    [
        (None, ["the API does not answer"]),
        (HEALTHY, []),
        ({**HEALTHY, "triggerer": {"status": None}}, ["triggerer not reported"]),
        ({**HEALTHY, "scheduler": {"status": "unhealthy"}}, ["scheduler unhealthy"]),
        (
            {"metadatabase": {"status": "healthy"}},
            ["scheduler not reported", "dag_processor not reported", "triggerer not reported"],
        ),
    ],
)
def test_every_part_must_be_healthy(health, problems):
    assert health_problems(health) == problems


def test_a_start_time_is_read_past_a_command_name_with_spaces_and_parentheses():
    stat = "4242 (airflow (worker) x) S 1 4242 4242 0 -1 4194560 1 0 0 0 3 1 0 0 20 0 1 0 987654 123 45"
    assert start_ticks(stat) == 987654


def _sleeper(*argv: str) -> subprocess.Popen:
    """A process whose command line names ``argv``, returned once it has exec'd (until then it
    still shows the parent's command line, which a loaded machine makes visible)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *argv], start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (argv and argv[-1] in (proc_state(proc.pid) or (0, ""))[1]):
        time.sleep(0.05)
    return proc


def test_a_process_is_ours_only_with_its_recorded_start_time_and_an_airflow_command():
    ours, other = _sleeper("airflow", "scheduler"), _sleeper("something-else")
    try:
        start = proc_state(ours.pid)[0]
        assert is_ours({"pid": ours.pid, "start": start})
        assert not is_ours({"pid": ours.pid, "start": start + 1})  # a recycled pid
        assert not is_ours({"pid": other.pid, "start": proc_state(other.pid)[0]})
        assert not is_ours({}) and not is_ours(None)
    finally:
        for p in (ours, other):
            p.kill()
            p.wait()
    assert not is_ours({"pid": ours.pid, "start": start})  # gone


def test_stopping_a_process_stops_its_whole_session_other_process_groups_too():
    """A task runs in a process group of its own, its Spark job under it."""
    script = "sleep 60 & python3 -c 'import os, time; os.setpgid(0, 0); time.sleep(60)' & wait"
    leader = subprocess.Popen(["sh", "-c", script], start_new_session=True)
    deadline = time.monotonic() + 10
    while len(_groups(session_members(leader.pid))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    members = session_members(leader.pid)
    assert len(members) >= 3 and len({os.getpgid(m) for m in members}) == 2
    stop_session(leader.pid, timeout=10)
    assert all(proc_state(pid) is None for pid in members)


def test_the_tasks_of_a_killed_scheduler_are_stopped_by_down(tmp_path):
    """kill -9 of a scheduler leaves its executor's processes running in its session;
    ``down`` (like ``up`` before it starts a new scheduler) stops them."""
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60 & wait"], start_new_session=True)
    deadline = time.monotonic() + 10
    while len(session_members(leader.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    entry = {"pid": leader.pid, "start": proc_state(leader.pid)[0]}
    leader.kill()
    leader.wait()
    tasks = session_members(leader.pid)
    assert len(tasks) == 2
    state = {"processes": {"scheduler": entry}}
    assert leftover_sessions(state) == [leader.pid]
    (tmp_path / "airflow.json").write_text(json.dumps(state))
    assert AirflowService(tmp_path).down() == [f"tasks of an earlier session {leader.pid}"]
    assert all(proc_state(pid) is None for pid in tasks)
    assert leftover_sessions(state) == []


def test_a_live_session_leader_is_never_a_leftover():
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        assert leftover_sessions({"processes": {"scheduler": {"pid": other.pid, "start": 0}}}) == []
    finally:
        other.kill()
        other.wait()


def test_a_lab_without_a_service_has_nothing_to_stop_and_no_status(tmp_path):
    service = AirflowService(tmp_path)
    assert service.down() == []
    with pytest.raises(LabError, match=r"no Airflow service in .* \(run `kafka-dr airflow up`\)"):
        service.status()
    assert not (tmp_path / "airflow.json").exists()


def test_another_setting_while_it_runs_is_refused(spec, tmp_path, monkeypatch):
    service = AirflowService(tmp_path)
    runner = _sleeper("airflow", "api-server")
    try:
        service._save(
            {
                "spec": {**spec.__dict__, "port": 48281},
                "keys": {},
                "processes": {"api-server": {"pid": runner.pid, "start": proc_state(runner.pid)[0]}},
            }
        )
        with pytest.raises(
            LabError, match=r"runs with other settings \(port 48281\); run `kafka-dr airflow down` first"
        ):
            service.up(spec, load_config(spec.config))
    finally:
        runner.kill()
        runner.wait()
    assert oct((tmp_path / "airflow.json").stat().st_mode & 0o777) == "0o600"  # it holds the API's keys


def _fake_airflow(tmp_path: Path, monkeypatch, script: str) -> Path:
    """An ``airflow`` command that runs ``script`` (its starts counted in ``starts``)."""
    fake = tmp_path / "bin" / "airflow"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho start >> {tmp_path / 'starts'}\n{script}\n")
    fake.chmod(0o755)
    monkeypatch.setattr("kafka_dr.lab.airflow_service.AIRFLOW", str(fake))
    return tmp_path / "starts"


def _starts(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_a_part_that_dies_while_the_service_starts_is_started_again_once(spec, tmp_path, monkeypatch):
    spec = dataclasses.replace(spec, port=9)  # nothing answers; an ephemeral port may connect to itself
    # the start that creates the marker (mkdir is atomic: exactly one does) is killed after half a
    # second, before it writes a line; every later one runs
    first_dies = f"! mkdir {tmp_path / 'first'} 2>/dev/null || {{ sleep 0.5; kill -9 $$; }}"
    starts = _fake_airflow(tmp_path, monkeypatch, f"{first_dies}\nsleep 60")
    Path(spec.home).mkdir()
    service = AirflowService(tmp_path)
    state = {"spec": spec.__dict__, "keys": {}, "processes": {}}
    state["processes"]["api-server"] = service._start("api-server", spec, dict(os.environ), Path(spec.home))
    service._save(state)
    try:
        service._wait_restarting(
            spec, dict(os.environ), Path(spec.home), state, time.monotonic() + 30, lambda _: _starts(starts) == 2, set()
        )
        assert _starts(starts) == 2 and is_ours(service.load()["processes"]["api-server"])
    finally:
        service.down()


def test_a_part_that_dies_twice_is_the_error_and_says_how_it_ended(spec, tmp_path, monkeypatch):
    spec = dataclasses.replace(spec, port=9)
    starts = _fake_airflow(tmp_path, monkeypatch, "sleep 0.5; kill -9 $$")
    Path(spec.home).mkdir()
    service = AirflowService(tmp_path)
    state = {"spec": spec.__dict__, "keys": {}, "processes": {}}
    state["processes"]["api-server"] = service._start("api-server", spec, dict(os.environ), Path(spec.home))
    service._save(state)
    said = r"^airflow api-server was killed by SIGKILL during start-up \(log: .*api-server\.log\)"
    with pytest.raises(LabError, match=said):
        service._wait_restarting(
            spec, dict(os.environ), Path(spec.home), state, time.monotonic() + 30, lambda _: False, set()
        )
    assert _starts(starts) == 2


def _groups(pids) -> set[int]:
    """The process groups of ``pids``; one that exited since it was listed has none."""
    out = set()
    for pid in pids:
        try:
            out.add(os.getpgid(pid))
        except ProcessLookupError:
            pass
    return out

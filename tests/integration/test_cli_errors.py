"""Bad input, typed as a user types it: one clear line, last, naming what and where; exit code 2
for usage and config errors; no Python traceback (unless --debug); nothing started or changed.
No lab is needed: every one of these is refused before a cluster is contacted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

KAFKA_DR = str(Path(sys.executable).with_name("kafka-dr"))

CONFIG = """\
clusters:
  east: {bootstrap_servers: "127.0.0.1:1"}
  west: {bootstrap_servers: "127.0.0.1:2"}
flows:
  - {source: east, target: west}
"""


@pytest.fixture
def config(tmp_path) -> Path:
    path = tmp_path / "kafka-dr.yaml"
    path.write_text(CONFIG)
    return path


def run(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([KAFKA_DR, *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd)


def last_line(proc) -> str:
    return [ln for ln in proc.stderr.splitlines() if ln.strip()][-1]


@pytest.mark.parametrize(
    "args, line",
    [
        (
            ["replicate", "--config", "{cfg}", "--flow", "nope", "--mode", "incremental"],
            "kafka-dr replicate: no flow named 'nope' in {cfg} (flows: east_to_west)",
        ),
        (
            ["dq", "--config", "{cfg}", "--flow", "nope"],
            "kafka-dr dq: no flow named 'nope' in {cfg} (flows: east_to_west)",
        ),
        (
            ["failover", "--config", "{cfg}", "--from", "east", "--to", "west", "--groups", "("],
            "kafka-dr failover: --groups '(' is not a regular expression: "
            "missing ), unterminated subpattern at position 0",
        ),
        (
            [
                "failback",
                "--config",
                "{cfg}",
                "--recovered",
                "east",
                "--survivor",
                "west",
                "--mode",
                "resync",
                "--topics",
                "[",
                "--groups",
                "(",
            ],
            "kafka-dr failback: --groups '(' is not a regular expression: "
            "missing ), unterminated subpattern at position 0; "
            "--topics '[' is not a regular expression: unterminated character set at position 0",
        ),
        (
            ["drain", "--config", "{cfg}", "--recovered", "east", "--survivor", "east", "--timeout", "0"],
            "kafka-dr drain: the recovered and the surviving cluster are both 'east'; "
            "--timeout 0 is not a positive number of seconds",
        ),
        (
            ["failover", "--config", "{cfg}", "--from", "eest", "--to", "west"],
            "kafka-dr failover: unknown failed cluster 'eest' (known: east, west)",
        ),
        (
            ["bench", "--dir", "{tmp}/nolab", "--sizes", "1k"],
            "kafka-dr bench: --sizes '1k': '1k' is not a size in bytes (e.g. 100,1024)",
        ),
        (["replicate", "--config", "{tmp}/missing.yaml", "--flow", "east_to_west"], None),
        (
            ["airflow", "up", "--dir", "{tmp}/nolab", "--config", "{cfg}", "--port", "70000"],
            "kafka-dr airflow: --port 70000: not a TCP port (1-65535)",
        ),
        (
            ["airflow", "up", "--dir", "{tmp}/nolab"],
            "kafka-dr airflow: no config at {tmp}/nolab/kafka-dr.yaml (run `kafka-dr lab up` first, or pass --config)",
        ),
    ],
)
def test_usage_errors_end_with_one_line_and_exit_2(config, tmp_path, args, line):
    proc = run(*(a.format(cfg=config, tmp=tmp_path) for a in args), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    if line is not None:
        assert last_line(proc) == line.format(cfg=config, tmp=tmp_path)
    else:
        assert last_line(proc).startswith("kafka-dr replicate: invalid config") and "missing.yaml" in last_line(proc)
    assert not (tmp_path / "nolab").exists()  # nothing started


def test_airflow_status_without_a_service_says_how_to_start_one(tmp_path):
    proc = run("airflow", "status", "--dir", tmp_path / "nolab")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert (
        last_line(proc) == f"kafka-dr airflow: no Airflow service in {tmp_path / 'nolab'} (run `kafka-dr airflow up`)"
    )


def test_an_invalid_config_names_each_problem_and_ends_with_one_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(CONFIG.replace("target: west", "target: wst") + "spark: {mastr: x}\n")
    proc = run("config", "check", path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == f"kafka-dr config: invalid config {path}: 2 problems (listed above)"
    assert any("flows[0].target: unknown cluster 'wst'" in ln for ln in lines[:-1])


def test_argparse_errors_are_usage_errors(tmp_path):
    proc = run("failback", "--recovered", "east", cwd=tmp_path)
    assert proc.returncode == 2 and last_line(proc).startswith(
        "kafka-dr failback: error: the following arguments are required"
    )


def test_a_runtime_failure_is_exit_1_with_one_line_and_the_traceback_only_with_debug(config, tmp_path):
    """Clusters that do not answer: a failure, not a usage error."""
    proc = run("failover", "--config", config, "--from", "east", "--to", "west", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert last_line(proc) == "kafka-dr failover: the surviving cluster 'west' (127.0.0.1:2) does not answer either"
    debug = run("failover", "--config", config, "--from", "east", "--to", "west", "--dry-run", "--debug", cwd=tmp_path)
    assert debug.returncode == 1 and "Traceback (most recent call last)" in debug.stderr
    assert last_line(debug) == last_line(proc)


def test_airflow_env_puts_the_virtualenv_on_path(config, tmp_path):
    # `airflow standalone` starts its parts as `airflow ...`: after the eval they must be found
    # in this virtualenv even from a shell that never activated it.
    script = f'eval "$({KAFKA_DR} airflow env --config {config} --home {tmp_path / "af"})"; command -v airflow'
    proc = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"}
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(Path(sys.executable).with_name("airflow"))

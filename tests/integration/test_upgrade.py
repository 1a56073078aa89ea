"""An upgrade in place: the previous release (built from the git history) replicates both ways
on the lab, the new wheel is installed over it in the same virtualenv with the flows' data,
progress and heartbeats where the old one left them, and replication goes on: nothing lost,
nothing copied twice, nothing looped back. The suite reads the clusters itself."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_replication import flow_config

from kafka_checks import check_replica, read_sent, read_topic, varied_rows
from kafka_dr import __version__
from kafka_dr.kafka import clients
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.kafka.writing import produce_all
from wheels import build, copy_checkout, install, release_tree

pytestmark = [pytest.mark.lab, pytest.mark.slow]

PREVIOUS = "0.1.0"


def _kafka_dr(venv: Path, home: Path, *args: str) -> str:
    proc = subprocess.run(
        [str(venv / "bin" / "kafka-dr"), *args],
        cwd=home,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), "KAFKA_DR_NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"kafka-dr {' '.join(args)}: {proc.stdout[-2000:]}{proc.stderr[-3000:]}"
    return proc.stdout


def _installed_version(venv: Path) -> str:
    probe = "import importlib.metadata as m; print(m.version('kafka-dr'))"
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()


def _replicate_both_ways(venv: Path, home: Path, config: Path) -> None:
    for flow in ("east_to_west", "west_to_east"):
        _kafka_dr(venv, home, "replicate", "--config", str(config), "--flow", flow, "--mode", "incremental")


def test_the_new_wheel_over_the_previous_release_goes_on_where_it_stopped(lab, lab_config, tmp_path, topic_name):
    wheels = tmp_path / "wheels"
    build(release_tree(PREVIOUS, tmp_path / "previous"), wheels, "--wheel")
    build(copy_checkout(tmp_path / "current"), wheels, "--wheel")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    install(venv, str(wheels / f"kafka_dr-{PREVIOUS}-py3-none-any.whl"))
    assert _installed_version(venv) == PREVIOUS

    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic_name, partitions=3)
    config = flow_config(lab, tmp_path, [topic_name])
    now = int(time.time() * 1000)
    produce_all(clients.producer(east), topic_name, list(varied_rows("before-upgrade", 900, 3, t0_ms=now)))
    produce_all(clients.producer(west), topic_name, list(varied_rows("west-before", 300, 3, t0_ms=now)))
    _replicate_both_ways(venv, tmp_path, config)
    check_replica("west", read_topic(west, topic_name), read_sent(east, topic_name) + read_sent(west, topic_name))

    install(venv, str(wheels / f"kafka_dr-{__version__}-py3-none-any.whl"))
    assert _installed_version(venv) == __version__
    assert _kafka_dr(venv, tmp_path, "--version").strip() == f"kafka-dr {__version__}"
    produce_all(clients.producer(east), topic_name, list(varied_rows("after-upgrade", 900, 3)))
    produce_all(clients.producer(west), topic_name, list(varied_rows("west-after", 300, 3)))
    _replicate_both_ways(venv, tmp_path, config)

    # each side holds its own records and the other's, each once: the new version resumed from
    # the progress the old one committed (no record twice) and read its provenance (no loop)
    sent = read_sent(east, topic_name) + read_sent(west, topic_name)
    assert len(sent) == 2400
    per_origin = check_replica("west", read_topic(west, topic_name), sent)
    assert per_origin == {"east": 1800, "west": 600}
    assert check_replica("east", read_topic(east, topic_name), sent) == {"east": 1800, "west": 600}

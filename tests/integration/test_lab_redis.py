"""The lab Airflow's Celery broker (kafka_dr.lab.redis_broker): Debian's redis-server on a Unix
socket in the lab folder, recorded and stopped like the lab's other processes."""

from __future__ import annotations

import subprocess
import sys

import pytest
import redis

from kafka_dr.lab.lab import LabError
from kafka_dr.lab.processes import proc_state
from kafka_dr.lab.redis_broker import RedisBroker


def test_the_broker_answers_on_its_socket_only_and_stops_with_it(tmp_path):
    broker = RedisBroker(tmp_path / "broker")
    broker.ensure()
    try:
        pid = broker.pid()
        assert pid is not None and "redis-server" in proc_state(pid)[1]
        client = redis.Redis(unix_socket_path=str(broker.socket))
        client.rpush("q", b"task")
        assert client.lpop("q") == b"task"
        assert broker.url == f"redis+socket://{broker.socket}"
        broker.ensure()  # running: left alone
        assert broker.pid() == pid
        assert "port=0" in (tmp_path / "broker" / "redis.log").read_text()  # no TCP listener
    finally:
        assert broker.stop()
    assert broker.pid() is None and not broker.answering() and not broker.socket.exists()
    assert not broker.stop()


def test_a_caller_reading_the_output_of_a_process_that_started_it_is_not_held(tmp_path):
    """``kafka-dr airflow up`` run by a script that reads its output to the end returns once it
    has started Redis: the broker holds none of its streams."""
    script = f"from kafka_dr.lab.redis_broker import RedisBroker; RedisBroker({str(tmp_path / 'b')!r}).ensure()"
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    finally:
        RedisBroker(tmp_path / "b").stop()


def test_a_socket_path_too_long_is_refused_naming_it(tmp_path):
    folder = tmp_path / ("x" * 120)
    with pytest.raises(LabError, match="too long a path: use a shorter lab folder"):
        RedisBroker(folder).ensure()
    assert not folder.exists()

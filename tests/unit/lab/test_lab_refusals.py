"""What the lab decides before it starts a process: one clear line for a lab of another
shape, an unknown name or a taken port, and nothing started or written."""

from __future__ import annotations

import socket

import pytest

from kafka_dr.lab.lab import Lab, LabError
from kafka_dr.lab.state import LabState
from kafka_dr.lab.topology import lab_clusters


@pytest.fixture
def three_brokers(tmp_path):
    lab = Lab(tmp_path / "lab")
    LabState(lab.state_file).create("4.3.1", False, lab_clusters(1, 40000, brokers=3))
    return lab


def test_up_with_another_broker_count_refuses_in_one_line(three_brokers):
    before = three_brokers.state_file.read_text()
    with pytest.raises(LabError, match=r"has 1 cluster\(s\) of 3 brokers; run `kafka-dr lab down --wipe` before"):
        three_brokers.up(count=1, brokers=1)
    assert three_brokers.state_file.read_text() == before


def test_unknown_name_lists_clusters_and_brokers(three_brokers):
    with pytest.raises(
        LabError, match=r"no lab cluster or broker named 'east-4' .*\(known: east \(east-1, east-2, east-3\)\)"
    ):
        three_brokers.kill("east-4")


def test_rebuild_takes_a_cluster_not_a_broker(three_brokers):
    with pytest.raises(LabError, match="rebuild replaces a whole cluster: name 'east', not its broker 'east-2'"):
        three_brokers.rebuild("east-2")


def test_status_of_stopped_brokers_asks_no_broker(three_brokers):
    (east,) = three_brokers.cluster_status()
    assert [(b.name, b.bootstrap, b.pid, b.running, b.answering) for b in east.brokers] == [
        ("east-1", "127.0.0.1:40000", None, False, False),
        ("east-2", "127.0.0.1:40010", None, False, False),
        ("east-3", "127.0.0.1:40020", None, False, False),
    ]
    assert (east.under_replicated, east.offline, east.answering) == (None, None, False)
    assert [b.name for b in three_brokers.status()] == ["east-1", "east-2", "east-3"]


def test_a_taken_port_is_named_before_anything_starts(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        lab = Lab(tmp_path / "lab")
        # the third broker's controller port (base + 20 + 1) is the taken one
        with pytest.raises(LabError, match=f"port {port} on 127.0.0.1 is already in use; choose another --base-port"):
            lab.up(count=1, base_port=port - 21, brokers=3)
    assert not lab.state_file.exists()

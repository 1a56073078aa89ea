"""lab.json: per-broker pids, the shared cluster id, and a one-broker lab's older file."""

from __future__ import annotations

import json

from kafka_dr.lab.state import LabState
from kafka_dr.lab.topology import lab_clusters


def test_created_state_round_trips_clusters_and_pids(tmp_path):
    state = LabState(tmp_path / "lab.json")
    clusters = lab_clusters(2, 40000, brokers=3)
    state.create("4.3.1", False, clusters)
    assert state.clusters() == clusters
    state.set_pids({"east-2": 4242, "west-1": 7})
    assert (state.pid("east-2"), state.pid("west-1"), state.pid("east-1"), state.pid("nowhere")) == (
        4242,
        7,
        None,
        None,
    )
    state.set_cluster_id("east", "id-e")
    assert state.cluster_ids() == {"east": "id-e"}


def test_a_one_broker_entry_without_broker_count_reads_as_one_broker(tmp_path):
    path = tmp_path / "lab.json"
    entry = {"name": "east", "port": 19092, "controller_port": 19093, "secure": False, "proxy_port": None}
    path.write_text(json.dumps({"clusters": [{**entry, "pid": 123, "cluster_id": "abc"}]}))
    state = LabState(path)
    (east,) = state.clusters()
    assert (east.brokers, [b.name for b in east.nodes], state.pid("east")) == (1, ["east"], 123)


def test_pids_of_a_lab_that_was_never_started_change_nothing(tmp_path):
    state = LabState(tmp_path / "lab" / "lab.json")
    state.set_pids({})
    assert not (tmp_path / "lab").exists()

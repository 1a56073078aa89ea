"""The failback drill on a real lab: active/active traffic on east and west, east
lost, failover to west, traffic goes on on west; then east comes back with its data
(``resync``) or is rebuilt empty (``reseed``) and ``dr_failback`` runs for real through Airflow
(``dag.test()`` with the form's params). Afterwards each cluster holds every record
exactly once, the gate is green, the consumer group is back on east at the right position,
and the normal flows run again without loops.

The drill has a lab of its own (it rebuilds east), beside the session's shared one.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))  # shared lab-test helpers

from test_failover import _consume, _identity
from test_replication import flow_config, run_all

from kafka_checks import produce_varied, read_topic
from kafka_dr.core.config_load import load_config
from kafka_dr.core.provenance import has_origin, origin_cluster, strip_product_headers
from kafka_dr.kafka import clients
from kafka_dr.kafka.state_store import read_state
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.workflows.failback import run_failback
from kafka_dr.workflows.failback_flows import FailbackRun
from kafka_dr.workflows.failover import FailoverRun, run_failover
from kafka_dr.workflows.offset_sync import sync_group_offsets

pytestmark = [pytest.mark.lab, pytest.mark.e2e]


@pytest.fixture(scope="module")
def drill_lab():
    from kafka_dr.lab.lab import Lab

    repo = Path(__file__).resolve().parents[2]
    lab = Lab(
        Path(os.environ.get("KAFKA_DR_TEST_LAB_DIR", repo / ".lab-test")).with_name(
            Path(os.environ.get("KAFKA_DR_TEST_LAB_DIR", repo / ".lab-test")).name + "-drill"
        )
    )
    lab.down(wipe=True)
    atexit.register(lambda: lab.down(wipe=True))
    try:
        lab.up(count=2, base_port=int(os.environ.get("KAFKA_DR_TEST_BASE_PORT", "29092")) + 700)
        yield lab
    finally:
        lab.down(wipe=True)


def logical(records, here: str) -> Counter:
    """Each record as (origin, key, value, own headers, timestamp): what both clusters must
    hold once each, whatever offsets it sits at."""
    out = Counter()
    for r in records:
        origin = origin_cluster(r.headers) or here
        out[(r.partition, origin, r.key, r.value, tuple(strip_product_headers(r.headers)), r.timestamp_ms)] += 1
    return out


def assert_same_records(cfg, topic: str) -> tuple[list, list]:
    east = read_topic(cfg.cluster("east"), topic)
    west = read_topic(cfg.cluster("west"), topic)
    le, lw = logical(east, "east"), logical(west, "west")
    assert max(le.values()) == 1 and max(lw.values()) == 1, "a record is present twice"
    assert le == lw, (
        f"east and west differ: only east {list((le - lw).items())[:3]}, only west {list((lw - le).items())[:3]}"
    )
    for here, records in (("east", east), ("west", west)):
        assert not any(origin_cluster(r.headers) == here for r in records), (
            f"{here} holds a record naming itself as origin"
        )
    return east, west


def outage(lab, spark, tmp_path, topic: str):
    """Traffic on both, replicated; a group reads on east; east gets records that never reach
    west; east is lost; failover; traffic and the group go on on west."""
    path = flow_config(lab, tmp_path, [topic])
    cfg = load_config(path)
    east, west = cfg.cluster("east"), cfg.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic, partitions=2)
    produce_varied(east, topic, "e1", 80, 2)
    produce_varied(west, topic, "w1", 40, 2)
    run_all(path, spark, topic)
    group = f"app-{topic}"
    read_on_east = _consume(east, group, topic, 70)
    assert len(read_on_east) == 70
    sync_group_offsets(cfg, next(f for f in cfg.flows if f.name == "east_to_west"), groups=[group])
    produce_varied(east, topic, "e2", 20, 2)  # never replicated: east fails first
    lab.stop("east")
    summary = run_failover(FailoverRun(cfg, "east", "west", groups=group, dry_run=False))
    assert summary["record_active"]["active_cluster"] == "west"
    produce_varied(west, topic, "w2", 50, 2)  # producers moved to west
    read_on_west = _consume(west, group, topic, 60)
    assert len(read_on_west) == 60
    return path, cfg, group, read_on_east, read_on_west


def failback_through_airflow(cfg, mode: str, group: str) -> dict:
    """``dr_failback`` run for real through Airflow (``dag.test()``: its form's params, its tasks
    and their XComs), as an operator triggers it; returns its summary task's XCom."""
    from kafka_dr.airflow.failback_dag import build_failback_dag

    conf = {
        "recovered_cluster": "east",
        "surviving_cluster": "west",
        "mode": mode,
        "consumer_groups": group,
        "dry_run": False,
    }
    run = build_failback_dag(cfg).test(run_conf=conf)
    assert str(run.state) == "success", f"dr_failback ({mode}) ended {run.state}"
    return run.get_task_instance("summary").xcom_pull(task_ids="summary")


def normal_flows_without_loops(path, cfg, spark, topic: str) -> None:
    """The normal flows run again: new records on both sides cross once, and nothing loops."""
    produce_varied(cfg.cluster("east"), topic, "e3", 10, 2)
    produce_varied(cfg.cluster("west"), topic, "w3", 10, 2)
    assert run_all(path, spark, topic) == {"east_to_west": 10, "west_to_east": 10}
    assert run_all(path, spark, topic) == {"east_to_west": 0, "west_to_east": 0}
    assert_same_records(cfg, topic)


@pytest.mark.drill
def test_failback_resync_after_east_comes_back_with_its_data(drill_lab, spark, airflow_db, tmp_path, topic_name):
    from kafka_dr.core.failback import FailbackRefused

    path, cfg, group, read_on_east, read_on_west = outage(drill_lab, spark, tmp_path, topic_name)
    drill_lab.start("east")

    with pytest.raises(FailbackRefused, match="reseed expects 'east' to be new and empty"):
        run_failback(FailbackRun(cfg, "east", "west", "reseed", groups=group, dry_run=True))
    dry = run_failback(FailbackRun(cfg, "east", "west", "resync", groups=group, dry_run=True))
    would = dry["copy"]["would_copy"]
    # east's 20 late records, plus the west copies behind its progress that the loop policy skips
    assert would["east_to_west"][topic_name] >= 20 and would["west_to_east"][topic_name] == 50, would
    assert read_state(cfg).active_cluster == "west", "a dry run changed the state"

    west_position = committed(cfg.cluster("west"), group, topic_name)
    summary = failback_through_airflow(cfg, "resync", group)
    assert summary["copy"]["arrived_out_of_order_on_survivor"] == 20  # east's records that never reached west
    assert summary["gate"]["differences"] == 0 and summary["gate"]["data_quality"]["checked_partitions"] >= 4
    state = read_state(cfg)
    assert (state.active_cluster, state.failed_clusters) == ("east", ())
    _, west_records = assert_same_records(cfg, topic_name)

    # back on east the group reads every record it had not read on west (east's late records
    # included, which reached west behind its position); it may re-read west records that sit
    # behind those on east, never an east record it had read before the outage
    resumed = [_identity(m, "east") for m in _consume(cfg.cluster("east"), group, topic_name, None)]
    unread = {_identity_of(r, "west") for r in west_records if r.offset >= west_position[r.partition]}
    assert unread and unread - set(resumed) == set(), (
        f"records skipped after the failback: {sorted(unread - set(resumed))[:5]}"
    )
    assert not set(resumed) & {_identity(m, "east") for m in read_on_east}, "east records read twice"
    assert len(resumed) == len(set(resumed))
    rereads = len(set(resumed) - unread)
    assert all(i[0] == "west" for i in set(resumed) - unread), "only west records may be re-read"
    print(f"resync drill: group resumed on east with {len(unread)} unread record(s) and {rereads} re-read(s)")

    normal_flows_without_loops(path, cfg, spark, topic_name)

    # a record on east that west does not have stops the gate, named with where it sits
    from kafka_dr.kafka.writing import produce_all
    from kafka_dr.workflows.failback_gate import GateFailed, gate

    produce_all(
        clients.producer(cfg.cluster("east")), topic_name, [(b"forged", b"x", [("dr.origin", b"west")], None, 1)]
    )
    with pytest.raises(GateFailed, match=rf"{topic_name}\[1\]: east@\[\d+\] not on west"):
        gate(FailbackRun(cfg, "east", "west", "resync"))


def committed(cluster, group: str, topic: str) -> dict[int, int]:
    from confluent_kafka import TopicPartition

    c = clients.consumer(cluster, group)
    try:
        return {tp.partition: tp.offset for tp in c.committed([TopicPartition(topic, p) for p in (0, 1)], timeout=30)}
    finally:
        c.close()


def _identity_of(record, here: str) -> tuple:
    from kafka_checks import identity

    return identity(record, here)


def test_failback_reseed_after_east_is_rebuilt_empty(drill_lab, spark, airflow_db, tmp_path, topic_name):
    path, cfg, group, _, _ = outage(drill_lab, spark, tmp_path, topic_name)
    west_before = read_topic(cfg.cluster("west"), topic_name)
    drill_lab.rebuild("east")

    summary = failback_through_airflow(cfg, "reseed", group)
    assert summary["gate"]["differences"] == 0 and summary["gate"]["data_quality"]["checked_partitions"] >= 2
    east_records, west_records = assert_same_records(cfg, topic_name)
    # provenance as if no outage happened: east's own records are local again, in west's order
    for p in (0, 1):
        e_p = [(r.key, r.value, r.timestamp_ms) for r in east_records if r.partition == p]
        w_p = [(r.key, r.value, r.timestamp_ms) for r in west_before if r.partition == p]
        assert e_p == w_p, f"partition {p}: order on the rebuilt east differs from west"
    assert sum(1 for r in east_records if not has_origin(r.headers)) == 80  # e1; e2 was lost with the old east
    # the group resumes on east exactly where it stopped on west
    committed_west = committed(cfg.cluster("west"), group, topic_name)
    expected = [(r.partition, r.key, r.value) for r in west_before if r.offset >= committed_west[r.partition]]
    resumed = _consume(cfg.cluster("east"), group, topic_name, None)
    got = [(m.partition(), m.key(), m.value()) for m in resumed]
    assert sorted(got, key=repr) == sorted(expected, key=repr) and len(got) == len(expected), (
        "skipped or re-read after reseed"
    )
    state = read_state(cfg)
    assert (state.active_cluster, state.failed_clusters) == ("east", ())

    normal_flows_without_loops(path, cfg, spark, topic_name)

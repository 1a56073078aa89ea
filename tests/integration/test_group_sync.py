"""The continuous group-offset sync on the real lab: the source's commits read from
``__consumer_offsets``, and a running continuous job committing each moved position on the
target within seconds. Every expected target position is computed here from what west holds
(the provenance headers of its records), never taken from the product's own report."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
import yaml
from test_offset_translation import active_member, commit, committed, expected_target, produce, west_view
from test_replication import flow_config

from kafka_dr.core.config_load import load_config
from kafka_dr.kafka import clients
from kafka_dr.kafka.commit_log import CommitLog
from kafka_dr.kafka.group_offsets import last_synced_offsets
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.lab.drill import Job

pytestmark = [pytest.mark.lab]


def _commit_log(cluster) -> CommitLog:
    reader = clients.consumer(cluster, f"tests-commit-log-{uuid.uuid4().hex[:6]}", **{"enable.partition.eof": True})
    return CommitLog(reader, cluster.name)


def test_the_commit_log_returns_every_live_commit_then_only_new_ones(lab, lab_config, topic_name):
    east = lab_config.cluster("east")
    ensure_topic(clients.admin(east), topic_name, partitions=2)
    group = f"app-{uuid.uuid4().hex[:6]}"
    c = clients.consumer(east, group)
    from confluent_kafka import TopicPartition

    from kafka_dr.kafka.progress_store import commit_with_retry

    try:
        commit_with_retry(c, [TopicPartition(topic_name, 0, 5, "first"), TopicPartition(topic_name, 1, 8, "")])
        log = _commit_log(east)
        seen = {k: v for k, v in log.read().items() if k[0] == group}
        assert {k: (v.offset, v.metadata) for k, v in seen.items()} == {
            (group, topic_name, 0): (5, "first"),
            (group, topic_name, 1): (8, ""),
        }
        assert all(v.commit_ts_ms and abs(v.commit_ts_ms / 1000 - time.time()) < 120 for v in seen.values())
        commit_with_retry(c, [TopicPartition(topic_name, 0, 9, "second")])
        deadline, later = time.monotonic() + 30, {}
        while not later and time.monotonic() < deadline:
            later = {k: v for k, v in log.read().items() if k[0] == group}
        assert {k: (v.offset, v.metadata) for k, v in later.items()} == {(group, topic_name, 0): (9, "second")}
    finally:
        c.close()
        log.c.close()


def test_the_commit_log_catches_up_while_groups_commit_without_pause(lab, lab_config, topic_name):
    """A group committing every 20 ms leaves no quiet moment and its partition never reports
    its end: a read still ends, with the commits made before it, long before its timeout."""
    from confluent_kafka import TopicPartition

    from kafka_dr.kafka.progress_store import commit_with_retry

    east = lab_config.cluster("east")
    ensure_topic(clients.admin(east), topic_name, partitions=1)
    busy, quiet = f"busy-{uuid.uuid4().hex[:6]}", f"app-{uuid.uuid4().hex[:6]}"
    log = _commit_log(east)
    log.read()  # caught up with every live commit
    stop = threading.Event()

    def commit_without_pause():
        c = clients.consumer(east, busy)
        n = 0
        while not stop.is_set():
            n += 1
            commit_with_retry(c, [TopicPartition(topic_name, 0, n)])
            time.sleep(0.02)
        c.close()

    committer = threading.Thread(target=commit_without_pause, daemon=True)
    committer.start()
    c = clients.consumer(east, quiet)
    try:
        time.sleep(1)
        commit_with_retry(c, [TopicPartition(topic_name, 0, 42)])
        started = time.monotonic()
        got = log.read(timeout=60)
        took = time.monotonic() - started
        assert (quiet, topic_name, 0) in got and got[(quiet, topic_name, 0)].offset == 42
        assert any(k[0] == busy for k in got)  # the busy group was committing all along
        assert took < 30, f"the read took {took:.1f}s: it ended at its timeout, not at the partitions' ends"
    finally:
        stop.set()
        committer.join(10)
        c.close()
        log.c.close()


def _wait_committed(west, group, topic, want: dict[int, int | None], timeout: float) -> tuple[dict, float]:
    started = time.monotonic()
    got = {}
    while time.monotonic() - started < timeout:
        got = committed(west, group, topic, sorted(want))
        if got == want:
            break
        time.sleep(0.5)
    return got, time.monotonic() - started


def test_a_continuous_job_syncs_moved_positions_within_seconds_and_spares_groups_active_on_the_target(
    lab, lab_config, tmp_path, topic_name
):
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic_name, partitions=2)
    config = flow_config(lab, tmp_path, [topic_name])
    doc = yaml.safe_load(config.read_text())
    doc["consumer_groups"] = {"sync_interval_seconds": 1}
    config.write_text(yaml.safe_dump(doc, sort_keys=False))
    cfg = load_config(config)
    flow = next(f for f in cfg.flows if f.name == "east_to_west")
    produce(east, topic_name, "e1", 60, 2)
    app, busy = f"app-{uuid.uuid4().hex[:6]}", f"busy-{uuid.uuid4().hex[:6]}"
    member = active_member(west, busy, topic_name)
    job = Job(config, tmp_path / "job.log", flow="east_to_west", mode="continuous")
    try:
        # positions committed before the job started are found by its first read
        commit(east, app, {(topic_name, 0): 7, (topic_name, 1): 12})
        commit(east, busy, {(topic_name, 0): 5})
        view_wait = time.monotonic() + 120
        while time.monotonic() < view_wait and sum(len(v) for v in west_view(west, topic_name).values()) < 60:
            member.poll(0.2)
            time.sleep(0.5)
        view = west_view(west, topic_name)
        want = {0: expected_target(view, 0, 7)[0], 1: expected_target(view, 1, 12)[0]}
        assert None not in want.values(), f"east's records never reached west: {view}"
        got, _ = _wait_committed(west, app, topic_name, want, 60)
        assert got == want, (got, want, (tmp_path / "job.log").read_text()[-3000:])

        # a position moved while the job runs lands within a few intervals
        produce(east, topic_name, "e2", 20, 2)
        commit(east, app, {(topic_name, 0): 33})
        time.sleep(0.5)
        member.poll(0.1)
        deadline = time.monotonic() + 60
        target = None
        while target is None and time.monotonic() < deadline:
            target = expected_target(west_view(west, topic_name), 0, 33)[0]
            time.sleep(0.5)
        got, took = _wait_committed(west, app, topic_name, {0: target, 1: want[1]}, 30)
        assert got == {0: target, 1: want[1]}, (got, (tmp_path / "job.log").read_text()[-3000:])
        print(f"moved position landed on west after {took:.1f}s")
        assert took < 15, f"the moved position took {took:.1f}s to land with a 1 s interval"

        member.poll(0.1)
        assert committed(west, busy, topic_name, [0]) == {0: None}, "a group with an active member was touched"
        assert last_synced_offsets(cfg, flow, app) == {(topic_name, 0): 33, (topic_name, 1): 12}
    finally:
        member.close()
        assert job.stop() == 0, (tmp_path / "job.log").read_text()[-3000:]

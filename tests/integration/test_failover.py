"""dr_failover on the real lab: a consumer group reads part of a topic on east, east stops,
the DAG runs, and the same group on west resumes at exactly the next unread record (issue #5).
"""

from __future__ import annotations

import time

import pytest

from kafka_checks import produce_varied
from kafka_dr.core.config_load import load_config
from kafka_dr.core.provenance import ORIGIN, ORIGIN_OFFSET
from kafka_dr.kafka import clients
from kafka_dr.kafka.offset_translation import sync_group_offsets
from kafka_dr.kafka.state_store import read_state
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.spark.job import JobOptions, run_flow
from test_dag_runs import _task_states
from test_replication import flow_config

pytestmark = [pytest.mark.lab, pytest.mark.airflow]


def isolated_config(lab, tmp_path, topic_name: str):
    """The lab config narrowed to the test's topic, with an internal prefix of its own: the
    failover writes the product state ("east is failed") under that prefix, so the DAGs of
    other tests, which use the lab's prefix, keep replicating."""
    import yaml

    path = flow_config(lab, tmp_path, [topic_name])
    doc = yaml.safe_load(path.read_text())
    doc["internal_prefix"] = "_kdr_" + topic_name.replace(".", "_")[-40:]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _consume(cluster, group: str, topic: str, n: int | None, timeout: float = 60.0) -> list:
    """Consume with ``group`` (subscribe: resumes at its committed offsets); commit what was read."""
    c = clients.consumer(cluster, group, **{"auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + timeout
    idle = 0
    try:
        while time.monotonic() < deadline and (n is None or len(got) < n):
            msgs = c.consume(num_messages=1 if n else 500, timeout=1.0)
            if not msgs:
                idle += 1
                if n is None and idle >= 5 and got:
                    break
                continue
            idle = 0
            for m in msgs:
                if m.error() is None:
                    got.append(m)
        c.commit(asynchronous=False)
    finally:
        c.close()
    return got


def _identity(msg, here: str) -> tuple:
    h = dict(msg.headers() or [])
    if ORIGIN in h:
        return (h[ORIGIN].decode(), msg.partition(), int(h[ORIGIN_OFFSET]))
    return (here, msg.partition(), msg.offset())


def test_failover_moves_the_group_to_the_next_unread_record(lab, lab_config, spark, airflow_db, tmp_path, topic_name):
    from confluent_kafka.admin import AdminClient

    from kafka_dr.airflow.failover_dag import build_failover_dag

    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic_name, partitions=2)
    east_sent = produce_varied(east, topic_name, "east", 120, 2)
    produce_varied(west, topic_name, "west", 30, 2)  # local west records, interleaved with the copies
    path = isolated_config(lab, tmp_path, topic_name)
    cfg = load_config(path)
    e2w = next(f for f in cfg.flows if f.name == "east_to_west")
    group = f"app-{topic_name}"

    read_on_east = _consume(east, group, topic_name, 50)
    assert len(read_on_east) == 50
    run_flow(JobOptions(config=str(path), flow="east_to_west", mode="incremental"), spark=spark)
    synced = sync_group_offsets(cfg, e2w, groups=[group])
    assert synced and all(r["status"] == "exact" for r in synced), synced
    # forget what the sync committed on west: the failover must do it from the recorded positions
    admin = AdminClient(clients.client_config(west))
    admin.delete_consumer_groups([group], request_timeout=30)[group].result(30)

    lab.stop("east")
    try:
        # a dry run changes nothing
        dry = build_failover_dag(cfg).test(run_conf={"failed_cluster": "east", "surviving_cluster": "west", "dry_run": True})
        assert str(dry.state) == "success", _task_states(dry)
        assert read_state(cfg, skip=("east",)).active_cluster != "west"

        run = build_failover_dag(cfg).test(run_conf={"failed_cluster": "east", "surviving_cluster": "west", "dry_run": False,
                                                    "consumer_groups": group})
        assert str(run.state) == "success", _task_states(run)
        from kafka_dr.kafka.failover import rpo_report

        rpo = rpo_report(cfg, "east", "west")["flows"]["east_to_west"]
        assert rpo["missing_records_at_least"] == 0 and {e["topic"] for e in rpo["partitions"]} >= {topic_name}
        state = read_state(cfg, skip=("east",))
        assert (state.active_cluster, state.schema_primary, state.failed_clusters) == ("west", "west", ("east",))

        # the group resumes on west: every east record it had not read, none it had, in order
        resumed = _consume(west, group, topic_name, None)
        seen_before = {("east", m.partition(), m.offset()) for m in read_on_east}
        east_now = [i for i in (_identity(m, "west") for m in resumed) if i[0] == "east"]
        all_east = {("east", s.partition, s.offset) for s in east_sent}
        assert set(east_now) == all_east - seen_before, "skipped or re-read records after failover"
        assert len(east_now) == len(set(east_now)), "a record was read twice"
        for p in (0, 1):
            first_unread = min((o for (_, pp, o) in all_east - seen_before if pp == p), default=None)
            first_resumed = next((o for (_, pp, o) in east_now if pp == p), None)
            assert first_resumed == first_unread, f"partition {p}: resumed at origin offset {first_resumed}, next unread is {first_unread}"
    finally:
        lab.start("east")


def test_cli_failover_refuses_a_live_cluster_and_dry_runs_with_force(lab, tmp_path, topic_name):
    """The CLI twin runs the same steps: east answers, so it refuses unless forced; a forced dry
    run reports and changes nothing."""
    import subprocess
    import sys
    from pathlib import Path

    path = isolated_config(lab, tmp_path, topic_name)
    cli = str(Path(sys.executable).with_name("kafka-dr"))
    refused = subprocess.run([cli, "failover", "--from", "east", "--to", "west", "--dry-run", "--config", str(path)],
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode == 1 and "cluster 'east'" in refused.stderr and "still answers" in refused.stderr
    before = read_state(load_config(path))
    forced = subprocess.run([cli, "failover", "--from", "east", "--to", "west", "--dry-run", "--force", "--config", str(path)],
                            capture_output=True, text=True, timeout=300)
    assert forced.returncode == 0, forced.stderr[-2000:]
    assert "DRY RUN: nothing changed" in forced.stdout and "active cluster: west" in forced.stdout
    assert read_state(load_config(path)) == before

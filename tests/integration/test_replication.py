"""The replication engine against the real lab, through Spark.

Every check is exact (tests/kafka_checks.py): each cluster holds every record produced
anywhere exactly once, nothing else, bytes/headers/timestamps equal, per-partition order kept.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import yaml

from kafka_checks import check_replica, produce_varied, read_topic
from kafka_dr.core.config_load import load_config
from kafka_dr.core.provenance import Provenance
from kafka_dr.kafka import clients
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.kafka.writing import produce_all
from kafka_dr.spark.job import JobOptions, run_flow

pytestmark = [pytest.mark.lab]


def flow_config(lab, tmp_path: Path, allow: list[str], **flow_keys) -> Path:
    """The lab's config with every flow narrowed to ``allow`` (tests must not copy each
    other's topics) and ``flow_keys`` applied to every flow."""
    doc = yaml.safe_load(lab.config_file.read_text())
    for f in doc["flows"]:
        f["topics"] = {"allow": allow}
        f.update(flow_keys)
    path = tmp_path / "kafka-dr.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def own_internal_prefix(config: Path, topic: str) -> str:
    """Give the config at ``config`` internal names of its own, from ``topic``, and return the
    prefix: for a test that writes product state, or deletes a progress group as a whole, which
    the lab's prefix shares with every other test of the worker (docs/testing.md)."""
    doc = yaml.safe_load(config.read_text())
    doc["internal_prefix"] = prefix = "_kdr_" + topic.replace(".", "_")[-40:]
    config.write_text(yaml.safe_dump(doc, sort_keys=False))
    return prefix


def east_to_west_one_partition(lab, tmp_path: Path, topic: str):
    """A config narrowed to ``topic``, that topic with one partition on east and west, and the
    east -> west flow: (config path, config, flow), for tests that drive a copier directly."""
    config = flow_config(lab, tmp_path, [topic])
    cfg = load_config(config)
    for name in ("east", "west"):
        ensure_topic(clients.admin(cfg.cluster(name)), topic, partitions=1)
    return config, cfg, next(f for f in cfg.flows if f.source == "east" and f.target == "west")


def run_all(config: Path, spark, topic: str, mode: str = "incremental") -> dict[str, int]:
    """Run every flow once; records each wrote into ``topic`` (heartbeats also cross the flows)."""
    cfg = load_config(config)
    out = {}
    for f in cfg.flows:
        summary = run_flow(JobOptions(config=str(config), flow=f.name, mode=mode), spark=spark)
        out[f.name] = sum(n for t, n in summary.written_by_topic.items() if t.endswith(topic))
    return out


def produce_aborted(cluster, topic: str) -> None:
    """A transaction that is aborted: its records must never be copied."""
    from confluent_kafka import Producer

    p = Producer(clients.client_config(cluster, **{"transactional.id": f"test-abort-{topic}"}))
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, key=b"aborted", value=f"aborted-{i}".encode(), partition=i % 2)
    p.flush(30)
    p.abort_transaction(30)


def test_active_active_provenance(lab, lab_config, spark, tmp_path, topic_name):
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic_name, partitions=3)
    sent = produce_varied(east, topic_name, "east", 300, 3)
    produce_aborted(east, topic_name)
    sent += produce_varied(west, topic_name, "west", 200, 3)
    produce_aborted(west, topic_name)
    config = flow_config(lab, tmp_path, [topic_name])

    written = run_all(config, spark, topic_name)
    assert written == {"east_to_west": 300, "west_to_east": 200}

    for c in (east, west):
        per_origin = check_replica(c.name, read_topic(c, topic_name), sent, source_topic=topic_name)
        assert per_origin == {"east": 300, "west": 200}

    # running the flows again copies nothing: no record travels back, none twice
    assert run_all(config, spark, topic_name) == {"east_to_west": 0, "west_to_east": 0}
    for c in (east, west):
        check_replica(c.name, read_topic(c, topic_name), sent)

    # observability: each batch's per-partition figures are on the target's metrics topic
    import json

    rows = [json.loads(r.value) for r in read_topic(west, lab_config.names.metrics_topic) if r.key == b"east_to_west"]
    mine = [r for r in rows if r["topic"] == topic_name]
    assert sum(r["written"] for r in mine) == 300 and {r["partition"] for r in mine} == {0, 1, 2}
    assert all(r["latency_p99_ms"] is not None for r in mine if r["written"])


def test_prefix_policy_remote_topics_never_come_back(lab, lab_config, spark, tmp_path, topic_name):
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic_name, partitions=2)
    sent_e = produce_varied(east, topic_name, "east", 120, 2)
    sent_w = produce_varied(west, topic_name, "west", 80, 2)
    # the remote topics match the allow pattern too: only the cycle rule keeps them home
    config = flow_config(lab, tmp_path, [rf"(east\.|west\.)*{topic_name}"], loop_policy="prefix")

    for _ in range(2):
        run_all(config, spark, topic_name)
    check_replica("west", read_topic(west, f"east.{topic_name}"), sent_e, source_topic=topic_name)
    check_replica("east", read_topic(east, f"west.{topic_name}"), sent_w, source_topic=topic_name)
    # the local topics are untouched, and nothing went round: no west.east.T / east.west.T
    check_replica("east", read_topic(east, topic_name), sent_e)
    check_replica("west", read_topic(west, topic_name), sent_w)
    for c in (east, west):
        names = set(clients.admin(c).list_topics(timeout=10).topics)
        assert (
            not {
                f"west.east.{topic_name}",
                f"east.west.{topic_name}",
                f"east.east.{topic_name}",
                f"west.west.{topic_name}",
            }
            & names
        )


def test_copy_flags_over_three_clusters(lab3, spark, tmp_path, topic_name):
    cfg3 = load_config(lab3.config_file)
    assert cfg3.distribution is not None and len(cfg3.clusters) == 3
    sent = []
    for c in cfg3.clusters.values():
        ensure_topic(clients.admin(c), topic_name, partitions=2)
    for name, c in cfg3.clusters.items():
        sent += produce_varied(c, topic_name, name, 60, 2)
    config = flow_config(lab3, tmp_path, [topic_name])
    # a record may need two hops (north -> east -> west): run until a round copies nothing
    for _ in range(4):
        if sum(run_all(config, spark, topic_name).values()) == 0:
            break
    else:
        pytest.fail("copy_flags flows kept copying: a loop")
    for name, c in cfg3.clusters.items():
        assert check_replica(name, read_topic(c, topic_name), sent) == {"east": 60, "west": 60, "north": 60}


def test_new_topic_replicated_without_restart(lab, lab_config, spark, tmp_path, topic_name):
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    config = flow_config(lab, tmp_path, [rf"{topic_name}\..*"], topic_refresh_seconds=2)
    stop_file = tmp_path / "stop"
    result = {}

    def run():
        result["summary"] = run_flow(
            JobOptions(
                config=str(config),
                flow="east_to_west",
                mode="continuous",
                stop_file=str(stop_file),
                max_duration_seconds=240,
            ),
            spark=spark,
        )

    job = threading.Thread(target=run, daemon=True)
    job.start()
    try:
        time.sleep(8)  # the query is up and polling; the topic does not exist yet
        new_topic = f"{topic_name}.late"
        ensure_topic(clients.admin(east), new_topic, partitions=2)
        produce_all(clients.producer(east), new_topic, [(b"k%d" % i, b"v%d" % i, [], None, i % 2) for i in range(50)])
        deadline = time.monotonic() + 90
        got = []
        while time.monotonic() < deadline:
            got = read_topic(west, new_topic)
            if len(got) >= 50:
                break
            time.sleep(1)
        assert job.is_alive(), "the job stopped; the topic must be picked up by the running job"
        assert sorted(r.value for r in got) == sorted(b"v%d" % i for i in range(50))
    finally:
        stop_file.write_text("stop")
        job.join(120)
    assert result["summary"].restarts == 0 and result["summary"].stopped_by.startswith("stop file")


def test_a_quiet_source_keeps_its_continuous_flow_running_batches(lab, lab_config, spark, tmp_path, topic_name):
    """Streaming tasks keep coming when the source has nothing new: a copy that is behind when
    the writes stop must keep a task attached until it has caught up (the target-restart drill
    once left a flow stalled for good that way), and an idle flow must not look stuck to the
    stall watchdog. Batches of 2 s over 20 s: the only write's, then at least two quiet ones
    (a loaded 2-core host has taken 7 s to finish the query's first)."""
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    config = flow_config(lab, tmp_path, [topic_name])
    ensure_topic(clients.admin(east), topic_name, partitions=2)
    produce_all(clients.producer(east), topic_name, [(b"k%d" % i, b"v%d" % i, [], None, i % 2) for i in range(20)])
    summary = run_flow(
        JobOptions(
            config=str(config),
            flow="east_to_west",
            mode="continuous",
            task_seconds=2,
            trigger_seconds=0.5,
            max_duration_seconds=20,
        ),
        spark=spark,
    )
    assert summary.restarts == 0 and summary.written_by_topic.get(topic_name) == 20
    assert summary.batches >= 3, summary  # the write's batch and at least two with nothing new
    assert sorted(r.value for r in read_topic(west, topic_name)) == sorted(b"v%d" % i for i in range(20))


def test_compacted_topic_with_offset_gaps_and_topic_configs(lab, lab_config, spark, tmp_path, topic_name):
    """A compacted source (offsets with gaps, tombstones) copies exactly what a reader sees;
    the created target topic carries the source's replicable configs, not the excluded ones."""
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    ensure_topic(
        clients.admin(east),
        topic_name,
        partitions=1,
        config={
            "cleanup.policy": "compact",
            "segment.ms": "100",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "3600000",
            "retention.ms": "86400000",
            "min.insync.replicas": "1",
        },
    )
    rows = [(b"k%d" % (i % 10), b"v%d" % i, [], None, 0) for i in range(200)] + [(b"k3", None, [], None, 0)]
    produce_all(clients.producer(east), topic_name, rows)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait for the cleaner to compact the rolled segments
        produce_all(clients.producer(east), topic_name, [(b"roll", b"r", [], None, 0)])  # roll the active segment
        before = read_topic(east, topic_name)
        if len(before) < 100:
            break
        time.sleep(2)
    offsets = [r.offset for r in before]
    assert offsets != list(range(offsets[0], offsets[0] + len(offsets))), "no gaps: compaction did not run"

    config = flow_config(lab, tmp_path, [topic_name])
    run_flow(JobOptions(config=str(config), flow="east_to_west", mode="incremental"), spark=spark)
    source = read_topic(east, topic_name)
    copied = read_topic(west, topic_name)

    # The target is compacted too (its configs came from the source), so superseded values may
    # be gone there as well: what must agree is the compacted view, the latest value per key,
    # and what was copied must be the source's records, in source order.
    def latest(records):
        return {r.key: r.value for r in records}

    assert latest(copied) == latest(source)
    copied_ids = [Provenance.from_headers(r.headers).offset for r in copied]
    assert copied_ids == sorted(copied_ids)
    by_offset = {r.offset: r for r in source}
    for r, o in zip(copied, copied_ids):
        if o in by_offset:
            assert (r.key, r.value, r.timestamp_ms) == (by_offset[o].key, by_offset[o].value, by_offset[o].timestamp_ms)
    assert set(copied_ids) <= set(range(201 + 60)) and set(copied_ids).isdisjoint(set(range(0, 100))), (
        "copied records the source had compacted away"
    )

    from confluent_kafka.admin import ConfigResource

    res = ConfigResource(ConfigResource.Type.TOPIC, topic_name)
    admin = clients.admin(west)  # kept referenced: a collected client cancels its futures
    conf = admin.describe_configs([res])[res].result(30)
    assert conf["cleanup.policy"].value == "compact" and conf["retention.ms"].value == "86400000"
    from confluent_kafka.admin import ConfigSource

    # set on the source topic, but excluded: the target's value is not a topic-level one
    assert conf["min.insync.replicas"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value


def test_records_deleted_before_the_first_run_are_reported_once(lab, lab_config, spark, tmp_path, topic_name, caplog):
    """A source whose log start is past 0 when the flow first runs (retention, DeleteRecords):
    the records below it were never replicated. The run copies the rest and succeeds, and says
    so: a warning naming the offsets, and the metrics row counts them in lost_to_retention. A
    second run has progress and says nothing more."""
    import json
    import logging

    from confluent_kafka import TopicPartition

    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    ensure_topic(clients.admin(east), topic_name, partitions=1)
    produce_all(clients.producer(east), topic_name, [(b"k", b"v%d" % i, [], None, 0) for i in range(10)])
    admin = clients.admin(east)  # referenced until its futures complete
    for fut in admin.delete_records([TopicPartition(topic_name, 0, 4)], operation_timeout=30).values():
        fut.result()
    config = flow_config(lab, tmp_path, [topic_name], mode="incremental")
    job = JobOptions(config=str(config), flow="east_to_west", mode="incremental")

    with caplog.at_level(logging.WARNING, logger="kafka_dr.replicate"):
        first = run_flow(job, spark=spark)
    line = (
        f"flow east_to_west: 4 record(s) of east/{topic_name}[0] (offsets 0..3) were deleted on the source before they "
        f"were replicated (counted in lost_to_retention)"
    )
    assert first.stopped_by == "completed" and first.restarts == 0
    assert (first.written_by_topic[topic_name], first.lost_to_retention) == (6, 4)
    assert line in first.warnings and line in caplog.messages
    assert [r.value for r in read_topic(west, topic_name)] == [b"v%d" % i for i in range(4, 10)]
    mtopic = lab_config.names.metrics_topic
    rows = [json.loads(r.value) for r in read_topic(west, mtopic) if r.key == b"east_to_west"]
    mine = [
        (r["start"], r["written"], r["lost_to_retention"], r["lost_first"], r["lost_last"])
        for r in rows
        if r["topic"] == topic_name
    ]
    assert mine == [(4, 6, 4, 0, 3)]

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kafka_dr.replicate"):
        second = run_flow(job, spark=spark)
    # nothing new unless heartbeats arrived meanwhile (then it copies only those)
    assert second.stopped_by in ("completed", "nothing new") and second.written_by_topic.get(topic_name, 0) == 0
    said = [*second.warnings, *(r.getMessage() for r in caplog.records if r.name == "kafka_dr.replicate")]
    assert second.lost_to_retention == 0 and not [m for m in said if topic_name in m]

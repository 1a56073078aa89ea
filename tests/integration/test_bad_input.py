"""Bad input to the replication job: each gives one clear error naming what and where, and
nothing is half-applied."""

from __future__ import annotations

import pytest
import yaml
from test_replication import flow_config, own_internal_prefix

from kafka_checks import check_replica, produce_varied, read_topic, read_topic_settled
from kafka_dr.core.config_load import load_config
from kafka_dr.core.naming import InternalNames
from kafka_dr.core.progress import ProgressLost
from kafka_dr.core.provenance import origin_cluster
from kafka_dr.kafka import clients
from kafka_dr.kafka.copier import RangeCopier
from kafka_dr.kafka.copy_errors import RecordRejected
from kafka_dr.kafka.copy_spec import RangeSpec
from kafka_dr.kafka.copy_tuning import CopyTuning
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.kafka.writing import produce_all
from kafka_dr.spark.job import JobOptions, run_flow

pytestmark = [pytest.mark.lab]

BIG = 1_500_000  # above the target's default max.message.bytes (1 MiB)


def _big_source_topic(cluster, topic: str) -> None:
    ensure_topic(clients.admin(cluster), topic, partitions=1, config={"max.message.bytes": "4000000"})
    p = clients.producer(cluster, **{"message.max.bytes": 5_000_000, "compression.type": "none"})
    rows = [
        (b"a", b"small-0", [], None, 0),
        (b"b", b"small-1", [], None, 0),
        (b"big", b"x" * BIG, [("h", b"1")], None, 0),
        (b"c", b"small-3", [], None, 0),
    ]
    produce_all(p, topic, rows)


def test_every_restart_is_alerted(lab, spark, tmp_path, topic_name):
    """While the job retries an unreachable source with backoff, each restart reaches the
    alert webhook (the final failure is the DAG task's failure callback's to send) when
    ``restart_alert_after_seconds`` is 0."""
    from receivers import WebhookReceiver

    hook = WebhookReceiver()
    try:
        doc = yaml.safe_load(lab.config_file.read_text())
        doc["clusters"]["east"]["bootstrap_servers"] = "127.0.0.1:1"
        doc["clusters"]["east"].pop("cluster_id", None)
        doc["alerts"] = {"webhook": {"url": hook.url}}
        doc["thresholds"] = {**doc.get("thresholds", {}), "restart_alert_after_seconds": 0}
        for f in doc["flows"]:
            f["topics"] = {"allow": [topic_name]}
        path = tmp_path / "dead-target.yaml"
        path.write_text(yaml.safe_dump(doc))
        with pytest.raises(RuntimeError, match="giving up after 3 failed run") as info:
            run_flow(JobOptions(config=str(path), flow="east_to_west", mode="incremental", max_restarts=2), spark=spark)
        assert "source cluster 'east' (127.0.0.1:1) did not answer" in str(info.value)
        assert [(a["event"], a["restart"], a["max_restarts"]) for a in hook.received] == [
            ("restart", 1, 2),
            ("restart", 2, 2),
        ]
        assert "source cluster 'east' (127.0.0.1:1) did not answer" in hook.received[0]["error"]
        assert hook.received[1]["backoff_seconds"] == 4.0
    finally:
        hook.close()


def test_record_too_large_stops_the_flow_naming_the_record(lab, lab_config, spark, tmp_path, topic_name):
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    _big_source_topic(east, topic_name)
    ensure_topic(
        clients.admin(west), topic_name, partitions=1
    )  # the default limit: the job would give it the source's 4 MB
    config = flow_config(lab, tmp_path, [topic_name])
    with pytest.raises(RuntimeError) as info:
        run_flow(JobOptions(config=str(config), flow="east_to_west", mode="incremental", max_restarts=0), spark=spark)
    assert f"east/{topic_name}[0]@2" in str(info.value), str(info.value)
    # the chunk holding the refused record was rolled back whole: a read_committed reader sees nothing
    assert read_topic(west, topic_name) == []


def test_broker_side_refusal_rolls_back_and_names_the_record(lab, lab_config, topic_name):
    """The target broker (not librdkafka) refuses the record: the error arrives in a delivery
    report, after other records of the chunk were sent; the whole chunk must be rolled back."""
    cfg = lab_config
    east, west = cfg.cluster("east"), cfg.cluster("west")
    _big_source_topic(east, topic_name)
    ensure_topic(clients.admin(west), topic_name, partitions=1)
    overrides = {"message.max.bytes": 5_000_000, "compression.type": "none"}
    copier = RangeCopier(cfg, cfg.flows[0], tuning=CopyTuning(producer_overrides=overrides))
    try:
        with pytest.raises(RecordRejected, match=rf"east/{topic_name}\[0\]@2 .*rolled back"):
            copier.copy(RangeSpec(topic_name, 0, 0, 4, topic_name))
    finally:
        copier.close()
    assert read_topic(west, topic_name) == []


def test_dead_letter_topic_sets_refused_records_aside(lab, spark, tmp_path, topic_name):
    doc_path = flow_config(lab, tmp_path, [topic_name], dead_letter_topic=f"{topic_name}.dlq")
    cfg = load_config(doc_path)
    east, west = cfg.cluster("east"), cfg.cluster("west")
    _big_source_topic(east, topic_name)
    ensure_topic(
        clients.admin(west), topic_name, partitions=1
    )  # the default limit: the job would give it the source's 4 MB
    run_flow(JobOptions(config=str(doc_path), flow="east_to_west", mode="incremental", max_restarts=0), spark=spark)
    copied = read_topic(west, topic_name)
    assert [r.value for r in copied] == [b"small-0", b"small-1", b"small-3"]
    dlq = read_topic(west, f"{topic_name}.dlq")
    assert len(dlq) == 1
    h = dict(dlq[0].headers)
    assert dlq[0].key == b"big" and dlq[0].value is None
    assert h["dr.dlq.source"] == f"east/{topic_name}[0]@2".encode()
    assert h["dr.dlq.value.bytes"] == str(BIG).encode() and b"too large" in h["dr.dlq.reason"].lower()
    assert h["h"] == b"1" and origin_cluster(dlq[0].headers) == "east"


def test_target_with_fewer_partitions_is_refused(lab, lab_config, spark, tmp_path, topic_name):
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    ensure_topic(clients.admin(east), topic_name, partitions=4)
    ensure_topic(clients.admin(west), topic_name, partitions=2)
    produce_all(clients.producer(east), topic_name, [(b"k", b"v", [], None, 3)])
    config = flow_config(lab, tmp_path, [topic_name])
    with pytest.raises(RuntimeError) as info:
        run_flow(JobOptions(config=str(config), flow="east_to_west", mode="incremental", max_restarts=0), spark=spark)
    assert f"west/{topic_name} has 2 partitions but east/{topic_name} has 4" in str(info.value)
    assert read_topic(west, topic_name) == []


def test_deleted_progress_is_refused_unless_reset(lab, lab_config, spark, tmp_path, topic_name):
    """The flow's progress group is deleted on the target after a run: the next run must not
    start again from the log start (duplicates). It refuses, naming the partitions and the
    last copy found, copies nothing; with --reset-progress it resumes after that copy."""
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    ensure_topic(clients.admin(east), topic_name, partitions=2)
    first = produce_varied(east, topic_name, "first", 40, 2)
    config = flow_config(lab, tmp_path, [topic_name])
    # a progress group of its own: deleting the lab's would make every later test's flow
    # (the heartbeat topic's copies are on west) refuse to start, as designed
    prefix = own_internal_prefix(config, topic_name)
    opts = dict(config=str(config), flow="east_to_west", mode="incremental", max_restarts=2)
    run_flow(JobOptions(**opts), spark=spark)
    admin = clients.admin(west)
    for fut in admin.delete_consumer_groups(
        [InternalNames(prefix).progress_group("east_to_west")], request_timeout=30
    ).values():
        fut.result()
    second = produce_varied(east, topic_name, "second", 10, 2)

    with pytest.raises(RuntimeError) as info:
        run_flow(JobOptions(**opts), spark=spark)
    msg = str(info.value)
    assert "stopped:" in msg and "no committed progress on west for" in msg, msg
    assert f"{topic_name}[0] (last copy on west/{topic_name}[0] is of offset 19)" in msg, msg
    assert "--reset-progress" in msg
    check_replica("west", read_topic(west, topic_name), first, source_topic=topic_name)  # nothing half-applied

    run_flow(JobOptions(**opts, allow_reset=True), spark=spark)
    check_replica("west", read_topic(west, topic_name), first + second, source_topic=topic_name)


def test_target_topic_deleted_mid_run_is_named_and_rolled_back(lab, lab_config, topic_name):
    """The target topic disappears between two copies (an operator deletes it): the next copy
    stops naming the record and the missing topic (or, once the topic's offsets are gone too,
    refuses to guess where to resume); it neither recreates the topic behind the operator's
    back nor restarts from the beginning."""
    cfg = lab_config
    east, west = cfg.cluster("east"), cfg.cluster("west")
    ensure_topic(clients.admin(east), topic_name, partitions=1)
    produce_all(clients.producer(east), topic_name, [(b"k", b"v%d" % i, [], None, 0) for i in range(10)])
    ensure_topic(clients.admin(west), topic_name, partitions=1)
    overrides = {"topic.metadata.propagation.max.ms": 3000, "delivery.timeout.ms": 20000}
    copier = RangeCopier(cfg, cfg.flows[0], tuning=CopyTuning(producer_overrides=overrides))
    try:
        copier.copy(RangeSpec(topic_name, 0, 0, 5, topic_name))
        admin = clients.admin(west)  # referenced until its futures complete
        for fut in admin.delete_topics([topic_name], operation_timeout=30).values():
            fut.result()
        with pytest.raises((ProgressLost, RecordRejected)) as info:
            copier.copy(RangeSpec(topic_name, 0, 5, 10, topic_name))
    finally:
        copier.close()
    msg = str(info.value)
    if isinstance(
        info.value, RecordRejected
    ):  # the group still has the topic's offsets: the chunk is refused, rolled back
        assert f"east/{topic_name}[0]@5" in msg and f"west/{topic_name} does not exist (deleted mid-run?)" in msg, msg
    else:  # the topic's offsets went with it: the copier refuses to guess where to resume
        assert f"flow east_to_west: east/{topic_name}[0] -> west/{topic_name}[0]: no committed progress" in msg, msg
    assert topic_name not in clients.admin(west).list_topics(timeout=10).topics


def test_records_deleted_on_the_source_before_they_were_copied_are_reported(lab, lab_config, topic_name):
    """Retention (here: DeleteRecords) removes records the flow has not copied yet. The copier
    must not read the log start on every range (a round trip per micro-batch), so it learns of
    it from the source's "offset out of range": it then copies from the new log start,
    reports how many records were lost, and copies nothing twice."""
    from confluent_kafka import TopicPartition

    cfg = lab_config
    east, west = cfg.cluster("east"), cfg.cluster("west")
    ensure_topic(clients.admin(east), topic_name, partitions=1)
    ensure_topic(clients.admin(west), topic_name, partitions=1)
    produce_all(clients.producer(east), topic_name, [(b"k", b"v%d" % i, [], None, 0) for i in range(100)])
    copier = RangeCopier(cfg, cfg.flows[0])
    try:
        first = copier.copy(RangeSpec(topic_name, 0, 0, 40, topic_name))
        admin = clients.admin(east)  # referenced until its futures complete
        for fut in admin.delete_records([TopicPartition(topic_name, 0, 70)], operation_timeout=30).values():
            fut.result()
        second = copier.copy(RangeSpec(topic_name, 0, 40, 100, topic_name))
    finally:
        copier.close()
    assert (first.written, first.lost_to_retention) == (40, 0)
    assert (second.start, second.written, second.lost_to_retention) == (70, 30, 30)
    copied = read_topic_settled(west, topic_name, 70)  # the commit's markers reach the partition a moment later
    assert [r.value for r in copied] == [b"v%d" % i for i in [*range(40), *range(70, 100)]]

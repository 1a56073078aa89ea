"""The lag the exporter serves, read from the lab's clusters while a replication job is dead."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from test_replication import flow_config, own_internal_prefix

from kafka_dr.core.config_load import load_config
from kafka_dr.kafka import clients
from kafka_dr.kafka.lag_reads import LagReader
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.kafka.writing import produce_all

pytestmark = pytest.mark.lab

RECORDS = 20


def test_a_transaction_a_killed_job_left_open_does_not_hold_up_the_lag(lab, tmp_path, topic_name):
    """A job killed after sending its progress to a transaction and before committing it
    leaves that progress pending until the transaction times out (a minute by default). The
    lag read answers at once from the last committed progress, the records surely copied."""
    config = flow_config(lab, tmp_path, [topic_name])
    own_internal_prefix(config, topic_name)  # a pending commit in a progress group of its own
    cfg = load_config(config)
    flow = next(f for f in cfg.flows if (f.source, f.target) == ("east", "west"))
    east, west = cfg.cluster("east"), cfg.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic_name, partitions=1)
    first_ms = int(time.time() * 1000) - RECORDS * 1000  # recent: older records would meet retention
    rows = [(None, f"r{i}".encode(), None, first_ms + i * 1000, 0) for i in range(RECORDS)]
    produce_all(clients.producer(east), topic_name, rows, timeout=30)

    # what the job did: progress 5 committed, then progress 15 sent in a transaction it never ends
    job = Producer(clients.client_config(west, None, **{"transactional.id": f"{topic_name}.job"}))
    job.init_transactions(30)
    group = Consumer(clients.client_config(west, None, **{"group.id": cfg.names.progress_group(flow.name)}))
    try:
        for offset, commit in ((5, True), (15, False)):
            job.begin_transaction()
            job.produce(topic_name, b"copy", partition=0)
            job.send_offsets_to_transaction([TopicPartition(topic_name, 0, offset)], group.consumer_group_metadata())
            if commit:
                job.commit_transaction(30)
        assert job.flush(30) == 0

        reader = LagReader(cfg, flow)
        try:  # a read waiting for the open transaction would raise after its 5 s
            lags = [lag for lag in reader.read(timeout=5.0) if lag.topic == topic_name]
        finally:
            reader.close()
        assert [(lag.partition, lag.end, lag.next_offset, lag.oldest_uncopied_ms) for lag in lags] == [
            (0, RECORDS, 5, first_ms + 5 * 1000)
        ]
    finally:
        job.abort_transaction(30)
        group.close()

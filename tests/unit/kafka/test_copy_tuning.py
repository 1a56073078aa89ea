"""Streaming copies ask the broker to hold a fetch until enough is there (kafka_dr.kafka.copy_tuning.streaming_fetch);
fixed ranges must not (a small range's last fetch would wait out the timeout): their broker
answers as soon as anything is there, and holds a fetch for nothing only briefly, so the next
range does not wait behind it. Every copy fetches again soon after its queue was full."""

import textwrap

from kafka_dr.bench import rawpipe
from kafka_dr.kafka.copy_tuning import (
    BACKLOG_LINGER_MS,
    FETCH_QUEUE_BACKOFF_MS,
    RANGE_FETCH_WAIT_MS,
    CopyTuning,
    read_wait,
    streaming_fetch,
)
from kafka_dr.spark import source
from kafka_dr.spark.source import ReplicationStreamReader

CONFIG = textwrap.dedent("""\
    clusters:
      east: {bootstrap_servers: "127.0.0.1:1"}
      west: {bootstrap_servers: "127.0.0.1:2"}
    flows:
      - {name: east_to_west, source: east, target: west, topics: {allow: ["orders"]}}
""")


def test_the_broker_holds_a_fetch_a_little_less_than_the_copier_waits_for_a_read():
    assert read_wait(0.1) == 0.025 and read_wait(5.0) == 0.1
    assert streaming_fetch(0.1) == {"fetch.wait.max.ms": 20, "fetch.min.bytes": 256 * 1024}
    assert streaming_fetch(1.0)["fetch.wait.max.ms"] == 80  # the read wait stops at 0.1 s
    assert streaming_fetch(0.001)["fetch.wait.max.ms"] == 1  # never 0 (a busy loop)


def test_only_a_streaming_tasks_copier_gets_the_settings(tmp_path, monkeypatch):
    monkeypatch.setattr(source, "_copiers", {})
    path = tmp_path / "dr.yaml"
    path.write_text(CONFIG)
    reader = ReplicationStreamReader({"config": str(path), "flow": "east_to_west", "commit_seconds": "0.2"})
    streaming = reader._copier(("stream", "orders", 0)).source_consumer_config()
    fixed = reader._copier().source_consumer_config()
    assert streaming["fetch.wait.max.ms"] == 40 and streaming["fetch.min.bytes"] == 256 * 1024
    assert (
        "fetch.min.bytes" not in fixed and fixed["fetch.wait.max.ms"] == RANGE_FETCH_WAIT_MS == 20
    )  # librdkafka's 500 ms held the next range
    assert (
        streaming["fetch.queue.backoff.ms"] == fixed["fetch.queue.backoff.ms"] == FETCH_QUEUE_BACKOFF_MS == 20
    )  # not 1,000
    assert streaming["isolation.level"] == fixed["isolation.level"] == "read_committed"


def test_a_backlog_copy_gathers_larger_batches_and_a_streaming_copy_keeps_the_producers_linger(tmp_path, monkeypatch):
    monkeypatch.setattr(source, "_copiers", {})
    path = tmp_path / "dr.yaml"
    path.write_text(CONFIG)
    reader = ReplicationStreamReader({"config": str(path), "flow": "east_to_west", "commit_seconds": "0.2"})
    assert reader._copier().tuning.producer_overrides == {"linger.ms": BACKLOG_LINGER_MS} == {"linger.ms": 100}
    assert reader._copier(("stream", "orders", 0)).tuning.producer_overrides == {}  # 10 ms, for latency
    assert CopyTuning.backlog(1_000).chunk_records == 1_000


def test_the_raw_pipe_batches_a_backlog_as_ours_does_and_a_continuous_copy_as_ours_streams():
    assert rawpipe.BACKLOG_LINGER_MS == BACKLOG_LINGER_MS
    assert rawpipe.producer_config("h:1", until_end=True)["linger.ms"] == BACKLOG_LINGER_MS
    assert rawpipe.producer_config("h:1", until_end=False)["linger.ms"] == 10
    assert rawpipe.producer_config("h:1", until_end=True)["bootstrap.servers"] == "h:1"

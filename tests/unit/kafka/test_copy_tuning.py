"""Streaming copies ask the broker to hold a fetch until enough is there (kafka_dr.kafka.copy_tuning.streaming_fetch);
fixed ranges must not (a small range's last fetch would wait out the timeout): their broker
answers as soon as anything is there, and holds a fetch for nothing only briefly, so the next
range does not wait behind it. Every copy fetches again soon after its queue was full."""

import textwrap

from kafka_dr.kafka.copy_tuning import FETCH_QUEUE_BACKOFF_MS, RANGE_FETCH_WAIT_MS, read_wait, streaming_fetch
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

"""A topic is created before its leader serves it.

Right after ``create_topics`` returns, offsets requests to the new partitions are refused for
a moment ("not leader", "unknown partition": 85 of 160 partitions on the lab). The
replication job reads a new target topic at once (its progress, the copies on it), and a
backlog run's first query failed on that and restarted, with an alert. These tests create
topics on the real lab and read them at once, the way the job does."""

from __future__ import annotations

import subprocess
import sys

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import NewTopic
from test_replication import flow_config

from kafka_dr.core.config_load import load_config
from kafka_dr.kafka import clients
from kafka_dr.kafka.planner import FlowPlanner
from kafka_dr.kafka.progress_store import last_copied_offset
from kafka_dr.kafka.topic_admin import create_topics, wait_until_served
from kafka_dr.kafka.topics import ensure_topic

pytestmark = [pytest.mark.lab]

PARTITIONS = 8


def _east_to_west(lab, tmp_path, topic: str):
    cfg = load_config(flow_config(lab, tmp_path, [topic]))
    return cfg, next(f for f in cfg.flows if f.source == "east" and f.target == "west")


def _refused_at_once(cluster, topic: str, partitions: int) -> list[tuple[int, str]]:
    """Partitions whose offsets a plain read (no retry) is refused, with the error's name."""
    c = Consumer(clients.client_config(cluster, **{"group.id": "test-new-topics", "enable.auto.commit": False}))
    refused = []
    try:
        for p in range(partitions):
            try:
                c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
            except KafkaException as e:
                refused.append((p, e.args[0].name()))
    finally:
        c.close()
    return refused


def test_the_planner_hands_over_new_target_topics_once_their_leaders_serve_them(lab, tmp_path, topic_name):
    cfg, flow = _east_to_west(lab, tmp_path, topic_name)
    ensure_topic(clients.admin(cfg.cluster("east")), topic_name, partitions=PARTITIONS)

    routes = FlowPlanner(cfg, flow).routes()  # creates the target topic

    target = routes[topic_name].target_topic
    assert routes[topic_name].partitions == PARTITIONS
    assert _refused_at_once(cfg.cluster("west"), target, PARTITIONS) == []


def test_copies_are_looked_for_on_a_target_topic_created_a_moment_ago(lab, tmp_path, topic_name):
    """The topic-config sync (or anyone) may have created the target just before the job reads it."""
    cfg, flow = _east_to_west(lab, tmp_path, topic_name)
    assert ensure_topic(clients.admin(cfg.cluster("west")), topic_name, partitions=PARTITIONS)

    assert [last_copied_offset(cfg, flow, topic_name, topic_name, p) for p in range(PARTITIONS)] == [None] * PARTITIONS


def test_a_client_that_cached_a_new_topic_without_leaders_is_served_once_they_are_known(lab, lab_config, topic_name):
    """As the planner does it: a fresh admin client lists the cluster's topics, creates the new
    target topic and waits until its partitions answer offsets requests. On a busy broker the
    client can cache the topic before its leaders are known, and librdkafka then answered
    "No leaders found" from its cache for as long as one cared to wait (a benchmark job's first
    query: the whole 60 s). Three busy processes and the previous topic's deletion make the lab
    that busy: without the metadata refresh between tries, 2-7 of 20 fresh clients were still
    refused after 8 s (five sets on two labs)."""
    west = lab_config.cluster("west")
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    stuck = []
    try:
        for i in range(20):
            client = clients.admin(west)
            client.list_topics(timeout=30)
            topic = f"{topic_name}.{i}"
            assert create_topics(client, [NewTopic(topic, PARTITIONS, -1)]) == {topic: None}
            try:
                wait_until_served(client, {topic: PARTITIONS}, timeout=8)
            except TimeoutError as e:
                stuck.append(str(e))
            client.delete_topics([topic])  # not waited for: the broker deletes it while the next one is created
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert stuck == [], f"{len(stuck)} of 20 new topics never served to the client that created them: {stuck[0]}"

"""Topic-admin verbs shared by the replication planner, topic-config sync and pre-flight.

Each verb takes an ``AdminClient`` the caller keeps referenced until the verb returns (a
collected client cancels its futures), waits for every future it created, and names the
cluster and topic in its errors.
"""

from __future__ import annotations

from typing import Iterable

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

REQUEST_TIMEOUT = 30.0
RESULT_TIMEOUT = 60.0


def topic_partitions(client: AdminClient, timeout: float = 15.0) -> dict[str, int]:
    """Every topic of the cluster that answers without an error, with its partition count."""
    md = client.list_topics(timeout=timeout)
    return {name: len(t.partitions) for name, t in md.topics.items() if t.error is None}


def describe_topic_configs(client: AdminClient, topics: Iterable[str], explicit_only: bool = True, missing_ok: bool = False) -> dict[str, dict[str, str]]:
    """Topic configs by topic name.

    :param explicit_only: only configs set on the topic itself (``DYNAMIC_TOPIC_CONFIG``),
        not broker or built-in defaults; otherwise every effective value
    :param missing_ok: a topic that vanished between listing and describing is left out
        instead of raising
    """
    topics = list(topics)
    if not topics:
        return {}
    out: dict[str, dict[str, str]] = {}
    futs = client.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics], request_timeout=REQUEST_TIMEOUT)
    for res, fut in futs.items():
        try:
            entries = fut.result(timeout=RESULT_TIMEOUT)
        except KafkaException as e:
            if missing_ok and e.args[0].code() == e.args[0].UNKNOWN_TOPIC_OR_PART:
                continue
            raise
        out[res.name] = {
            k: e.value
            for k, e in entries.items()
            if e.value is not None and (not explicit_only or e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
        }
    return out


def create_topics(client: AdminClient, new_topics: list[NewTopic]) -> dict[str, str | None]:
    """Create topics, tolerating ones that already exist.

    Returns topic -> ``None`` (created), ``"exists"`` (someone created it first), or the
    broker's error text. Waits for every future before returning.
    """
    if not new_topics:
        return {}
    out: dict[str, str | None] = {}
    for name, fut in client.create_topics(new_topics, request_timeout=REQUEST_TIMEOUT).items():
        try:
            fut.result(timeout=RESULT_TIMEOUT)
            out[name] = None
        except KafkaException as e:
            out[name] = "exists" if e.args[0].code() == e.args[0].TOPIC_ALREADY_EXISTS else e.args[0].str()
    return out

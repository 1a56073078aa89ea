"""Topic administration verbs over confluent-kafka's AdminClient."""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic


def ensure_topic(client: AdminClient, name: str, partitions: int, config: dict[str, str] | None = None, timeout: float = 30.0) -> bool:
    """Create ``name`` unless it exists. Returns True if this call created it.

    Idempotent: an existing topic is left as it is (its partition count and configs are the
    topic-config sync's business, not this verb's).
    """
    futures = client.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=-1, config=config or {})], request_timeout=timeout)
    try:
        futures[name].result(timeout=timeout)
        return True
    except KafkaException as e:
        if e.args[0].code() == e.args[0].TOPIC_ALREADY_EXISTS:
            return False
        raise RuntimeError(f"creating topic {name!r} ({partitions} partitions): {e.args[0].str()}") from None


def partition_count(client: AdminClient, topic: str, timeout: float = 10.0) -> int | None:
    md = client.list_topics(topic=topic, timeout=timeout)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return None
    return len(t.partitions)


def delete_topics(client: AdminClient, names: list[str], timeout: float = 60.0) -> list[str]:
    """Delete ``names``; returns those that could not be deleted, each with the broker's reason
    (a topic already gone counts as deleted)."""
    if not names:
        return []
    failed = []
    for name, future in client.delete_topics(list(names), operation_timeout=timeout, request_timeout=timeout).items():
        try:
            future.result(timeout=timeout)
        except KafkaException as e:
            if e.args[0].code() != e.args[0].UNKNOWN_TOPIC_OR_PART:
                failed.append(f"{name}: {e.args[0].str()}")
    return failed

"""Topic administration verbs over confluent-kafka's AdminClient."""

from __future__ import annotations

import time

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from kafka_dr.kafka.topic_admin import SETTLING

TIMEOUT = 30.0


def ensure_topic(
    client: AdminClient, name: str, partitions: int, config: dict[str, str] | None = None, timeout: float = 30.0
) -> bool:
    """Create ``name`` unless it exists. Returns True if this call created it.

    Idempotent: an existing topic is left as it is (its partition count and configs are the
    topic-config sync's business, not this verb's).
    """
    futures = client.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=-1, config=config or {})], request_timeout=timeout
    )
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


def list_offsets(admin: AdminClient, tps: list[TopicPartition], spec, where: str) -> dict[tuple[str, int], int]:
    """``{(topic, partition): offset}`` for ``spec`` (read_committed) on the cluster ``where``.
    A partition whose leadership is moving (a broker restarting, :data:`SETTLING`) is asked
    again until :data:`TIMEOUT`; any other refusal raises one line naming the partition."""
    out: dict[tuple[str, int], int] = {}
    pending, deadline = list(tps), time.monotonic() + TIMEOUT
    while pending:
        futs = admin.list_offsets(
            {tp: spec for tp in pending}, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=TIMEOUT
        )
        pending = []
        for tp, fut in futs.items():
            try:
                out[(tp.topic, tp.partition)] = fut.result(timeout=TIMEOUT).offset
            except KafkaException as e:
                if e.args[0].code() in SETTLING and time.monotonic() < deadline:
                    pending.append(tp)
                    continue
                raise RuntimeError(
                    f"listing offsets of {where}/{tp.topic}[{tp.partition}]: {e.args[0].str()}"
                ) from None
        if pending:
            time.sleep(0.5)
    return out


def partition_ranges(
    admin: AdminClient, tps: list[TopicPartition], where: str
) -> dict[tuple[str, int], tuple[int, int]]:
    """``{(topic, partition): (earliest, last stable offset)}`` of ``tps`` on the cluster ``where``
    (read_committed: the end is where a transactional reader stops)."""
    low = list_offsets(admin, tps, OffsetSpec.earliest(), where)
    high = list_offsets(admin, tps, OffsetSpec.latest(), where)
    return {k: (low[k], high[k]) for k in low}

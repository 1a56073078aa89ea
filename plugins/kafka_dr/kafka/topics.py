"""Topic administration verbs over confluent-kafka's AdminClient."""

from __future__ import annotations

import time

from confluent_kafka import IsolationLevel, KafkaError, KafkaException, TopicPartition
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


class OffsetsRefused(KafkaException):
    """A partition's offsets request refused for good (or still settling at the deadline);
    ``tp`` names the partition, ``args[0]`` is the broker's or client's error."""

    def __init__(self, error: KafkaError, tp: TopicPartition):
        super().__init__(error)
        self.tp = tp


#: one try's wait for an offsets answer. A request routed to a leader that just died is not
#: failed by librdkafka: it is answered -1001 when this runs out, so a try must be short
TRY_TIMEOUT = 10.0
#: a try's refusals that the next try may not meet: leadership moving, a try that ran out,
#: "No leaders found" (a client whose metadata has no leader yet)
ASK_AGAIN = SETTLING | {KafkaError._TIMED_OUT, KafkaError._NOENT}


def query_offsets(admin: AdminClient, request: dict, timeout: float = TIMEOUT) -> dict[tuple[str, int], int]:
    """``{(topic, partition): offset}`` for ``request`` (``{TopicPartition: OffsetSpec}``), as a
    ``read_committed`` reader sees them.

    A partition refused with :data:`ASK_AGAIN` is asked again until ``timeout``, and before
    each new try the client's metadata of its topic is read again. Why: librdkafka routes an
    offsets request by the leader and leader epoch it cached. After a leader's crash, a client
    that had not refreshed routed to the dead broker and got -1001 when the request ran out;
    after a preferred-leader election it got "Leader epoch is older than broker epoch" from every
    try (5 of 5) until its periodic refresh minutes later. Both served on the first try after a
    ``list_topics`` of the topic (3-broker lab, ``tests/integration/test_lab.py``).
    Raises :class:`OffsetsRefused` naming the partition."""
    out: dict[tuple[str, int], int] = {}
    pending, deadline = dict(request), time.monotonic() + timeout
    while True:
        refused = _try_offsets(admin, pending, max(1.0, min(TRY_TIMEOUT, deadline - time.monotonic())), out)
        if not refused:
            return out
        for tp, error in refused.items():
            if error.code() not in ASK_AGAIN or time.monotonic() >= deadline:
                raise OffsetsRefused(error, tp)
        pending = {tp: request[tp] for tp in refused}
        time.sleep(0.5)
        _refresh_metadata(admin, {tp.topic for tp in pending})


def _try_offsets(admin: AdminClient, request: dict, wait: float, out: dict) -> dict[TopicPartition, KafkaError]:
    """One offsets request: the answered partitions go into ``out``; the others come back with
    why they were not answered."""
    refused: dict[TopicPartition, KafkaError] = {}
    futs = admin.list_offsets(request, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=wait)
    for tp, fut in futs.items():
        try:
            offset = fut.result(timeout=wait + 30).offset
        except KafkaException as e:
            refused[tp] = e.args[0]
            continue
        if offset < 0:
            refused[tp] = KafkaError(KafkaError._TIMED_OUT, f"no offset within {wait:.0f}s (its leader did not answer)")
        else:
            out[(tp.topic, tp.partition)] = offset
    return refused


def _refresh_metadata(admin: AdminClient, topics: set[str]) -> None:
    for topic in sorted(topics):
        try:
            admin.list_topics(topic=topic, timeout=5)
        except KafkaException:
            pass  # the next try's refusal says what is wrong


def list_offsets(admin: AdminClient, tps: list[TopicPartition], spec, where: str) -> dict[tuple[str, int], int]:
    """:func:`query_offsets` of ``tps`` for ``spec`` on the cluster ``where``; a refusal raises
    one line naming the partition."""
    try:
        return query_offsets(admin, {tp: spec for tp in tps})
    except OffsetsRefused as e:
        raise RuntimeError(f"listing offsets of {where}/{e.tp.topic}[{e.tp.partition}]: {e.args[0].str()}") from None


def partition_ranges(
    admin: AdminClient, tps: list[TopicPartition], where: str
) -> dict[tuple[str, int], tuple[int, int]]:
    """``{(topic, partition): (earliest, last stable offset)}`` of ``tps`` on the cluster ``where``
    (read_committed: the end is where a transactional reader stops)."""
    low = list_offsets(admin, tps, OffsetSpec.earliest(), where)
    high = list_offsets(admin, tps, OffsetSpec.latest(), where)
    return {k: (low[k], high[k]) for k in low}

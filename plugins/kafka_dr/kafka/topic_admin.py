"""Topic-admin verbs shared by the replication planner, topic-config sync and pre-flight.

Each verb takes an ``AdminClient`` the caller keeps referenced until the verb returns (a
collected client cancels its futures), waits for every future it created, and names the
cluster and topic in its errors.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic, OffsetSpec

from kafka_dr.kafka.permissions import denied, is_denied
from kafka_dr.kafka.permissions import topic as topic_resource

REQUEST_TIMEOUT = 30.0
RESULT_TIMEOUT = 60.0

#: what a partition answers while its leadership settles: just created (the controller has it,
#: the leader broker has not applied it yet) or moving to another broker. All seen on the lab
#: right after create_topics, the epoch ones too ("Leader epoch is newer than broker epoch");
#: OFFSET_NOT_AVAILABLE is a new leader that has not learnt its high watermark yet
SETTLING = {
    KafkaError.OFFSET_NOT_AVAILABLE,
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError.UNKNOWN_LEADER_EPOCH,
    KafkaError.FENCED_LEADER_EPOCH,
    KafkaError._UNKNOWN_PARTITION,
    KafkaError._UNKNOWN_TOPIC,
}


def topic_partitions(client: AdminClient, timeout: float = 15.0) -> dict[str, int]:
    """Every topic of the cluster that answers without an error, with its partition count."""
    md = client.list_topics(timeout=timeout)
    return {name: len(t.partitions) for name, t in md.topics.items() if t.error is None}


def describe_topic_configs(
    client: AdminClient,
    topics: Iterable[str],
    explicit_only: bool = True,
    missing_ok: bool = False,
    cluster: str | None = None,
) -> dict[str, dict[str, str]]:
    """Topic configs by topic name.

    :param explicit_only: only configs set on the topic itself (``DYNAMIC_TOPIC_CONFIG``),
        not broker or built-in defaults; otherwise every effective value
    :param missing_ok: a topic that vanished between listing and describing is left out
        instead of raising
    :param cluster: names the cluster in the :class:`PermissionDenied` raised when a topic's
        configs may not be described (otherwise the client's error is raised)
    """
    topics = list(topics)
    if not topics:
        return {}
    out: dict[str, dict[str, str]] = {}
    futs = client.describe_configs(
        [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics], request_timeout=REQUEST_TIMEOUT
    )
    for res, fut in futs.items():
        try:
            entries = fut.result(timeout=RESULT_TIMEOUT)
        except KafkaException as e:
            if missing_ok and e.args[0].code() == e.args[0].UNKNOWN_TOPIC_OR_PART:
                continue
            if cluster is not None and is_denied(e):
                doing = f"describe the configs of topic {res.name!r}"
                raise denied(cluster, doing, "DESCRIBE_CONFIGS", topic_resource(res.name)) from None
            raise
        out[res.name] = {
            k: e.value
            for k, e in entries.items()
            if e.value is not None and (not explicit_only or e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
        }
    return out


#: :func:`create_topics`' answer for a topic the cluster's authorizer would not let us create
DENIED = "denied"


def create_topics(client: AdminClient, new_topics: list[NewTopic]) -> dict[str, str | None]:
    """Create topics, tolerating ones that already exist.

    Returns topic -> ``None`` (created), ``"exists"`` (someone created it first),
    :data:`DENIED` (the authorizer refused), or the broker's error text. Waits for every
    future before returning.
    """
    if not new_topics:
        return {}
    out: dict[str, str | None] = {}
    for name, fut in client.create_topics(new_topics, request_timeout=REQUEST_TIMEOUT).items():
        try:
            fut.result(timeout=RESULT_TIMEOUT)
            out[name] = None
        except KafkaException as e:
            code = e.args[0].code()
            out[name] = (
                "exists" if code == e.args[0].TOPIC_ALREADY_EXISTS else DENIED if is_denied(e) else e.args[0].str()
            )
    return out


def wait_until_served(client: AdminClient, partitions: dict[str, int], timeout: float = RESULT_TIMEOUT) -> None:
    """Wait until every partition of ``partitions`` (topic -> count) answers an offsets request.

    Why: a topic is created before its leader broker serves it. On the lab, offsets requests
    right after ``create_topics`` returned were refused for 85 of 160 partitions ("not leader",
    "unknown partition"); the replication job read the new target topics at once and its
    first query failed and restarted. Only :data:`SETTLING` answers are waited out.

    Between tries the client's metadata of the refused topics is read again (``list_topics``
    of each): librdkafka answers an offsets request from its metadata cache, and a client that
    cached a new topic before its leaders were known kept answering "No leaders found" without
    asking the broker again. Seen in a benchmark run (a job's first query stuck for the whole
    60 s, then restarted) and reproduced on a busy lab (three busy processes, the previous
    topic being deleted): 2-7 of 20 fresh admin clients still refused after 8 s in five sets;
    with the refresh, 0 of 20 in each of four (each served within 0.2 s).
    ``tests/integration/test_new_topics.py``."""
    pending = [TopicPartition(t, p) for t, n in partitions.items() for p in range(n)]
    deadline = time.monotonic() + timeout
    while pending:
        futures = client.list_offsets({tp: OffsetSpec.latest() for tp in pending}, request_timeout=REQUEST_TIMEOUT)
        refused: list[TopicPartition] = []
        last: KafkaError | None = None
        for tp, fut in futures.items():
            try:
                fut.result(timeout=RESULT_TIMEOUT)
            except KafkaException as e:
                if (
                    e.args[0].code() not in SETTLING and e.args[0].code() != KafkaError._NOENT
                ):  # _NOENT: "No leaders found"
                    raise
                refused.append(tp)
                last = e.args[0]
        pending = refused
        if pending and time.monotonic() >= deadline:
            raise TimeoutError(
                f"{len(pending)} partition(s) not served {timeout:.0f}s after their topic was created, e.g. "
                f"{pending[0].topic}[{pending[0].partition}]: {last.str() if last else '?'}"
            )
        if pending:
            time.sleep(0.1)
            for topic in sorted({tp.topic for tp in pending}):
                try:
                    client.list_topics(topic=topic, timeout=REQUEST_TIMEOUT)  # refreshes the cached leaders (docstring)
                except KafkaException:
                    pass  # the next try reports what is wrong

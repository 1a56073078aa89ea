"""The target topics' ``max.message.bytes``, and the producer settings that keep the copiers'
batches within them.

A broker refuses a record batch larger than its topic's ``max.message.bytes`` whole: every
record in it fails with "Message size too large", the small ones too. librdkafka's
``batch.size`` bounds a batch, framing included, but only from its second record on: a record
larger than it travels alone. So with ``batch.size`` at most the smallest limit among the
topics a producer writes (the target topic, the dead-letter topic, the seed map), a batch of
several records always fits, and a batch the broker refuses for its size holds one record,
which alone is too large (:func:`~kafka_dr.core.record_batch.own_batch_bytes`; a batch is sent
uncompressed when compression would make it larger). ``message.max.bytes``, librdkafka's own
check at ``produce()`` (1,000,000 bytes by default), is raised to the largest limit, so the
client does not refuse what the topic accepts.

Limits are read once per topic (the effective value: the topic's own setting or the broker's
default) and read again after a refusal for size: a limit lowered while a producer lives makes
its batches too large, and the copier then builds a producer sized again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource

from kafka_dr.core.config import ClusterConfig
from kafka_dr.kafka.clients import SecretResolver, client_config

log = logging.getLogger(__name__)

#: the copiers' ``batch.size`` where the targets allow more, and librdkafka's default ``message.max.bytes``
DEFAULT_BATCH_BYTES = 1_000_000

#: producers sized again in a row for one chunk before its refusal is reported as it stands
RESIZES = 3

#: how long reading limits may take; past it a producer keeps librdkafka's defaults (and a refusal reads again)
READ_TIMEOUT = 15.0


def size_refusal(err: KafkaError | None) -> bool:
    """Did the target (or librdkafka at ``produce()``) refuse a batch or record for its size?"""
    return err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE


def producer_sizing(limits: Iterable[int | None]) -> dict[str, int]:
    """librdkafka settings for a producer writing to topics of these ``max.message.bytes``
    (``None``: unknown, left out): batches within the smallest, no refusal at ``produce()``
    below the largest."""
    known = [n for n in limits if n is not None]
    if not known:
        return {"batch.size": DEFAULT_BATCH_BYTES, "message.max.bytes": DEFAULT_BATCH_BYTES}
    return {"batch.size": min(DEFAULT_BATCH_BYTES, *known), "message.max.bytes": max(DEFAULT_BATCH_BYTES, *known)}


class TargetLimits:
    """The effective ``max.message.bytes`` of a cluster's topics, cached per topic. Reads go
    through one lazily created admin client; a topic that is missing or cannot be described
    counts as unknown (librdkafka's defaults, as before limits were read)."""

    def __init__(self, cluster: ClusterConfig, resolve: SecretResolver | None = None) -> None:
        self.cluster, self.resolve = cluster, resolve
        self._admin: AdminClient | None = None
        self._known: dict[str, int | None] = {}

    def limit(self, topic: str) -> int | None:
        if topic not in self._known:
            self.refresh([topic])
        return self._known[topic]

    def sizing(self, topics: Iterable[str]) -> dict[str, int]:
        """:func:`producer_sizing` for ``topics``, read once each."""
        topics = list(dict.fromkeys(topics))
        missing = [t for t in topics if t not in self._known]
        if missing:
            self.refresh(missing)
        return producer_sizing(self._known[t] for t in topics)

    def admin(self) -> AdminClient:
        """The admin client on the target these reads share (also asked why records were refused)."""
        if self._admin is None:
            self._admin = AdminClient(client_config(self.cluster, self.resolve))
        return self._admin

    def refresh(self, topics: Iterable[str]) -> None:
        """Read the limits of ``topics`` again (all in one request)."""
        topics = list(dict.fromkeys(topics))
        if not topics:
            return
        futures = self.admin().describe_configs(
            [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics], request_timeout=READ_TIMEOUT
        )
        for res, fut in futures.items():
            try:
                entry = fut.result(timeout=READ_TIMEOUT + 5).get("max.message.bytes")
                self._known[res.name] = int(entry.value) if entry is not None and entry.value is not None else None
            except (KafkaException, TimeoutError) as e:
                if self._known.get(res.name) is None:
                    self._known[res.name] = None
                why = e.args[0].str() if isinstance(e, KafkaException) and e.args else repr(e)
                log.warning(
                    "reading max.message.bytes of %s/%s: %s; its producer's batches keep their size",
                    self.cluster.name,
                    res.name,
                    why,
                )

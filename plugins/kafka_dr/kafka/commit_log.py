"""The source cluster's group commits, tailed from ``__consumer_offsets``
(:mod:`kafka_dr.core.group_commits`): what the continuous offset sync reads instead of asking
every group for its offsets.

The first read catches up from the topic's start (it is compacted: one record per live group
and partition, plus what the cleaner has not reached); every later read returns what was
committed since. Reading it needs READ on the topic ``__consumer_offsets``
(docs/operations.md).
"""

from __future__ import annotations

import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from kafka_dr.core.group_commits import COMMITS_TOPIC, GroupCommit, decode_commit
from kafka_dr.kafka import permissions

BATCH = 5000


class CommitLog:
    """Tails ``__consumer_offsets`` with ``consumer`` (assigned here, never committing; made
    with ``enable.partition.eof``: the first read ends when every partition reported its end)."""

    def __init__(self, consumer: Consumer, where: str):
        self.c, self.where = consumer, where
        self.partitions: int | None = None
        self.caught_up = False
        self._at_end: set[int] = set()

    def _assign(self, timeout: float) -> bool:
        md = self.c.list_topics(COMMITS_TOPIC, timeout=timeout).topics.get(COMMITS_TOPIC)
        if md is None or md.error is not None or not md.partitions:
            if md is not None and md.error is not None and permissions.is_denied(md.error):
                raise permissions.denied(self.where, f"read {COMMITS_TOPIC}", "READ", permissions.topic(COMMITS_TOPIC))
            return False  # no group has committed on this cluster yet
        self.partitions = len(md.partitions)
        self.c.assign([TopicPartition(COMMITS_TOPIC, p, OFFSET_BEGINNING) for p in md.partitions])
        return True

    def read(self, timeout: float = 30.0, quiet_s: float = 0.2) -> dict[tuple[str, str, int], GroupCommit]:
        """The latest commit per (group, topic, partition) since the last read. The first reads
        return every live commit (reading until each partition reported its end, ``timeout``
        seconds at a time); later ones stop once nothing arrives for ``quiet_s``."""
        if self.partitions is None and not self._assign(timeout):
            return {}
        out: dict[tuple[str, str, int], GroupCommit] = {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msgs = self.c.consume(num_messages=BATCH, timeout=quiet_s)
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        self._at_end.add(msg.partition())
                        continue
                    if permissions.is_denied(err):
                        doing = f"read {COMMITS_TOPIC}"
                        raise permissions.denied(self.where, doing, "READ", permissions.topic(COMMITS_TOPIC))
                    if err.fatal():
                        raise KafkaException(err)
                    continue  # the consumer retries by itself; what was read so far is returned
                try:
                    commit = decode_commit(msg.key(), msg.value())
                except ValueError as e:
                    raise RuntimeError(f"{self.where}/{COMMITS_TOPIC}[{msg.partition()}]@{msg.offset()}: {e}") from None
                if commit is not None:
                    out[commit.key] = commit
            if not self.caught_up:
                if len(self._at_end) >= self.partitions:
                    self.caught_up = True
                    return out
                continue
            if not msgs:
                return out
        return out  # a first read cut short by the timeout: the next read goes on from there

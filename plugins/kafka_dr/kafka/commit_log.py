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

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError, KafkaException, TopicPartition

from kafka_dr.core.group_commits import COMMITS_TOPIC, GroupCommit, decode_commit
from kafka_dr.kafka import permissions

BATCH = 5000
WAIT_S = 0.1  #: one wait for records, a read being over only once every partition is read up to its end


class CommitLog:
    """Tails ``__consumer_offsets`` with ``consumer`` (assigned here, never committing; made
    with ``enable.partition.eof``).

    A read goes up to the partitions' ends as they were when it began (asked once per read):
    a partition is read up to there once it delivered a record at or past that end, or reported
    its end past it. Never "until nothing arrives for a while": on a cluster whose groups commit
    every few ms (a transactional copy's progress among them) no such pause comes, and neither
    does an end report, which comes only from a fetch that found nothing new."""

    def __init__(self, consumer: Consumer, where: str):
        self.c, self.where = consumer, where
        self.partitions: list[int] | None = None
        #: per partition: the offset read up to (past its last record, or its reported end)
        self._next: dict[int, int] = {}

    def _assign(self, timeout: float) -> bool:
        md = self.c.list_topics(COMMITS_TOPIC, timeout=timeout).topics.get(COMMITS_TOPIC)
        if md is None or md.error is not None or not md.partitions:
            if md is not None and md.error is not None and permissions.is_denied(md.error):
                raise permissions.denied(self.where, f"read {COMMITS_TOPIC}", "READ", permissions.topic(COMMITS_TOPIC))
            return False  # no group has committed on this cluster yet
        self.partitions = sorted(md.partitions)
        self.c.assign([TopicPartition(COMMITS_TOPIC, p, OFFSET_BEGINNING) for p in self.partitions])
        return True

    def _ends(self, timeout: float) -> dict[int, int]:
        """Each partition's end now: its last stable offset for this read_committed reader, so
        a commit in a transaction still open is left to a later read."""
        asked = [TopicPartition(COMMITS_TOPIC, p, OFFSET_END) for p in self.partitions or []]
        got = self.c.offsets_for_times(asked, timeout=timeout)
        for tp in got:
            if tp.error is not None:
                raise KafkaException(tp.error)
        return {tp.partition: tp.offset for tp in got}

    def read(self, timeout: float = 30.0) -> dict[tuple[str, str, int], GroupCommit]:
        """The latest commit per (group, topic, partition) committed since the last read and
        before this one began (the first read: every live commit). A read cut short by
        ``timeout`` returns what it read; the next one goes on from there."""
        if self.partitions is None and not self._assign(timeout):
            return {}
        deadline = time.monotonic() + timeout
        ends = self._ends(timeout)
        left = {p for p, end in ends.items() if self._next.get(p, 0) < end}
        out: dict[tuple[str, str, int], GroupCommit] = {}
        while left and time.monotonic() < deadline:
            for msg in self.c.consume(num_messages=BATCH, timeout=min(WAIT_S, max(0.0, deadline - time.monotonic()))):
                err = msg.error()
                p = msg.partition()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        self._read_to(p, msg.offset(), ends, left)
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
                    raise RuntimeError(f"{self.where}/{COMMITS_TOPIC}[{p}]@{msg.offset()}: {e}") from None
                if commit is not None:
                    out[commit.key] = commit
                self._read_to(p, msg.offset() + 1, ends, left)
        return out

    def _read_to(self, partition: int, offset: int, ends: dict[int, int], left: set[int]) -> None:
        self._next[partition] = max(self._next.get(partition, 0), offset)
        if self._next[partition] >= ends.get(partition, 0):
            left.discard(partition)

"""One chunk's delivery reports, and which record a refusal by the target is blamed on.

The target refuses a batch whole: every record in it reports the refusal. A chunk redone
*precisely* gives each record its own delivery callback. A refusal for size is blamed on the
first refused record whose own batch is larger than the target topic's limit: the copiers'
batches of several records fit that limit (:mod:`kafka_dr.kafka.target_limits`), so a batch
refused for its size held that record alone, and the records refused with it are innocent.
Any other refusal is blamed on the first refused record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from confluent_kafka import KafkaError

from kafka_dr.core.record_batch import own_batch_bytes
from kafka_dr.kafka.target_limits import size_refusal


@dataclass
class Chunk:
    """One transaction of a partition's copy, as the per-partition copier tracks it."""

    first_offset: int
    #: when set, every record carries its own delivery callback naming its source offset
    #: (a seed map needs the target offsets; a refusal needs the refused record's offset)
    precise: bool = False
    #: the target topic's ``max.message.bytes`` when the chunk began (precise chunks; None: unknown)
    limit: int | None = None
    error: KafkaError | None = None
    error_offset: int = -1  #: the first refused record (-1: the chunk was not precise, so which one is unknown)
    too_large: int = -1  #: the first refused record whose own batch is larger than ``limit``
    too_large_bytes: int = 0  #: the size of that record's own batch
    pairs: list = field(default_factory=list)  #: (source offset, target offset), when a seed map is kept

    def delivered(self, src: int, headers, err: KafkaError | None, msg) -> None:
        """A record's delivery report (``headers``: those it was produced with; a report has none)."""
        if err is None:
            self.pairs.append((src, msg.offset()))
            return
        if self.error is None:
            self.error, self.error_offset = err, src
        if self.too_large < 0 and self.limit is not None and size_refusal(err):
            size = own_batch_bytes(msg.key(), msg.value(), headers)
            if size > self.limit:
                self.too_large, self.too_large_bytes = src, size

    def refused_at_produce(self, src: int, err: KafkaError, size: int) -> None:
        """librdkafka refused the record at ``src`` on the spot: the chunk ends there."""
        if self.error is None:
            self.error, self.error_offset = err, src
        if self.too_large < 0 and size_refusal(err):
            self.too_large, self.too_large_bytes = src, size

    def blamed(self) -> int:
        """The source offset of the record the refusal is blamed on; -1 when not known (a chunk
        that was not precise, or refused for size with no record too large on its own)."""
        if size_refusal(self.error) and (self.too_large >= 0 or self.limit is not None):
            return self.too_large
        return self.error_offset

    def reason(self, cluster: str, topic: str, limit: int | None) -> str:
        """Why the blamed record was refused, with its size for a refusal for size."""
        text = self.error.str() if self.error is not None else "refused"
        if self.too_large >= 0 and size_refusal(self.error):
            text += (
                f" (its own record batch is {self.too_large_bytes} bytes, "
                f"above {cluster}/{topic}'s max.message.bytes of {limit})"
                if limit is not None
                else f" (its own record batch is {self.too_large_bytes} bytes)"
            )
        return text

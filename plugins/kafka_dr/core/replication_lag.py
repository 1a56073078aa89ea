"""One source partition's replication lag, as read from the clusters (pure).

``records`` counts offsets between the flow's progress and the source's end: records the
flow's loop policy skips and transaction markers are among them until the flow passes them,
so a flow that is caught up reads 0 and one that is behind reads at least what it has to copy.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PartitionLag:
    topic: str  #: the source topic
    partition: int
    end: int  #: the source's last stable offset
    next_offset: int  #: the next source offset the flow copies (its progress, else the log start)
    oldest_uncopied_ms: int | None  #: timestamp of the record at ``next_offset`` (None: caught up or unread)

    @property
    def records(self) -> int:
        return max(0, self.end - self.next_offset)

    def seconds(self, now_ms: int) -> float | None:
        """Age of the oldest uncopied record: 0 when caught up, None when it could not be read."""
        if self.records == 0:
            return 0.0
        return None if self.oldest_uncopied_ms is None else max(0.0, (now_ms - self.oldest_uncopied_ms) / 1000)

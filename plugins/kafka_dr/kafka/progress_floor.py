"""Progress is never behind the copies on the target.

A copier's records and its progress commit in one transaction, and copies sit on the target
in source order, so the newest copy of a partition is a floor for that partition's progress.
Right after a target broker restarts, its replay of the progress group has been seen to answer
a *stable* progress behind the copies it holds, or none at all, and a copy from there copies
again everything since. So a copier checks what it read against the end of each target
partition before it copies, and moves progress up to just after the newest copy where it is
behind, committed in an offsets-only transaction of its own transactional id.

A copy past the source's end offset means the source topic is not the one that was copied (it
was recreated): progress is left as it is, for the copier to report.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_dr.core.config import FlowConfig
from kafka_dr.core.progress import encode_metadata
from kafka_dr.kafka.progress_store import last_copies

log = logging.getLogger(__name__)

#: (source topic, target topic, partition): what a flow's progress is kept for
Pair = tuple[str, str, int]

#: records read back from the end of each target partition: the newest copy is the last record
#: unless local writes follow it (a target written by applications too is checked less far back)
WINDOW = 256
#: a read that long is held by an open transaction of another producer on the target: what was
#: found by then is a committed copy, and the floor it gives holds
SCAN_SECONDS = 5.0


def floor_at_copies(
    flow: FlowConfig,
    scanner: Consumer,
    source_end: Callable[[str, int], int],
    producer: Callable[[], Producer],
    group_meta,
    progress: dict[Pair, int | None],
) -> dict[Pair, int | None]:
    """``progress`` (next source offset or None per pair), each moved up to just after the newest
    copy of its partition on the target where it is behind, and committed (module docstring).
    ``source_end(topic, partition)`` is the source's end offset, asked only where a move is due;
    ``producer()`` is initialised with no transaction open, called only then."""
    found, _ = last_copies(scanner, flow, list(progress), WINDOW, SCAN_SECONDS)
    moved: dict[Pair, int] = {}
    for pair, done in progress.items():
        last = found[pair]
        if last is None or (done is not None and last < done):
            continue
        if last + 1 > source_end(pair[0], pair[2]):
            log.warning(
                "flow %s: %s/%s[%d] holds a copy of offset %d, past the end of %s/%s[%d]: progress left as it is",
                flow.name,
                flow.target,
                pair[1],
                pair[2],
                last,
                flow.source,
                pair[0],
                pair[2],
            )
            continue
        moved[pair] = last + 1
    if moved:
        commit_moved(flow, producer(), group_meta, progress, moved, "the target answered progress behind its copies")
    return {**progress, **moved}


def commit_moved(
    flow: FlowConfig,
    producer: Producer,
    group_meta,
    before: dict[Pair, int | None],
    moved: dict[Pair, int],
    why: str,
) -> None:
    """Commit the ``moved`` progress in one offsets-only transaction of ``producer``
    (initialised, no transaction open), and say for each what it was and why it moved."""
    now_ms = int(time.time() * 1000)
    producer.begin_transaction()
    producer.send_offsets_to_transaction(
        [TopicPartition(t, p, nxt, encode_metadata(src, now_ms)) for (src, t, p), nxt in moved.items()], group_meta, 30
    )
    producer.commit_transaction(30)
    for (src, t, p), nxt in moved.items():
        log.warning(
            "flow %s: progress of %s/%s[%d] was %s while copies up to source offset %d were on the target (%s); "
            "progress set to %d",
            flow.name,
            flow.target,
            t,
            p,
            before[(src, t, p)],
            nxt - 1,
            why,
            nxt,
        )

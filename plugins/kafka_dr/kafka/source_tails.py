"""What a flow has not copied yet, counted on its source: the records its loop policy would copy
between the committed progress and the source's end (``core.failover.SourceTail``).

The failover's RPO report counts them when the failed cluster still answers; the offset sync
counts them every run while it answers and records the counts on the target, so that a
failover with the source gone knows how many records were missing at the last count.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import TopicPartition

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.failover import SourceTail, tail_key, tail_value
from kafka_dr.core.loop import router_for
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.progress_store import read_committed_progress
from kafka_dr.kafka.range_reads import FAST_EOF, count_copied
from kafka_dr.kafka.topics import partition_ranges

#: the offset sync reads at most this many source offsets a partition per run: under a
#: backlog the count is a lower bound that stops there
SYNC_CAP = 10_000


def selected_source_partitions(
    cfg: DrConfig, flow: FlowConfig, s_admin, timeout: float = 30.0
) -> list[tuple[str, int]]:
    """The data partitions the flow copies as the source holds them now (no heartbeats)."""
    router = router_for(cfg, flow)
    md = s_admin.list_topics(timeout=timeout).topics
    return sorted(
        (t, p)
        for t, m in md.items()
        if m.error is None and t != cfg.names.heartbeat_topic and router.target_topic(t) is not None
        for p in m.partitions
    )


def count_tails(
    cfg: DrConfig,
    flow: FlowConfig,
    s_admin,
    s_consumer,
    resolve: SecretResolver | None = None,
    cap: int | None = None,
    keys: list[tuple[str, int]] | None = None,
    ends: dict[tuple[str, int], int] | None = None,
) -> dict[tuple[str, int], SourceTail]:
    """Per source partition: the flow's progress, the source's end (last stable offset) and the
    records the flow copies in between (``cap``: read at most that many offsets; ``ends``:
    count up to these offsets instead of the end now)."""
    router = router_for(cfg, flow)
    keys = selected_source_partitions(cfg, flow, s_admin) if keys is None else keys
    if not keys:
        return {}
    progress = read_committed_progress(cfg, flow, [(router.target_topic(t), p) for t, p in keys], resolve)
    ranges = partition_ranges(s_admin, [TopicPartition(t, p) for t, p in keys], flow.source)
    spans = {}
    for t, p in keys:
        low, end = ranges[(t, p)]
        end = end if ends is None else ends[(t, p)]
        start = max(low, progress.get((router.target_topic(t), p), {}).get("next_offset", low))
        spans[(t, p)] = (start, end if cap is None else min(end, start + cap))
    counts = count_copied(s_consumer, flow.source, router.transform(), spans)
    now = int(time.time() * 1000)
    return {k: SourceTail(spans[k][0], max(spans[k]), counts[k][0], now) for k in keys}


def source_readers(cfg: DrConfig, flow: FlowConfig, purpose: str, resolve: SecretResolver | None = None):
    """An admin client and a reader (``purpose``: one of ``naming.READERS``) on ``flow``'s source,
    for :func:`count_tails`; close the reader when done."""
    src = cfg.cluster(flow.source)
    return clients.admin(src, resolve), clients.consumer(src, cfg.names.reader_group(purpose), resolve, **FAST_EOF)


def record_source_tails(
    cfg: DrConfig, flow: FlowConfig, tr, produce: Callable[[bytes, bytes], None], resolve: SecretResolver | None = None
) -> int:
    """Count with the translator's source clients and hand each tail record to ``produce``."""
    tails = count_tails(cfg, flow, tr.s_admin, tr.s_consumer, resolve, cap=SYNC_CAP)
    for (t, p), tail in tails.items():
        produce(tail_key(flow.name, t, p), tail_value(tail))
    return len(tails)


def count_now(
    cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None
) -> dict[tuple[str, int], SourceTail]:
    """Every tail of ``flow``, counted in full on its source (which must answer)."""
    admin, c = source_readers(cfg, flow, "failover-reader", resolve)
    try:
        return count_tails(cfg, flow, admin, c, resolve)
    finally:
        c.close()

"""How far each flow's copy is behind its source, read from the clusters (not from the job).

Per source partition the flow selects: the source's end (last stable offset), the flow's
committed progress on the target (:mod:`~kafka_dr.kafka.progress_store`: the last committed
one, never waiting for a transaction a dead job left open) and, where the flow is behind,
the timestamp of the oldest record it has not copied yet. It is right while the replication
job is dead, which is when it matters. The cost of one read is bounded by the flow's
partitions, not its records: two ListOffsets requests and one committed-offsets request for
all of them, and one fetch of the first uncopied record of each lagging partition
(``max.partition.fetch.bytes`` kept small), within ``timeout``.
"""

from __future__ import annotations

import time

from confluent_kafka import KafkaError, TopicPartition

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.loop import router_for
from kafka_dr.core.replication_lag import PartitionLag
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.progress_store import progress_reader, read_committed_progress
from kafka_dr.kafka.source_tails import selected_source_partitions
from kafka_dr.kafka.topics import partition_ranges


class LagReader:
    """Reads one flow's lag again and again with the same clients (an exporter's scrapes)."""

    def __init__(self, cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None) -> None:
        self.cfg, self.flow, self.resolve = cfg, flow, resolve
        source = cfg.cluster(flow.source)
        self.router = router_for(cfg, flow)
        self.admin = clients.admin(source, resolve)
        self.progress = progress_reader(cfg, flow, resolve, stable=False)  # no wait on a dead job's transaction
        # one small fetch per lagging partition: only the first record's timestamp is wanted
        self.reader = clients.consumer(
            source,
            cfg.names.reader_group("exporter-reader"),
            resolve,
            **{"isolation.level": "read_committed", "max.partition.fetch.bytes": 1024, "fetch.max.bytes": 1 << 20},
        )

    def read(self, timeout: float = 5.0) -> list[PartitionLag]:
        """Every selected partition's lag now; raises when a cluster does not answer in time."""
        deadline = time.monotonic() + timeout
        keys = selected_source_partitions(self.cfg, self.flow, self.admin, timeout=timeout)
        if not keys:
            return []
        ranges = partition_ranges(self.admin, [TopicPartition(t, p) for t, p in keys], self.flow.source)
        targets = [(self.router.target_topic(t), p) for t, p in keys]
        left = max(1.0, deadline - time.monotonic())
        progress = read_committed_progress(self.cfg, self.flow, targets, self.resolve, left, consumer=self.progress)
        nexts = {}
        for (t, p), target in zip(keys, targets):
            low, end = ranges[(t, p)]
            nexts[(t, p)] = (max(low, progress.get(target, {}).get("next_offset", low)), end)
        behind = {k: n for k, (n, end) in nexts.items() if end > n}
        stamps = self._first_timestamps(behind, deadline)
        return [PartitionLag(t, p, end, n, stamps.get((t, p))) for (t, p), (n, end) in sorted(nexts.items())]

    def _first_timestamps(self, positions: dict[tuple[str, int], int], deadline: float) -> dict[tuple[str, int], int]:
        """The timestamp of the first committed record at or after each position."""
        if not positions:
            return {}
        tps = [TopicPartition(t, p, o) for (t, p), o in positions.items()]
        self.reader.assign(tps)
        found: dict[tuple[str, int], int] = {}
        try:
            while len(found) < len(positions) and time.monotonic() < deadline:
                for m in self.reader.consume(num_messages=len(positions) * 4, timeout=0.2):
                    if m.error() is not None:
                        if m.error().code() != KafkaError._PARTITION_EOF:
                            raise RuntimeError(f"reading {self.flow.source}/{m.topic()}[{m.partition()}]: {m.error()}")
                        continue
                    key = (m.topic(), m.partition())
                    if key not in found:
                        found[key] = m.timestamp()[1]
                        self.reader.pause([TopicPartition(*key)])
        finally:
            self.reader.resume(tps)  # a partition stays paused across assignments: the next read needs it
            self.reader.unassign()
        return found

    def close(self) -> None:
        for c in (self.progress, self.reader):
            try:
                c.close()
            except RuntimeError:
                pass

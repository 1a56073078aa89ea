"""Consumer offset translation against real clusters.

Translation (``translate_group``, ``translate_offset``): for each source topic-partition the
group committed, a binary search over the target partition reads single records (seek +
consume, forward past local and other-origin records) to find the first replicated record of
this origin with origin offset >= the committed offset; ``kafka_dr.core.offsets`` decides the
result from what was found, the flow's progress and the partitions' ranges. Cost per
partition: about log2(records) short reads, plus the runs of local records skipped.

When the source is down (failover), its committed offsets cannot be read: pass
``source_offsets`` explicitly, e.g. from :func:`~kafka_dr.kafka.group_offsets.last_synced_offsets`,
which reads what the offset sync (:mod:`kafka_dr.workflows.offset_sync`) recorded on the
target. The probes are :mod:`kafka_dr.kafka.partition_probe`'s.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import NamedTuple, TypeVar

from confluent_kafka import Consumer, KafkaException, TopicPartition

from kafka_dr.core import offsets as core
from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.loop import router_for
from kafka_dr.core.offsets import Translation
from kafka_dr.core.translation_hints import Hints, narrowed
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.group_offsets import read_group_offsets
from kafka_dr.kafka.group_position import GroupPlacer
from kafka_dr.kafka.partition_probe import TIMEOUT, PartitionProbe, timestamp_at
from kafka_dr.kafka.progress_store import progress_reader, read_committed_progress
from kafka_dr.kafka.range_reads import FAST_EOF, count_copied
from kafka_dr.kafka.topics import partition_ranges

log = logging.getLogger(__name__)

SOURCE_PROBE_TIMEOUT = 5.0
#: a replica further behind a group than this many offsets is not read through to count records
BEHIND_COUNT_LIMIT = 100_000
#: a position at most this many origin offsets past a record found before is read on to, not searched
SCAN_LIMIT = 5_000
#: partitions searched at once when groups move (failover, failback): their searches wait on
#: round trips to a loaded survivor, one after another they added up to seconds of the RTO
MOVE_PROBE_THREADS = 4


T, R = TypeVar("T"), TypeVar("R")


class _Readers(NamedTuple):
    """One thread's consumers: of the target, and of the source while it answers."""

    target: Consumer
    source: Consumer | None


class Translator:
    """Translates offsets of one flow; holds the clients (close it, or use ``with``)."""

    def __init__(
        self,
        cfg: DrConfig,
        flow: FlowConfig,
        resolve: SecretResolver | None = None,
        margin_seconds: float | None = None,
        source_available: bool | None = None,
        probe_threads: int = 1,
    ):
        """``probe_threads``: partitions searched at once, each thread with readers of its own
        (a search waits on round trips far more than it computes: a failover's move of one
        group's partitions goes as fast as its slowest partition, not their sum)."""
        self.cfg, self.flow, self.resolve = cfg, flow, resolve
        self.router = router_for(cfg, flow)
        self.hints = Hints()  # what earlier searches found: narrows the next ones
        self.margin = cfg.thresholds.timestamp_margin_seconds if margin_seconds is None else margin_seconds
        tgt = cfg.cluster(flow.target)
        self.t_admin = clients.admin(tgt, resolve)  # kept referenced until its futures complete
        self.t_consumer = self._target_reader()
        self.s_admin = self.s_consumer = None
        self._probe_threads = max(1, probe_threads)
        self._pool: ThreadPoolExecutor | None = None
        self._local = threading.local()  #: a pool thread's own readers
        self._pool_readers: list[Consumer] = []
        self._lock = threading.Lock()
        self.p_consumer = None  #: reads the flow's progress, made on first use
        #: per source (topic, partition): the next source offset the flow copies, as the last
        #: :meth:`translate` read it (``None``: no progress recorded)
        self.progress: dict[tuple[str, int], int | None] = {}
        if source_available is not False:
            src = cfg.cluster(flow.source)
            admin = clients.admin(src, resolve)
            try:
                admin.list_topics(timeout=SOURCE_PROBE_TIMEOUT)
                self.s_admin = admin
                self.s_consumer = self._source_reader()
            except KafkaException as e:
                if source_available:
                    raise clients.ClusterUnreachable(
                        f"flow {flow.name}: source cluster {flow.source!r} did not answer: {e.args[0]}"
                    ) from None
                log.warning(
                    "flow %s: source %s unreachable; translating without its ranges or timestamps",
                    flow.name,
                    flow.source,
                )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        for c in (self.t_consumer, self.s_consumer, self.p_consumer, *self._pool_readers):
            if c is not None:
                c.close()
        self.t_consumer = self.s_consumer = self.p_consumer = None
        self._pool_readers = []

    def _target_reader(self) -> Consumer:
        return clients.consumer(
            self.cfg.cluster(self.flow.target),
            self.cfg.names.reader_group("offset-translation"),
            self.resolve,
            **{
                "enable.partition.eof": True,
                "fetch.max.bytes": 1 << 20,
                "max.partition.fetch.bytes": 256 << 10,
                # probes re-assign often: a fetch long-polling at the
                # log end must not hold the next probe for 500 ms
                "fetch.wait.max.ms": 10,
            },
        )

    def _source_reader(self) -> Consumer:
        return clients.consumer(
            self.cfg.cluster(self.flow.source),
            self.cfg.names.reader_group("offset-translation"),
            self.resolve,
            **FAST_EOF,
        )

    def _pool_thread_readers(self) -> _Readers:
        """A pool thread's own readers, made on its first search (a consumer serves one thread)."""
        mine = getattr(self._local, "readers", None)
        if mine is None:
            mine = _Readers(self._target_reader(), self._source_reader() if self.s_admin is not None else None)
            self._local.readers = mine
            with self._lock:
                self._pool_readers += [c for c in mine if c is not None]
        return mine

    def target_topic(self, topic: str) -> str:
        t = self.router.target_topic(topic)
        if t is None:
            raise ValueError(f"flow {self.flow.name} does not replicate {self.flow.source}/{topic}")
        return t

    def translate(self, group: str, source_offsets: dict[tuple[str, int], int]) -> list[Translation]:
        keys = sorted(source_offsets)
        if not keys:
            return []
        targets = {k: self.target_topic(k[0]) for k in keys}
        t_tps = [TopicPartition(targets[k], k[1]) for k in keys]
        # target ends before progress: a record copied in between is after the end we search to
        t_ranges = partition_ranges(self.t_admin, t_tps, self.flow.target)
        if self.p_consumer is None:
            self.p_consumer = progress_reader(self.cfg, self.flow, self.resolve)
        keys_t = [(targets[k], k[1]) for k in keys]
        progress = read_committed_progress(self.cfg, self.flow, keys_t, self.resolve, consumer=self.p_consumer)
        self.progress.update({k: progress.get((targets[k], k[1]), {}).get("next_offset") for k in keys})
        s_ranges = None
        if self.s_admin is not None:
            s_ranges = partition_ranges(self.s_admin, [TopicPartition(t, p) for t, p in keys], self.flow.source)

        def one(k: tuple[str, int], readers: _Readers) -> Translation:
            prog = self.progress[k]
            s_range = None if s_ranges is None else s_ranges[k]
            return self._one(
                group, *k, source_offsets[k], targets[k], t_ranges[(targets[k], k[1])], prog, s_range, readers
            )

        # each partition is searched by one thread: the hints of a partition are never shared
        return self.per_partition(one, keys)

    def per_partition(self, fn: Callable[[T, _Readers], R], items: list[T]) -> list[R]:
        """``fn(item, readers)`` for each of ``items`` (one partition's work each), in order; up
        to ``probe_threads`` at once, each thread with readers of its own."""
        if self._probe_threads == 1 or len(items) <= 1:
            return [fn(item, _Readers(self.t_consumer, self.s_consumer)) for item in items]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._probe_threads, thread_name_prefix=f"translate-{self.flow.name}")
        return list(self._pool.map(lambda item: fn(item, self._pool_thread_readers()), items))

    def _one(self, group, topic, p, x, target_topic, t_range, prog, s_range, readers: _Readers) -> Translation:
        probe = PartitionProbe(
            readers.target, self.flow.target, target_topic, p, t_range[1], self.flow.source, topic, p
        )
        where = (target_topic, p)
        if prog is not None and x >= prog:
            # every copy on the target is of an origin offset below the progress (read after the
            # target's range): none is at or after X, and nothing needs reading to know it
            found, earlier, probes = None, None, 0
        else:
            lo, hi, below, above = narrowed(t_range[0], t_range[1], *self.hints.around(where, x))
            if below is not None and x - below.origin_offset <= SCAN_LIMIT:
                # a position a little past one found before: reading on from there is one fetch,
                # where a search seeks a dozen times
                found, probes = probe.first_from(lo, at_least=x), 1
                earlier = probe.passed
            else:
                found, earlier, probes = core.search(probe.first_from, lo, hi, x)
            found, earlier = found or above, earlier or below
            self.hints.add(where, found, earlier)
        log.info(
            "flow %s: %s[%d]@%d -> %s[%d]: %d probes, %d records read",
            self.flow.name,
            topic,
            p,
            x,
            target_topic,
            p,
            probes,
            probe.records_read,
        )
        if found is None and earlier is None and prog is None and s_range is not None and s_range[1] > s_range[0]:
            return self._by_timestamp(group, topic, p, x, target_topic, t_range, s_range, readers)
        behind, effective = None, None
        if (
            prog is not None
            and found is None
            and prog < x <= prog + BEHIND_COUNT_LIMIT
            and readers.source is not None
            and (s_range is None or x <= s_range[1])
        ):
            # what lies between the copy position and X: records, or markers and filtered copies
            n, last = count_copied(readers.source, self.flow.source, self.router.transform(), {(topic, p): (prog, x)})[
                (topic, p)
            ]
            behind, effective = n, (last + 1 if last is not None else prog)
        t = core.translate_from_candidates(
            group=group,
            topic=topic,
            partition=p,
            source_offset=x,
            target_topic=target_topic,
            target_range=t_range,
            progress=prog,
            found=found,
            earlier=earlier,
            source_range=s_range,
            origin=self.flow.source,
            behind_copied=behind,
        )
        return replace(t, effective_offset=effective) if effective is not None else t

    def _by_timestamp(self, group, topic, p, x, target_topic, t_range, s_range, readers: _Readers) -> Translation:
        ts = None
        at = x if x < s_range[1] else x - 1
        if s_range[0] <= at < s_range[1]:
            ts = timestamp_at(readers.source, topic, p, at, s_range[1])
        off = None
        if ts is not None:
            lookup = core.timestamp_target(ts, self.margin)
            got = readers.target.offsets_for_times([TopicPartition(target_topic, p, lookup)], timeout=TIMEOUT)[0]
            if got.error is not None:
                raise RuntimeError(
                    f"{self.flow.target}/{target_topic}[{p}]: timestamp lookup {lookup}: {got.error.str()}"
                )
            off = got.offset
        return core.translate_by_timestamp(
            group=group,
            topic=topic,
            partition=p,
            source_offset=x,
            target_topic=target_topic,
            target_end=t_range[1],
            source_ts_ms=ts,
            margin_seconds=self.margin,
            offset_for_ts=off,
            origin=self.flow.source,
        )


def translate_group(
    cfg: DrConfig,
    flow: FlowConfig,
    group: str,
    resolve: SecretResolver | None = None,
    margin_seconds: float | None = None,
    source_offsets: dict[tuple[str, int], int] | None = None,
    synced: dict | None = None,
    source_available: bool | None = None,
) -> list[Translation]:
    """Translate ``group``'s committed offsets from ``flow.source`` to ``flow.target``: in
    active/active, the earliest target position that skips none of the records it had not
    read (:mod:`kafka_dr.kafka.group_position`).

    :param source_offsets: ``{(topic, partition): offset}`` to translate instead of reading
        the group's commits on the source (which is how a failover works with the source down).
    :param synced: ``{(topic, partition): SyncedPosition}`` the offset sync recorded: which of
        the target's own records the group had read, when the source cannot be asked.
    :param source_available: with ``source_offsets``, whether the source is up when the caller
        knows (``None``: probe it)
    """
    if source_offsets is None:
        source_offsets = read_group_offsets(cfg, flow, group, resolve)
        available = True
    else:
        available = source_available  # None: use the source if it answers
    with Translator(cfg, flow, resolve, margin_seconds, source_available=available) as tr:
        placer = GroupPlacer(cfg, flow, tr, resolve)
        try:
            return placer.place(tr.translate(group, dict(source_offsets)), synced)
        finally:
            placer.close()


def translate_offset(
    cfg: DrConfig,
    flow: FlowConfig,
    topic: str,
    partition: int,
    source_offset: int,
    resolve: SecretResolver | None = None,
    group: str = "",
    margin_seconds: float | None = None,
) -> Translation:
    """Translate one source offset of ``topic[partition]``."""
    with Translator(cfg, flow, resolve, margin_seconds) as tr:
        return tr.translate(group, {(topic, partition): source_offset})[0]

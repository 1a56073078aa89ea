"""Consumer groups that read the game-day topics as an application would, every read recorded.

A :class:`GroupReader` subscribes one group on one cluster (read_committed, so an aborted
record is never handed over), records each record it reads (:class:`~kafka_dr.gameday.model.Read`)
and commits the batch's offsets after recording it. :meth:`Readers.move` closes the group on
its cluster and reopens it on another, where it starts from the offsets committed there (a
failover commits translated ones; with none, from the earliest). The first read after a move
is recorded: the game day's RTO runs from the failover's trigger to it.

A cluster that is down delays a reader, never stops it: errors are recorded and it polls on.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaError, TopicPartition

from kafka_dr.gameday.model import MAX_ERRORS, NAMES, GamedayNames, Move, Read, identify
from kafka_dr.kafka import clients


@dataclass(frozen=True)
class ReaderSettings:
    batch: int = 500  #: records per poll; their offsets are committed together
    poll_s: float = 0.5
    #: a consumer whose cluster is down may not commit or close in time: it is left behind
    close_timeout_s: float = 5.0
    backoff_s: float = 1.0
    #: a consumer left behind on a cluster that went down holds the group's rebalance back this
    #: long once the cluster is back; librdkafka's default is 45 s
    session_timeout_s: float = 10.0


class ReadLog:
    """Every read and move of every group; safe to use from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reads: list[Read] = []
        self._seen: dict[str, set[str]] = {}
        self._moves: list[Move] = []
        self._errors: list[str] = []
        self.error_count = 0

    def add(self, group: str, reads: list[Read]) -> None:
        with self._lock:
            self._reads += reads
            self._seen.setdefault(group, set()).update(r.gd_id for r in reads)
            for i, m in enumerate(self._moves):
                if m.group == group and m.first_read_at is None:
                    first = next((r.at for r in reads if r.cluster == m.target and r.at >= m.at), None)
                    if first is not None:
                        self._moves[i] = m._replace(first_read_at=first)

    def moved(self, move: Move) -> None:
        with self._lock:
            self._moves.append(move)

    def error(self, where: str, message: str) -> None:
        with self._lock:
            self.error_count += 1
            if len(self._errors) < MAX_ERRORS:
                self._errors.append(f"{time.time():.3f} {where}: {message}")

    def unread(self, group: str, ids: Collection[str]) -> set[str]:
        """The ids of ``ids`` that ``group`` has not read yet."""
        with self._lock:
            seen = self._seen.get(group, set())
            return {i for i in ids if i not in seen}

    def reads(self) -> list[Read]:
        with self._lock:
            return list(self._reads)

    def moves(self) -> list[Move]:
        with self._lock:
            return list(self._moves)

    def errors(self) -> list[str]:
        with self._lock:
            return list(self._errors)


class GroupReader(threading.Thread):
    """One consumer group on one cluster at a time; the consumer lives in this thread only."""

    def __init__(self, group: str, cluster_cfg, topics: Collection[str], log: ReadLog, settings: ReaderSettings):
        super().__init__(name=f"gameday-reader-{group}", daemon=True)
        self.group, self.cluster, self.topics, self.log, self.settings = group, cluster_cfg, list(topics), log, settings
        self.stopping = threading.Event()
        self.requests: queue.Queue = queue.Queue()
        self.consumer = None
        self.positions: dict[tuple[str, int], int] = {}  #: next offset per partition read by this consumer
        self.parked = False  #: stopped where it read (its last batch committed) until the next move

    @property
    def where(self) -> str:
        return f"group {self.group} on {self.cluster.name}"

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self._switch_if_asked()
                if self.parked:
                    self.stopping.wait(self.settings.poll_s)
                    continue
                if self.consumer is None:
                    self.consumer = self._open()
                self._read_batch()
            except Exception as e:  # the reader lives on whatever its cluster does
                self.log.error(self.where, f"{type(e).__name__}: {e}")
                self.stopping.wait(self.settings.backoff_s)
        self._close()

    def move(self, cluster_cfg, timeout: float, abandon: bool = False) -> Move:
        """Ask the thread to move the group to ``cluster_cfg``; returns the move once the
        group is open there. ``abandon``: its cluster is dead and the app died with it, so
        nothing is committed or closed there first (its replacement starts on the new one)."""
        return self._ask(cluster_cfg, abandon, timeout, f"the move to {cluster_cfg.name}")

    def park(self, timeout: float) -> None:
        """Ask the thread to stop reading (its last batch committed, the group left) until the
        next :meth:`move`; returns once it has."""
        self._ask(None, False, timeout, f"stopping on {self.cluster.name}")

    def _ask(self, cluster_cfg, abandon: bool, timeout: float, what: str):
        """Hand the reading thread a request (a cluster to move to; ``None``: park) and wait
        for its answer."""
        done: queue.Queue = queue.Queue()
        self.requests.put((cluster_cfg, time.time(), done, abandon))
        try:
            return done.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"group {self.group}: {what} took over {timeout:.0f}s") from None

    def _switch_if_asked(self) -> None:
        try:
            cluster_cfg, requested_at, done, abandon = self.requests.get_nowait()
        except queue.Empty:
            return
        if cluster_cfg is None:
            self._close()
            self.parked = True
            done.put(None)
            return
        self.parked = False
        source = self.cluster.name
        if abandon:
            c, self.consumer = self.consumer, None
            if c is not None:  # closed in the background: a client of a dead cluster waits out its timeouts
                threading.Thread(target=_quietly(c.close), daemon=True).start()
        else:
            self._close()
        move = Move(self.group, source, cluster_cfg.name, requested_at, time.time())
        self.log.moved(move)
        self.cluster = cluster_cfg
        done.put(move)  # the group opens on the new cluster next (and retries there if that fails)

    def _open(self):
        def on_error(err) -> None:
            self.log.error(self.where, err.str())

        def on_commit(err, partitions) -> None:
            failed = [f"{tp.topic}[{tp.partition}]" for tp in partitions or () if tp.error is not None]
            if err is not None or failed:
                self.log.error(self.where, f"commit failed: {err.str() if err else ', '.join(failed)}")

        session = {"session.timeout.ms": int(self.settings.session_timeout_s * 1000), "heartbeat.interval.ms": 2000}
        c = clients.consumer(self.cluster, self.group, error_cb=on_error, on_commit=on_commit, **session)
        c.subscribe(self.topics)
        self.positions = {}
        return c

    def _read_batch(self) -> None:
        msgs = self.consumer.consume(num_messages=self.settings.batch, timeout=self.settings.poll_s)
        here, at = self.cluster.name, time.time()
        reads: list[Read] = []
        ends: dict[tuple[str, int], int] = {}
        for m in msgs:
            if m.error() is not None:
                if m.error().code() != KafkaError._PARTITION_EOF:
                    self.log.error(self.where, m.error().str())
                continue
            gd, origin = identify(m.headers(), here)
            reads.append(Read(gd, self.group, here, m.topic(), m.partition(), m.offset(), at, origin))
            ends[(m.topic(), m.partition())] = m.offset() + 1
        if not reads:
            return
        self.log.add(self.group, reads)
        self.positions.update(ends)
        # committed after the reads are recorded: a read is never lost, at worst read again. Not
        # waited for: a synchronous commit waits for a coordinator without end while the cluster is down
        self.consumer.commit(offsets=_offsets(ends), asynchronous=True)

    def _close(self) -> None:
        """Commit what was read (waiting this time) and close the consumer (it leaves the
        group). A call that does not return in time (the cluster is down) leaves the consumer
        behind, so the reader goes on."""
        c, self.consumer = self.consumer, None
        if c is None:
            return
        committed = not self.positions or self._bounded(
            "the last commit", lambda: c.commit(offsets=_offsets(self.positions), asynchronous=False)
        )
        if committed:  # a commit that hangs means the cluster is gone: closing would hang as well
            self._bounded("closing the consumer", c.close)

    def _bounded(self, what: str, call) -> bool:
        """Run ``call`` in a helper thread; False (and the error recorded) when it failed or
        did not return within ``close_timeout_s``."""
        failed: list[str] = []

        def run() -> None:
            try:
                call()
            except Exception as e:  # reported below, as any failure of this reader
                failed.append(f"{type(e).__name__}: {e}")

        helper = threading.Thread(target=run, daemon=True)
        helper.start()
        helper.join(self.settings.close_timeout_s)
        if helper.is_alive():
            failed.append(f"did not return within {self.settings.close_timeout_s:.0f}s")
        for f in failed:
            self.log.error(self.where, f"{what}: {f}")
        return not failed


def _offsets(ends: Mapping[tuple[str, int], int]) -> list[TopicPartition]:
    return [TopicPartition(t, p, o) for (t, p), o in ends.items()]


class Readers:
    """The game day's consumer groups, e.g. ``gd-app-east`` on east and ``gd-app-west`` on west."""

    def __init__(self, names: GamedayNames = NAMES, settings: ReaderSettings | None = None) -> None:
        self.names, self.settings = names, settings or ReaderSettings()
        self.log = ReadLog()
        self.groups: dict[str, GroupReader] = {}

    def add(self, group: str, cluster_cfg, topics: Collection[str] | None = None) -> GroupReader:
        """Start ``group`` on ``cluster_cfg``, subscribed to ``topics`` (default: every
        game-day topic, the transactional one included: no aborted record may be delivered)."""
        if group in self.groups:
            raise ValueError(f"game-day readers: group {group!r} is already reading")
        reader = GroupReader(group, cluster_cfg, topics or self.names.topics, self.log, self.settings)
        self.groups[group] = reader
        reader.start()
        return reader

    def start_apps(self, clusters: Mapping) -> Readers:
        """One group per app on the app's home cluster (``clusters``: app -> ``ClusterConfig``)."""
        for app in self.names.apps:
            self.add(self.names.group(app), clusters[app])
        return self

    def move(self, group: str, cluster_cfg, timeout: float = 120.0, abandon: bool = False) -> Move:
        """Close ``group`` where it reads (its last batch committed) and reopen it on ``cluster_cfg``;
        ``abandon``: reopen only, as an app restarted away from a dead cluster (:meth:`GroupReader.move`)."""
        return self._reader(group).move(cluster_cfg, timeout, abandon)

    def park(self, group: str, timeout: float = 120.0) -> None:
        """Stop ``group`` where it reads, its last batch committed, until it is moved."""
        self._reader(group).park(timeout)

    def where(self, group: str) -> str:
        return self._reader(group).cluster.name

    def wait_read(self, group: str, ids: Collection[str], timeout: float, every: float = 0.5) -> set[str]:
        """Wait until ``group`` has read every id of ``ids``; returns those still unread."""
        deadline = time.monotonic() + timeout
        left = self.log.unread(group, ids)
        while left and time.monotonic() < deadline:
            time.sleep(every)
            left = self.log.unread(group, left)
        return left

    def first_read(self, group: str, timeout: float, every: float = 0.2) -> float | None:
        """When ``group`` first read after its latest move (the end of an RTO), waiting for it
        up to ``timeout``; None if it has not read yet."""
        deadline = time.monotonic() + timeout
        while True:
            last = [m for m in self.log.moves() if m.group == group][-1:]
            if not last:
                raise ValueError(f"game-day readers: group {group!r} has not moved")
            if last[0].first_read_at is not None or time.monotonic() >= deadline:
                return last[0].first_read_at
            time.sleep(every)

    def reads(self) -> list[Read]:
        return self.log.reads()

    def moves(self) -> list[Move]:
        return self.log.moves()

    def errors(self) -> list[str]:
        return self.log.errors()

    def stop(self, timeout: float = 60.0) -> None:
        for r in self.groups.values():
            r.stopping.set()
        deadline = time.monotonic() + timeout
        for r in self.groups.values():
            r.join(max(0.0, deadline - time.monotonic()))
        stuck = [g for g, r in self.groups.items() if r.is_alive()]
        if stuck:
            self.log.error("readers", f"still running after {timeout:.0f}s: {', '.join(stuck)}")

    def _reader(self, group: str) -> GroupReader:
        if group not in self.groups:
            raise ValueError(f"game-day readers: unknown group {group!r} (known: {', '.join(self.groups)})")
        return self.groups[group]


def _quietly(call):
    def run() -> None:
        try:
            call()
        except Exception:  # noqa: BLE001, S110 - the dead cluster's client: nothing to report
            pass

    return run

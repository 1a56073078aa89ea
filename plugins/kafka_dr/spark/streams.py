"""Streaming tasks whose copying outlives them: copy threads kept by the Spark Python worker
from one task to the next, so Spark's pause between two tasks is no pause in the data
(docs/replication.md, "Continuous flows: streaming tasks"). One task per flow (the default)
has one thread copying all its partitions a transaction at a time (:class:`TaskStream`);
with several tasks each partition has its own thread and transactions (:class:`PartitionStream`).

- a task *attaches* to its threads (starting those that do not run), renewing their lease to
  its end plus :data:`GRACE_SECONDS`, and returns per partition what was committed since the
  previous task's rows (:meth:`_Stream.snapshot`) without stopping the copy;
- a thread stops after its current transaction when its lease runs out, when the stop marker
  appears (the task then waits for it, so its rows count everything) or, for a whole task,
  when the flow's partitions changed; a producer fenced or lost *between* tasks ends it
  quietly (a newer copier owns the partitions), during a task the copier redoes;
- a thread's failure, or a thread stuck (:meth:`_Stream.stuck`), fails the attached task;
- exactly once is the copiers' (fixed transactional ids, progress committed with the records).

When an executor is lost, Spark runs its task again elsewhere, whose copier fences the old one.
So a copy must not outlive its executor nor keep a producer past its lease:

- a thread copies only while the worker's parent (pyspark's daemon, or the executor JVM) is the
  one it started under: orphaned, it stops after its transaction and redoes nothing, so it never
  fences the re-run task back;
- when a copy ends, its copier lets its producer go (``release``): the next copy in this worker
  begins with ``init_transactions``, fencing whoever copied meanwhile, and reads progress after it.
"""

from __future__ import annotations

import faulthandler
import functools
import gc
import os
import threading
import time
from collections.abc import Callable

from kafka_dr.kafka.copier import RangeCopier
from kafka_dr.kafka.copy_errors import producer_lost
from kafka_dr.kafka.copy_spec import COUNTED, OPEN, RangeResult, RangeSpec
from kafka_dr.kafka.task_copier import TaskCopier
from kafka_dr.kafka.transactions import CALL_GRACE_SECONDS

#: how long a partition's thread copies past the end of the last task that attached it:
#: longer than Spark's pause between two tasks (seconds), short enough that a stopped or
#: failed query's threads do not linger
GRACE_SECONDS = 30.0

#: a thread inside one chunk for this long is stuck: longer than the slowest legitimate
#: chunk commit (flush up to 120 s, offsets 15 s, commit 60 s)
STUCK_SECONDS = 240.0
#: a task still running this long past its end has a frozen worker (the task's own loop ends it
#: on time otherwise): its threads' stacks are dumped, well before the driver's stall limit
#: (kafka_dr.spark.supervision.STALL_SECONDS) stops the query
FROZEN_DUMP_SECONDS = 60.0

#: how often a partition's lag (the high watermark of the last fetch) is read: a local call,
#: but it takes librdkafka's locks with the GIL held, so not on every commit
LAG_EVERY_SECONDS = 1.0

#: the counters a row reports as "since the previous row"
COUNTERS = COUNTED

#: this Python worker's threads, by (copier key..., topic, partition)
_streams: dict[tuple, _Stream] = {}


class _Tally:
    """What one partition's copy committed since the previous row (one metrics row per task)."""

    def __init__(self, spec: RangeSpec, lag_of: Callable[[RangeSpec, int], int]) -> None:
        self.spec, self.lag_of = spec, lag_of
        self.position = spec.start
        self.since = spec.start
        self.taken_at = time.monotonic()
        self.counts = dict.fromkeys(COUNTERS, 0)
        self.latencies: list[int] = []
        self.lag = 0
        self._started = False
        self._lag_at, self._lag_high = 0.0, 0  #: when the lag was last read, and the high watermark then
        self._result: RangeResult | None = None  #: the copy() result being counted
        self._seen = dict.fromkeys(COUNTERS, 0)  #: its counters already added to ``counts``
        self.lost: tuple[int, int] | None = None  #: offsets (first, last) lost to retention since the previous row

    def committed(self, lock: threading.Lock, result: RangeResult, next_offset: int, latencies: list) -> None:
        now = time.monotonic()
        if now - self._lag_at >= LAG_EVERY_SECONDS:
            self._lag_at, self._lag_high = now, next_offset + self.lag_of(self.spec, next_offset)
        lag = max(0, self._lag_high - next_offset)
        with lock:
            if not self._started:  # the first call: the copy's real start (committed progress)
                self._started, self.since = True, next_offset
            if result is not self._result:  # a new copy() (continued after a renewal, or redone)
                self._result, self._seen = result, dict.fromkeys(COUNTERS, 0)
            if result.lost_to_retention > self._seen["lost_to_retention"] and result.lost_first is not None:
                first, last = result.lost_first, result.lost_last
                self.lost = (first, last) if self.lost is None else (min(self.lost[0], first), max(self.lost[1], last))
            for k in COUNTERS:
                v = getattr(result, k)
                self.counts[k] += v - self._seen[k]
                self._seen[k] = v
            self.position, self.lag = next_offset, lag
            self.latencies += latencies
        latencies.clear()

    def snapshot(self, flow: str, planned_start: int) -> dict:
        """What was committed since the previous snapshot, as one metrics row (under the lock)."""
        now = time.monotonic()
        lat = sorted(self.latencies)
        row = RangeResult(
            flow,
            self.spec.topic,
            self.spec.partition,
            self.spec.target_topic,
            planned_start,
            self.since,
            self.position,
            **self.counts,
            lag=self.lag,
            seconds=now - self.taken_at,
            latency_p50_ms=float(lat[len(lat) // 2]) if lat else None,
            latency_p99_ms=float(lat[min(len(lat) - 1, int(len(lat) * 0.99))]) if lat else None,
            lost_first=self.lost[0] if self.lost else None,
            lost_last=self.lost[1] if self.lost else None,
        )
        self.since, self.taken_at, self.latencies, self.lost = self.position, now, [], None
        self.counts = dict.fromkeys(COUNTERS, 0)
        return row.to_dict()


class _Stream:
    """A background copy that outlives its tasks (see the module docstring): the lease, the
    stuck check and the thread. Subclasses copy one partition or a whole task's."""

    def __init__(self, copier: RangeCopier | TaskCopier, specs: list[RangeSpec], marker: str | None, name: str) -> None:
        self.copier, self.specs, self.marker = copier, specs, marker
        self.lock = threading.Lock()
        self.lease = 0.0  #: monotonic time after which the copy stops
        self.task_end = 0.0  #: end of the attached task; past it, a lost producer ends the copy
        self.finished = False
        self.error: BaseException | None = None
        self.beat = time.monotonic()  #: last time the copy loop came round (stuck detection)
        self.parent = os.getppid()  #: the worker's parent while its executor lives (module docstring)
        self.tallies = {(s.topic, s.partition): _Tally(s, copier.lag) for s in specs}
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _copy(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while True:
            try:
                self._copy()
            except BaseException as e:  # noqa: BLE001 - reported by the attached task
                with self.lock:
                    self.finished = True
                    self.copier.release()
                    if not (producer_lost(e) and time.monotonic() >= self.task_end):
                        self.error = e  # between tasks, a lost producer just ends the copy
                return
            with self.lock:
                if self._until():
                    self.finished = True
                    self.copier.release()  # under the lock: a new copy takes the copier only after this
                    return
            # the lease was renewed while the copy was finishing its last transaction: go on

    def _until(self) -> bool:
        self.beat = time.monotonic()
        return self.beat >= self.lease or (self.marker is not None and os.path.exists(self.marker)) or self.orphaned()

    def _may_redo(self) -> bool:
        return time.monotonic() < self.task_end and not self.orphaned()

    def orphaned(self) -> bool:
        """The executor that started this worker is gone (the worker was re-parented)."""
        return os.getppid() != self.parent

    def _committed(self, result: RangeResult, next_offset: int, latencies: list) -> None:
        self.tallies[(result.topic, result.partition)].committed(self.lock, result, next_offset, latencies)

    # --- the task's side -----------------------------------------------------------------

    def attach(self, task_end: float) -> bool:
        """Renew the lease for a task ending at ``task_end``; False if the copy already ended."""
        with self.lock:
            if self.finished:
                return False
            self.task_end = max(self.task_end, task_end)
            self.lease = max(self.lease, task_end + GRACE_SECONDS)
            return True

    def start(self, task_end: float) -> _Stream:
        self.attach(task_end)
        self.thread.start()
        return self

    def stop(self) -> bool:
        """End the copy after its current transaction, and wait for it (a task's partitions
        changed); False, without waiting longer, once it is :meth:`stuck` in a Kafka call."""
        with self.lock:
            self.lease = 0.0
        deadline = time.monotonic() + STUCK_SECONDS
        while self.thread.is_alive() and time.monotonic() < deadline:
            if self.stuck(time.monotonic()):
                return False
            self.thread.join(0.1)
        return not self.thread.is_alive()

    def stuck(self, now: float) -> bool:
        """Alive but no loop round for :data:`STUCK_SECONDS`, or inside a transactional call well
        past its own timeout (the copier's ``hung_after``, :func:`~kafka_dr.kafka.transactions.watched_call`)."""
        hung_after = getattr(self.copier, "hung_after", None)
        return self.thread.is_alive() and (
            now - self.beat > STUCK_SECONDS or (hung_after is not None and now > hung_after)
        )

    def names(self) -> str:
        return ", ".join(f"{s.topic}[{s.partition}]" for s in self.specs)

    def snapshot(self, topic: str, partition: int, planned_start: int) -> dict:
        with self.lock:
            return self.tallies[(topic, partition)].snapshot(self.copier.flow.name, planned_start)


class PartitionStream(_Stream):
    """One partition's background copy, in transactions of its own (``--tasks`` > 1)."""

    def __init__(self, copier: RangeCopier, spec: RangeSpec, marker: str | None) -> None:
        super().__init__(copier, [spec], marker, f"kafka-dr-{spec.topic}-{spec.partition}")
        self.spec = spec

    def _copy(self) -> None:
        self.copier.copy(self.spec, until=self._until, on_commit=self._committed, may_redo=self._may_redo)


class TaskStream(_Stream):
    """All of a task's partitions in one background copy and one transaction at a time
    (:mod:`kafka_dr.kafka.task_copier`; one task per flow, the default)."""

    def __init__(self, copier: TaskCopier, specs: list[RangeSpec], marker: str | None) -> None:
        super().__init__(copier, specs, marker, "kafka-dr-task")

    def _copy(self) -> None:
        self.copier.copy(self.specs, until=self._until, on_commit=self._committed, may_redo=self._may_redo)


def run_task(
    ranges: list[tuple[str, int, int, str]],
    seconds: float,
    marker: str | None,
    key: tuple,
    copier_for: Callable[[tuple], RangeCopier | TaskCopier],
    forget: Callable[[tuple], None],
    flow: str,
    whole: bool = False,
) -> list[dict]:
    """One streaming task: attach to (or start) its copies, wait ``seconds`` (or for the stop
    marker, or a failure), return one row per range. ``whole``: the task holds all of the flow's
    partitions and copies them in one transaction at a time (a :class:`TaskStream`, its copier
    ``copier_for((TASK,))``); otherwise a :class:`PartitionStream` per range
    (``copier_for((topic, partition))``)."""
    task_end = time.monotonic() + seconds
    # if this worker freezes (a C call holding the GIL), its threads' stacks still reach the
    # log, from a thread of faulthandler's own, before the driver's watchdog stops the query
    faulthandler.dump_traceback_later(seconds + FROZEN_DUMP_SECONDS, exit=False)
    try:
        streams = (
            _task_streams(ranges, task_end, marker, key, copier_for, forget, flow)
            if whole
            else _partition_streams(ranges, task_end, marker, key, copier_for)
        )
        return _attached(streams, ranges, task_end, marker, key, forget, flow)
    finally:
        faulthandler.cancel_dump_traceback_later()


#: the stream key of a whole task's copy
TASK = "task"


def _renewed(k: tuple, task_end: float) -> _Stream | None:
    """The running stream ``k``, its lease renewed, or None; a stream that failed between tasks
    is forgotten and its error raised (this task reports it)."""
    s = _streams.get(k)
    if s is not None and not s.attach(task_end):
        _streams.pop(k, None)
        if s.error is not None:
            raise s.error
        return None
    return s


def _partition_streams(ranges, task_end: float, marker: str | None, key: tuple, copier_for) -> dict[tuple, _Stream]:
    streams = {}
    for topic, p, start, target in ranges:
        k = (*key, topic, p)
        s = _renewed(k, task_end)
        if s is None:
            s = _streams[k] = PartitionStream(
                copier_for((topic, p)), RangeSpec(topic, p, start, OPEN, target), marker
            ).start(task_end)
        streams[(topic, p)] = s
    return streams


def _task_streams(
    ranges, task_end: float, marker: str | None, key: tuple, copier_for, forget, flow: str
) -> dict[tuple, _Stream]:
    k = (*key, TASK)
    specs = [RangeSpec(topic, p, start, OPEN, target) for topic, p, start, target in ranges]
    s = _renewed(k, task_end)
    if s is not None and [(x.topic, x.partition) for x in s.specs] != [(x.topic, x.partition) for x in specs]:
        # the flow's partitions changed (a topic was added): a new copy for the new set, once
        # the old one has ended its transaction; one stuck in a Kafka call fails the task now,
        # as a stuck attached copy does, rather than holding it until the query's stall limit
        stopped = s.stop()
        _streams.pop(k, None)
        if not stopped:
            forget((TASK,))
            raise _not_returned(flow, [s])
        if s.error is not None:
            raise s.error
        s = None
    if s is None:
        s = _streams[k] = TaskStream(copier_for((TASK,)), specs, marker).start(task_end)
    return {(TASK,): s}


def _attached(
    streams: dict[tuple, _Stream],
    ranges,
    task_end: float,
    marker: str | None,
    key: tuple,
    forget: Callable[[tuple], None],
    flow: str,
) -> list[dict]:
    """Watch the task's streams (by stream key: ``_streams`` holds them under ``(*key, *stream
    key)``) until its end, then return one row per range."""
    _freeze_once()
    key_of = {id(s): k for k, s in streams.items()}
    running = list(streams.values())

    def stopping() -> bool:
        return marker is not None and os.path.exists(marker)

    while time.monotonic() < task_end and not stopping() and not any(s.error is not None for s in running):
        now = time.monotonic()
        stuck = [s for s in running if s.stuck(now)]
        if stuck:
            _detach(running)
            for s in stuck:
                _streams.pop((*key, *key_of[id(s)]), None)
                forget(key_of[id(s)])
            raise _not_returned(flow, stuck)
        time.sleep(0.05)
    if stopping():  # the driver's graceful stop: let every thread end its transaction, count all
        for s in running:
            s.thread.join(STUCK_SECONDS)
    failed = [s for s in running if s.error is not None]
    for s in failed:
        _streams.pop((*key, *key_of[id(s)]), None)
    if failed:
        _detach(running)
        raise failed[0].error
    by_partition = {k: s for s in running for k in s.tallies}
    return [by_partition[(topic, p)].snapshot(topic, p, start) for topic, p, start, _ in ranges]


def _not_returned(flow: str, stuck: list[_Stream]) -> RuntimeError:
    names = ", ".join(s.names() for s in stuck)
    return RuntimeError(
        f"flow {flow}: {names}: a Kafka call did not return in time (a transactional call "
        f"{CALL_GRACE_SECONDS:.0f}s past its own timeout, or no progress for {STUCK_SECONDS:.0f}s; "
        f"librdkafka #5511 after a target restart?); restarting the query"
    )


@functools.cache
def _freeze_once() -> None:
    """Move the worker's objects out of the cyclic collector's reach, once: a full collection
    walks all of them with the GIL held, a pause for every copy thread at once. Reference
    counting still frees them; only cycles among them are no longer collected."""
    gc.freeze()


def _detach(streams: list[_Stream]) -> None:
    """The task fails: its other partitions' copies are between tasks from now on (a lost
    producer ends them rather than fencing the restarted query's copiers back)."""
    now = time.monotonic()
    for s in streams:
        with s.lock:
            s.task_end = min(s.task_end, now)

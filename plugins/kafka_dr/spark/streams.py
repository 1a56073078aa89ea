"""Streaming tasks whose copying outlives them: one background thread per partition, kept
by the Spark Python worker from one task to the next.

Why: between two streaming tasks Spark needs time to finish the batch, plan the next one and
start its task: measured 0.5-2.3 s in steady state and 4-6 s at a query's first boundary
(docs/benchmarks.md). When the copy stopped with its task, every record that arrived then
waited out that pause, and the pause set the flow's p99 latency (4.6 s, against 0.3 s inside
a task). So a partition's copy runs in a thread that outlives the task:

- a task *attaches* to its partitions' threads (starting those that do not run) and renews
  their *lease* to its own end plus :data:`GRACE_SECONDS`;
- when its time is up it returns, per partition, what the thread committed since the
  previous task's rows (:meth:`PartitionStream.snapshot`), without stopping it: the copy
  goes on through the boundary, and the next task attaches again;
- a thread stops after its current transaction once its lease runs out (no task came: the
  query stopped or failed) or the query's stop marker appears (the driver's graceful stop:
  the task then waits for its threads, so its rows count everything);
- a thread whose producer is fenced or lost while it is *between tasks* ends quietly: a
  newer copier (a task that ran in another Python worker, or a query's start clearing
  orphaned commits) owns the partition now, and a redo would fence it back. While a task is
  attached the copier redoes with a fresh producer, as before.

A thread's failure fails the task attached to it (or the next one): Spark fails the batch
and the job restarts the query. A thread stuck in one Kafka call for :data:`STUCK_SECONDS`
(librdkafka's transactional calls can outlive their timeouts when the target restarts) fails
the task too, naming the partitions; its copier is forgotten, so fresh ones fence it.

The worker's garbage collector is told to leave alone what exists once the first task has
started its threads (``gc.freeze``): a full collection walks every object of the worker
(pyspark, pyarrow, the clients) with the GIL held, and measured 0.14-0.2 s at task
boundaries, a pause for every copy thread at once. Reference counting still frees those
objects; only cycles among them are no longer collected.

Exactly-once is unchanged: the same per-partition transactional ids, progress committed with
the records, every copy starting from committed progress. Only the metrics of a thread's
last moments after a hand-over to another worker go unreported (its records do not).
"""

from __future__ import annotations

import faulthandler
import functools
import gc
import os
import threading
import time
from typing import Callable

from kafka_dr.kafka.copier import OPEN, RangeCopier, RangeResult, RangeSpec, producer_lost

#: how long a partition's thread copies past the end of the last task that attached it:
#: longer than Spark's pause between two tasks (seconds), short enough that a stopped or
#: failed query's threads do not linger
GRACE_SECONDS = 30.0

#: a thread inside one chunk for this long is stuck: longer than the slowest legitimate
#: chunk commit (flush up to 120 s, offsets 30 s, commit 60 s)
STUCK_SECONDS = 240.0

#: how often a partition's lag (the high watermark of the last fetch) is read: a local call,
#: but it takes librdkafka's locks with the GIL held, so not on every commit
LAG_EVERY_SECONDS = 1.0

#: the counters a row reports as "since the previous row"
COUNTERS = ("read", "written", "filtered", "bytes", "lost_to_retention", "transactions", "dead_lettered")

#: this Python worker's threads, by (copier key..., topic, partition)
_streams: dict[tuple, "PartitionStream"] = {}


class PartitionStream:
    """One partition's background copy (see the module docstring)."""

    def __init__(self, copier: RangeCopier, spec: RangeSpec, marker: str | None) -> None:
        self.copier, self.spec, self.marker = copier, spec, marker
        self.lock = threading.Lock()
        self.lease = 0.0  #: monotonic time after which the copy stops
        self.task_end = 0.0  #: end of the attached task; past it, a lost producer ends the copy
        self.finished = False
        self.error: BaseException | None = None
        self.beat = time.monotonic()  #: last time the copy loop came round (stuck detection)
        # what the copy committed since the last snapshot
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
        self.thread = threading.Thread(target=self._run, name=f"kafka-dr-{spec.topic}-{spec.partition}", daemon=True)

    # --- the copying thread ------------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                self.copier.copy(self.spec, until=self._until, on_commit=self._committed,
                                 may_redo=lambda: time.monotonic() < self.task_end)
            except BaseException as e:  # noqa: BLE001 - reported by the attached task
                with self.lock:
                    self.finished = True
                    if not (producer_lost(e) and time.monotonic() >= self.task_end):
                        self.error = e  # between tasks, a lost producer just ends the copy
                return
            with self.lock:
                if self._until():
                    self.finished = True
                    return
            # the lease was renewed while the copy was finishing its last transaction: go on

    def _until(self) -> bool:
        self.beat = time.monotonic()
        return self.beat >= self.lease or (self.marker is not None and os.path.exists(self.marker))

    def _committed(self, result: RangeResult, next_offset: int, latencies: list) -> None:
        now = time.monotonic()
        if now - self._lag_at >= LAG_EVERY_SECONDS:
            self._lag_at, self._lag_high = now, next_offset + self.copier.lag(self.spec, next_offset)
        lag = max(0, self._lag_high - next_offset)
        with self.lock:
            if not self._started:  # the first call: the copy's real start (committed progress)
                self._started, self.since = True, next_offset
            if result is not self._result:  # a new copy() (continued after a renewal, or redone)
                self._result, self._seen = result, dict.fromkeys(COUNTERS, 0)
            for k in COUNTERS:
                v = getattr(result, k)
                self.counts[k] += v - self._seen[k]
                self._seen[k] = v
            self.position, self.lag = next_offset, lag
            self.latencies += latencies
        latencies.clear()

    # --- the task's side -----------------------------------------------------------------

    def attach(self, task_end: float) -> bool:
        """Renew the lease for a task ending at ``task_end``; False if the copy already ended."""
        with self.lock:
            if self.finished:
                return False
            self.task_end = max(self.task_end, task_end)
            self.lease = max(self.lease, task_end + GRACE_SECONDS)
            return True

    def start(self, task_end: float) -> "PartitionStream":
        self.attach(task_end)
        self.thread.start()
        return self

    def stuck(self, now: float) -> bool:
        return self.thread.is_alive() and now - self.beat > STUCK_SECONDS

    def snapshot(self, planned_start: int) -> dict:
        """What was committed since the previous snapshot, as one metrics row."""
        with self.lock:
            now = time.monotonic()
            lat = sorted(self.latencies)
            row = RangeResult(self.copier.flow.name, self.spec.topic, self.spec.partition, self.spec.target_topic, planned_start,
                              self.since, self.position, **self.counts, lag=self.lag, seconds=now - self.taken_at,
                              latency_p50_ms=float(lat[len(lat) // 2]) if lat else None,
                              latency_p99_ms=float(lat[min(len(lat) - 1, int(len(lat) * 0.99))]) if lat else None)
            self.since, self.taken_at, self.latencies = self.position, now, []
            self.counts = dict.fromkeys(COUNTERS, 0)
        return row.to_dict()


def run_task(ranges: list[tuple[str, int, int, str]], seconds: float, marker: str | None, key: tuple,
             copier_for: Callable[[tuple], RangeCopier], forget: Callable[[tuple], None], flow: str) -> list[dict]:
    """One streaming task: attach to (or start) each range's thread, wait ``seconds`` (or for
    the stop marker, or a failure), return one row per range."""
    task_end = time.monotonic() + seconds
    # if this worker freezes (a C call holding the GIL), its threads' stacks still reach the
    # log, from a thread of faulthandler's own; the driver's watchdog then stops the query
    faulthandler.dump_traceback_later(seconds + STUCK_SECONDS + 30, exit=False)
    try:
        return _attached(ranges, task_end, marker, key, copier_for, forget, flow)
    finally:
        faulthandler.cancel_dump_traceback_later()


def _attached(ranges: list[tuple[str, int, int, str]], task_end: float, marker: str | None, key: tuple,
              copier_for: Callable[[tuple], RangeCopier], forget: Callable[[tuple], None], flow: str) -> list[dict]:
    streams: list[PartitionStream] = []
    for topic, p, start, target in ranges:
        k = (*key, topic, p)
        s = _streams.get(k)
        if s is None or not s.attach(task_end):
            if s is not None and s.error is not None:
                _streams.pop(k, None)
                raise s.error  # failed between tasks: this task reports it
            s = _streams[k] = PartitionStream(copier_for((topic, p)), RangeSpec(topic, p, start, OPEN, target), marker).start(task_end)
        streams.append(s)

    _freeze_once()

    def stopping() -> bool:
        return marker is not None and os.path.exists(marker)

    while time.monotonic() < task_end and not stopping() and not any(s.error is not None for s in streams):
        now = time.monotonic()
        stuck = [s for s in streams if s.stuck(now)]
        if stuck:
            _detach(streams)
            for s in stuck:
                _streams.pop((*key, s.spec.topic, s.spec.partition), None)
                forget((s.spec.topic, s.spec.partition))
            names = ", ".join(f"{s.spec.topic}[{s.spec.partition}]" for s in stuck)
            raise RuntimeError(f"flow {flow}: {names}: a Kafka call did not return for {STUCK_SECONDS:.0f}s (a transaction call "
                               f"hung while the target restarted?); restarting the query")
        time.sleep(0.05)
    if stopping():  # the driver's graceful stop: let every thread end its transaction, count all
        for s in streams:
            s.thread.join(STUCK_SECONDS)
    failed = [s for s in streams if s.error is not None]
    for s in failed:
        _streams.pop((*key, s.spec.topic, s.spec.partition), None)
    if failed:
        _detach(streams)
        raise failed[0].error
    return [s.snapshot(start) for s, (_, _, start, _) in zip(streams, ranges)]


@functools.cache
def _freeze_once() -> None:
    """Move the worker's objects out of the cyclic collector's reach, once (module docstring)."""
    gc.freeze()


def _detach(streams: list[PartitionStream]) -> None:
    """The task fails: its other partitions' copies are between tasks from now on (a lost
    producer ends them rather than fencing the restarted query's copiers back)."""
    now = time.monotonic()
    for s in streams:
        with s.lock:
            s.task_end = min(s.task_end, now)

"""Streaming tasks' background copies (kafka_dr.spark.streams): the copy goes on between two
tasks, each task's rows count what was committed since the previous ones (nothing twice,
nothing left out), a lease that runs out or the stop marker ends the copy, and a producer
lost between tasks ends it quietly while one lost during a task is that task's error.

The copier here is a stand-in with plain values; the real copier, Spark and Kafka are
exercised by the lab tests (test_faults, test_replication)."""

from __future__ import annotations

import json
import threading
import time

import pytest

from kafka_dr.kafka.copy_errors import ProducerLost
from kafka_dr.kafka.copy_spec import RangeResult
from kafka_dr.spark import streams


class FakeCopier:
    """Commits 10 records every 5 ms from offset 100 (the "committed progress") while until() is false."""

    class flow:
        name = "f"

    def __init__(self, fail: BaseException | None = None, fail_after: float = 0.0) -> None:
        self.fail, self.fail_after, self.copies, self.position, self.releases = fail, fail_after, 0, 100, 0
        self.lock = threading.Lock()

    def lag(self, spec, position: int) -> int:
        return self.position + 7 - position  # the high watermark runs 7 ahead of the copy

    def release(self) -> None:
        self.releases += 1

    def copy(self, spec, until, on_commit, may_redo):
        self.copies += 1
        t0 = time.monotonic()
        result = RangeResult("f", spec.topic, spec.partition, spec.target_topic, spec.start, self.position, spec.end)
        on_commit(result, self.position, [])
        while not until():
            time.sleep(0.005)
            if self.fail is not None and time.monotonic() - t0 > self.fail_after:
                raise self.fail
            with self.lock:
                self.position += 10
                result.read += 10
                result.written += 10
                result.transactions += 1
                on_commit(result, self.position, [3, 4])
        return result


@pytest.fixture(autouse=True)
def fresh_registry():
    streams._streams.clear()
    yield
    for s in list(streams._streams.values()):
        s.lease = 0.0
        s.thread.join(2)
    streams._streams.clear()


def task(copier, seconds=0.2, marker=None):
    return streams.run_task([("t", 0, 0, "t")], seconds, marker, ("k",), lambda _tp: copier, lambda _tp: None, "f")


def test_copy_goes_on_between_tasks_and_rows_chain_without_gaps_or_overlaps(monkeypatch):
    monkeypatch.setattr(streams, "LAG_EVERY_SECONDS", 0.0)
    copier = FakeCopier()
    first = task(copier, seconds=1.0)[0]  # long enough for commits on a loaded machine
    time.sleep(0.5)  # Spark's pause between two tasks: the copy must not stop
    between = copier.position
    second = task(copier)[0]
    assert copier.copies == 1, "the second task attached to the running copy"
    assert first["start"] == 100 and first["written"] > 0 and first["end"] == 100 + first["written"]
    assert second["start"] == first["end"] and second["end"] == second["start"] + second["written"]
    assert between > first["end"], "records were copied during the pause"
    assert second["transactions"] * 10 == second["written"] and second["lag"] == 7
    assert second["latency_p50_ms"] == 4.0


def test_the_first_task_takes_the_workers_objects_out_of_the_cyclic_collector(monkeypatch):
    """Full collections over the whole worker stalled every copy thread at task boundaries."""
    frozen = []
    streams._freeze_once.cache_clear()
    monkeypatch.setattr(streams.gc, "freeze", lambda: frozen.append(True))
    task(FakeCopier(), seconds=0.05)
    task(FakeCopier(), seconds=0.05)
    assert frozen == [True], "frozen once, by the first task"


def test_lease_runs_out_when_no_task_comes(monkeypatch):
    monkeypatch.setattr(streams, "GRACE_SECONDS", 0.1)
    copier = FakeCopier()
    task(copier, seconds=0.05)
    s = streams._streams[("k", "t", 0)]
    s.thread.join(2)
    assert s.finished and s.error is None
    stopped_at = copier.position
    time.sleep(0.05)
    assert copier.position == stopped_at
    row = task(copier, seconds=0.05)[0]  # a new task starts a new copy from committed progress
    assert copier.copies == 2 and row["start"] == stopped_at


def test_a_copy_that_ends_lets_its_producer_go_before_a_new_copy_can_take_the_copier(monkeypatch):
    """The next copy in this worker must start with a fresh producer: another worker may have
    fenced the old one meanwhile, and progress is to be read after its own fencing."""
    monkeypatch.setattr(streams, "GRACE_SECONDS", 0.1)
    copier = FakeCopier()
    task(copier, seconds=0.05)
    s = streams._streams[("k", "t", 0)]
    s.thread.join(2)
    assert s.finished and copier.releases == 1


def test_an_orphaned_worker_stops_copying_and_redoes_nothing(monkeypatch):
    """Its executor is gone and Spark runs the task again elsewhere: a redo here would fence
    the re-run task's copier back."""
    copier = FakeCopier()
    seen = {}

    def copy(spec, until, on_commit, may_redo):
        seen["may_redo"] = may_redo()
        monkeypatch.setattr(streams.os, "getppid", lambda: 1)  # re-parented: the executor JVM died
        seen["until"], seen["may_redo_after"] = until(), may_redo()
        return RangeResult("f", spec.topic, spec.partition, spec.target_topic, spec.start, 100, spec.end)

    copier.copy = copy
    task(copier, seconds=1.0)  # a redo is allowed only inside the task: long enough on a loaded machine
    streams._streams[("k", "t", 0)].thread.join(2)
    assert seen == {"may_redo": True, "until": True, "may_redo_after": False}


def test_stop_marker_ends_the_copy_and_the_task_counts_everything(tmp_path):
    marker = tmp_path / "stop"
    copier = FakeCopier()
    threading.Timer(0.1, marker.touch).start()
    row = task(copier, seconds=30, marker=str(marker))[0]
    s = streams._streams[("k", "t", 0)]
    assert s.finished and not s.thread.is_alive()
    assert row["end"] == copier.position and row["written"] == copier.position - 100


def test_producer_lost_during_a_task_fails_it():
    copier = FakeCopier(fail=ProducerLost("fenced"), fail_after=0.02)
    with pytest.raises(ProducerLost):
        task(copier, seconds=5)
    assert ("k", "t", 0) not in streams._streams


def test_producer_lost_between_tasks_ends_quietly_and_the_next_task_restarts_the_copy():
    copier = FakeCopier(fail=ProducerLost("fenced by a newer copier"), fail_after=0.15)
    task(copier, seconds=0.05)  # fails 0.1 s after this task's end, inside its grace
    s = streams._streams[("k", "t", 0)]
    s.thread.join(2)
    assert s.finished and s.error is None
    copier.fail = None
    task(copier, seconds=0.05)
    assert copier.copies == 2


def test_other_failures_between_tasks_are_raised_by_the_next_task():
    copier = FakeCopier(fail=RuntimeError("flow f: west refused t[0]@5"), fail_after=0.15)
    task(copier, seconds=0.05)
    streams._streams[("k", "t", 0)].thread.join(2)
    with pytest.raises(RuntimeError, match="refused"):
        task(copier, seconds=0.05)


def test_a_failed_task_detaches_its_other_partitions():
    good, bad = FakeCopier(), FakeCopier(fail=RuntimeError("flow f: west refused t[1]@5"), fail_after=0.02)
    copiers = {("t", 0): good, ("t", 1): bad}
    with pytest.raises(RuntimeError, match="refused"):
        streams.run_task(
            [("t", 0, 0, "t"), ("t", 1, 0, "t")], 5, None, ("k",), copiers.__getitem__, lambda _tp: None, "f"
        )
    s = streams._streams[("k", "t", 0)]
    assert s.task_end <= time.monotonic() and not s.finished, "still copying, but between tasks"


class FakeTaskCopier:
    """A whole task's copier: commits 10 records of every partition every 5 ms, from offset 100."""

    class flow:
        name = "f"

    def __init__(self) -> None:
        self.copies, self.specs_seen, self.position = 0, [], {}

    def lag(self, spec, position: int) -> int:
        return 0

    def release(self) -> None:
        pass

    def copy(self, specs, until, on_commit, may_redo):
        self.copies += 1
        self.specs_seen.append([(s.topic, s.partition) for s in specs])
        results = [
            RangeResult(
                "f", s.topic, s.partition, s.target_topic, s.start, self.position.setdefault(s.partition, 100), s.end
            )
            for s in specs
        ]
        for r in results:
            on_commit(r, self.position[r.partition], [])
        while not until():
            time.sleep(0.005)
            for r in results:  # one transaction: every partition's records at once
                self.position[r.partition] += 10
                r.read += 10
                r.written += 10
                r.transactions += 1
                on_commit(r, self.position[r.partition], [5])
        return results


def whole_task(copier, ranges, seconds=0.2):
    return streams.run_task(
        ranges,
        seconds,
        None,
        ("k",),
        lambda key: copier if key == (streams.TASK,) else None,
        lambda _k: None,
        "f",
        whole=True,
    )


def test_a_whole_task_copies_all_its_partitions_in_one_copy_and_rows_chain_per_partition():
    copier = FakeTaskCopier()
    ranges = [("t", 0, 0, "t"), ("t", 1, 0, "t")]
    first = whole_task(copier, ranges, seconds=1.0)  # long enough for a commit on a loaded machine
    time.sleep(0.1)
    second = whole_task(copier, ranges)
    assert copier.copies == 1, "one copy for both partitions, attached to by the second task"
    assert [r["partition"] for r in first] == [0, 1] and [r["partition"] for r in second] == [0, 1]
    for a, b in zip(first, second):
        assert a["start"] == 100 and a["end"] == 100 + a["written"] > 100
        assert b["start"] == a["end"] and b["end"] == b["start"] + b["written"]
        assert b["latency_p50_ms"] == 5.0


def test_a_whole_task_whose_partitions_changed_replaces_its_copy():
    """A topic was added to the flow: the running copy ends after its transaction and a new one
    copies the new set (one transaction must cover every partition of the task)."""
    copier = FakeTaskCopier()
    whole_task(copier, [("t", 0, 0, "t")], seconds=0.05)
    old = streams._streams[("k", streams.TASK)]
    rows = whole_task(copier, [("t", 0, 0, "t"), ("u", 0, 0, "u")], seconds=0.05)
    assert not old.thread.is_alive() and old.finished
    assert copier.specs_seen == [[("t", 0)], [("t", 0), ("u", 0)]]
    assert [(r["topic"], r["start"]) for r in rows][0][0] == "t" and rows[1]["topic"] == "u"


def test_a_whole_task_whose_partitions_changed_does_not_wait_for_a_hung_call(monkeypatch):
    """The old copy is inside a transactional call that does not return (librdkafka#5511 after
    a target restart): the new task fails once the call is past its deadline, naming the old
    copy's partitions, and the copier is forgotten (a fresh one fences the hung producer);
    it does not wait out STUCK_SECONDS for the old copy to end."""
    from kafka_dr.kafka import transactions

    monkeypatch.setattr(transactions, "CALL_GRACE_SECONDS", 0.05)
    forgotten, release = [], threading.Event()

    class Hangs(FakeTaskCopier):
        def copy(self, specs, until, on_commit, may_redo):
            self.specs_seen.append([(s.topic, s.partition) for s in specs])
            until()
            with transactions.watched_call(self, 0.2):  # its timeout passes, the call goes on
                release.wait(5)
            return []

    copier = Hangs()
    streams.run_task([("t", 0, 0, "t")], 0.05, None, ("k",), lambda _k: copier, forgotten.append, "f", whole=True)
    t0 = time.monotonic()
    try:
        with pytest.raises(RuntimeError, match=r"t\[0\]: a Kafka call did not return in time"):
            streams.run_task(
                [("t", 0, 0, "t"), ("u", 0, 0, "u")], 5, None, ("k",), lambda _k: copier, forgotten.append, "f", True
            )
        assert time.monotonic() - t0 < 1.0 and streams.STUCK_SECONDS == 240.0
        assert forgotten == [(streams.TASK,)] and ("k", streams.TASK) not in streams._streams
        assert copier.specs_seen == [[("t", 0)]], "no copy of the new set was started beside the hung one"
    finally:
        release.set()


def test_a_stuck_whole_task_names_all_its_partitions(monkeypatch):
    monkeypatch.setattr(streams, "STUCK_SECONDS", 0.05)
    forgotten = []

    class Stuck(FakeTaskCopier):
        def copy(self, specs, until, on_commit, may_redo):
            until()
            time.sleep(0.5)  # one Kafka call that does not return
            return []

    with pytest.raises(RuntimeError, match=r"t\[0\], t\[1\]: a Kafka call did not return"):
        streams.run_task(
            [("t", 0, 0, "t"), ("t", 1, 0, "t")], 5, None, ("k",), lambda _k: Stuck(), forgotten.append, "f", whole=True
        )
    assert forgotten == [(streams.TASK,)] and ("k", streams.TASK) not in streams._streams


def test_a_transactional_call_past_its_own_timeout_fails_the_task_long_before_the_general_limit(monkeypatch):
    """librdkafka #5511: send_offsets_to_transaction can hang past its timeout after a target
    restart. The copier marks the call (transactions.watched_call); the task gives up once the call is
    CALL_GRACE_SECONDS past its timeout, not after STUCK_SECONDS (240 s) of no progress."""
    from kafka_dr.kafka import transactions

    monkeypatch.setattr(transactions, "CALL_GRACE_SECONDS", 0.05)
    forgotten = []

    class Hung(FakeTaskCopier):
        def copy(self, specs, until, on_commit, may_redo):
            until()
            with transactions.watched_call(self, 0.05):  # a call with a 50 ms timeout that does not return
                time.sleep(0.6)
            return []

    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"t\[0\]: a Kafka call did not return in time"):
        streams.run_task([("t", 0, 0, "t")], 5, None, ("k",), lambda _k: Hung(), forgotten.append, "f", whole=True)
    assert time.monotonic() - t0 < 0.6 and streams.STUCK_SECONDS == 240.0
    assert forgotten == [(streams.TASK,)]


def test_a_watched_call_that_returns_clears_its_mark():
    from kafka_dr.kafka.transactions import watched_call

    class Holder:
        hung_after = None

    h = Holder()
    with watched_call(h, 30):
        assert h.hung_after is not None and h.hung_after > time.monotonic() + 30
    assert h.hung_after is None
    with pytest.raises(ValueError), watched_call(h, 30):
        raise ValueError("the call failed")
    assert h.hung_after is None


class FixedPlanner:
    """A source whose end offsets do not move (no new records)."""

    def latest(self) -> dict:
        return {"t": {"0": 7, "1": 9}}

    def target_topic(self, topic: str) -> str:
        return topic


def test_streaming_tasks_plan_a_batch_at_every_trigger_new_records_or_not():
    """The copy runs only while tasks attach to it (kafka_dr.spark.streams), so a batch must
    be planned even when the source is quiet: the end offsets differ from the start by the batch
    count alone, and the count never reaches the partitions."""
    from kafka_dr.spark.source import BATCH_KEY, ReplicationStreamReader, StreamPartition

    reader = ReplicationStreamReader({"task_seconds": "30"})
    reader._planner = FixedPlanner()
    first = reader.latestOffset({"t": {"0": 7, "1": 9}}, None)
    second = reader.latestOffset(first, None)
    assert first == {"t": {"0": 7, "1": 9}, BATCH_KEY: {"n": 1}} and second[BATCH_KEY] == {"n": 2}
    assert json.dumps(second) != json.dumps(first)  # Spark plans a batch when the offsets differ
    [part] = reader.partitions(first, second)
    assert isinstance(part, StreamPartition) and part.ranges == [("t", 0, 7, "t"), ("t", 1, 9, "t")]

    fixed = ReplicationStreamReader({"task_seconds": "0"})  # fixed ranges: a batch only for new records
    fixed._planner = FixedPlanner()
    assert fixed.latestOffset({"t": {"0": 7, "1": 9}}, None) == {"t": {"0": 7, "1": 9}}
    assert fixed.partitions({"t": {"0": 7, "1": 9}}, {"t": {"0": 7, "1": 9}}) == []


@pytest.mark.parametrize(
    "options, whole",
    [({}, True), ({"tasks": "1"}, True), ({"tasks": "2"}, False), ({"tasks": "1", "transactions": "partition"}, False)],
)
def test_only_a_single_task_copies_its_partitions_in_one_transaction(options, whole):
    """Task transactions need the one-task layout (kafka_dr.kafka.task_copier): with several tasks
    a partition could change task ids as partitions are added, and two task ids fence nothing."""
    from kafka_dr.spark.source import ReplicationStreamReader

    class Planner:
        @staticmethod
        def target_topic(topic):
            return topic

    reader = ReplicationStreamReader({"task_seconds": "30", **options})
    reader._planner = Planner()
    parts = reader.partitions({}, {"t": {"0": 5, "1": 7}})
    assert {p.whole for p in parts} == {whole}
    assert sorted(r[:2] for p in parts for r in p.ranges) == [("t", 0), ("t", 1)]


def test_a_row_counts_records_lost_before_the_first_copy_once_with_their_offsets():
    from kafka_dr.kafka.copy_spec import RangeSpec

    spec = RangeSpec("t", 0, 4, streams.OPEN, "t")
    tally, lock = streams._Tally(spec, lambda s, pos: 0), threading.Lock()
    result = RangeResult("f", "t", 0, "t", 4, 4, streams.OPEN)
    result.add_lost(0, 3)  # the copier's first-run report, before its first commit
    tally.committed(lock, result, 4, [])
    result.read = result.written = 6
    tally.committed(lock, result, 10, [])
    first = tally.snapshot("f", 4)
    assert (
        first["start"],
        first["end"],
        first["written"],
        first["lost_to_retention"],
        first["lost_first"],
        first["lost_last"],
    ) == (4, 10, 6, 4, 0, 3)
    result.read = result.written = 8
    tally.committed(lock, result, 12, [])
    second = tally.snapshot("f", 10)
    assert (second["start"], second["written"], second["lost_to_retention"], second["lost_first"]) == (10, 2, 0, None)

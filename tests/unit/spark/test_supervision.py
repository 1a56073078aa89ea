"""The replication job's supervision (kafka_dr.spark.supervision): which failures stop the job
at once (plain strings, as errors from Spark tasks reach the driver), the one line a failure is
reported by, and the driver's watchdog, which stops a query whose micro-batch stalls (a
stand-in query with plain values; the real one runs in the lab tests)."""

from __future__ import annotations

import threading
import time

import pytest

from kafka_dr.spark.supervision import Stop, failure_reason, is_permanent, supervise

PERMANENT_FAILURES = [
    "ModuleNotFoundError: No module named 'kafka_dr'",
    "ConfigError: kafka-dr.yaml: flows[0].source: unknown cluster 'eest' (known: east, west)",
    "ValueError: no flow named 'east_to_wset' in kafka-dr.yaml (flows: east_to_west)",
    "UnresolvedSecret: ${airflow:kafka_dr_east}: Airflow connection 'kafka_dr_east' not found (KeyError)",
    "flow east_to_west: source cluster 'east' (127.0.0.1:38092): authentication failed (SCRAM-SHA-512 as user from "
    "${env:KAFKA_DR_LAB_SASL_USERNAME}; check sasl.username/sasl.password)",
    "flow east_to_west: cluster 'west' (127.0.0.1:38192): TLS handshake failed (check ssl.ca.location and the broker "
    "certificate)",
    "ProgressLost: flow east_to_west: east/orders[0] -> west/orders[0]: no committed progress, but the run was planned "
    "to start at offset 40 (log start 0): the progress topic was deleted or truncated (was the target topic deleted?)",
    "flow east_to_west: west/orders has 2 partitions but east/orders has 4; raise the target's partition count "
    "(dr_topic_config_sync does) so partition p can map to partition p",
    "flow east_to_west: west refused east/orders[1]@17 (-> orders[1]): Broker: Message size too large; the chunk from "
    "offset 10 was rolled back and nothing after it copied; configure dead_letter_topic to set such records aside",
]

PASSING_FAILURES = [
    "flow east_to_west: source cluster 'east' (127.0.0.1:38092) did not answer: KafkaError{code=_TRANSPORT}",
    "flow east_to_west: no micro-batch completed for 400s (a streaming task stuck in a Kafka call?); the query was "
    "stopped and is restarted",
    "flow east_to_west: orders[0], orders[1]: a Kafka call did not return in time; restarting the query",
    'RuntimeError: KafkaException: KafkaError{code=_FENCED,val=-144,str="Producer fenced by newer instance"}',
    "java.lang.IllegalStateException: Python worker exited unexpectedly (crashed)",
]


@pytest.mark.parametrize("reason", PERMANENT_FAILURES)
def test_failures_a_restart_cannot_cure_are_permanent(reason):
    assert is_permanent(reason)


@pytest.mark.parametrize("reason", PASSING_FAILURES)
def test_outages_stalls_and_fenced_producers_are_restarted(reason):
    assert not is_permanent(reason)


def test_the_reason_is_the_line_that_names_the_flow():
    error = RuntimeError(
        "An exception was thrown from the Python worker.\nTraceback (most recent call last):\n"
        '  File "copier.py", line 10, in copy\n'
        "kafka_dr.kafka.copier.RecordRejected: flow east_to_west: west refused east/orders[1]@17: too large\n"
    )
    assert failure_reason(error, "east_to_west") == "flow east_to_west: west refused east/orders[1]@17: too large"


def test_the_reason_is_found_in_a_cause_and_in_sparks_captured_fields():
    class Captured(Exception):  # pyspark's CapturedException keeps the Python side in these
        def __init__(self, desc: str, stack: str, cause: BaseException | None) -> None:
            super().__init__("")
            self._desc, self._stackTrace, self._cause = desc, stack, cause

    inner = Captured("StreamingQueryException: query terminated", "at org.apache.spark...", ValueError("flow f: lost"))
    wrapped = RuntimeError("query failed")
    wrapped.__cause__ = inner
    assert failure_reason(wrapped, "f") == "flow f: lost"


def test_without_the_flow_the_reason_is_the_last_python_error_line():
    error = RuntimeError("Traceback:\nKeyError: 'a'\n  File x\nModuleNotFoundError: No module named 'kafka_dr'\n")
    assert failure_reason(error, "f") == "ModuleNotFoundError: No module named 'kafka_dr'"
    assert failure_reason(RuntimeError("something\nelse"), "f") == "something"
    assert failure_reason(RuntimeError(""), "f") == "RuntimeError('')"


class FakeQuery:
    """A running query that never completes a batch (its task froze)."""

    def __init__(self) -> None:
        self.isActive, self.stopped = True, False
        self.status = {"isTriggerActive": True}

    def awaitTermination(self, seconds: float) -> None:
        time.sleep(min(seconds, 0.01))

    def stop(self) -> None:
        self.isActive, self.stopped = False, True


def test_the_driver_stops_a_query_whose_micro_batch_stalls():
    q = FakeQuery()
    reason = supervise(q, Stop(None), None, [time.monotonic() - 10], stall_after=5)
    assert q.stopped and "no micro-batch completed for 10s" in reason


def test_the_driver_leaves_a_query_whose_batches_complete_alone():
    q, last = FakeQuery(), [time.monotonic()]
    threading.Timer(0.3, q.stop).start()  # the query ends on its own
    assert supervise(q, Stop(None), None, last, stall_after=5) == ""


def test_the_driver_leaves_a_query_with_no_trigger_running_alone():
    """A query with nothing to plan (its flow's topics do not exist yet) runs no batch; it is
    not stuck, however long ago its last batch was."""
    q = FakeQuery()
    q.status = {"isTriggerActive": False}
    threading.Timer(0.3, q.stop).start()
    assert supervise(q, Stop(None), None, [time.monotonic() - 10], stall_after=5) == ""


def test_a_stop_tells_the_tasks_and_stops_the_query(tmp_path):
    q, stop = FakeQuery(), Stop(str(tmp_path / "stop-file"))
    stop.marker = str(tmp_path / "marker")
    (tmp_path / "stop-file").touch()
    q.status = {"isTriggerActive": False}
    assert supervise(q, stop, None, [time.monotonic()], stall_after=None) == ""
    assert q.stopped and stop.reason == f"stop file {tmp_path / 'stop-file'}" and (tmp_path / "marker").exists()


def test_a_stop_waits_for_the_batch_in_flight_only():
    """Batches planned after the stop change nothing; on a cluster they run back to back, so the
    trigger is never idle: the stop comes when the batch in flight at the request completes."""
    q, stop = FakeQuery(), Stop(None)
    q.lastProgress = {"batchId": 7}
    stop.request("SIGTERM")
    threading.Timer(0.3, lambda: setattr(q, "lastProgress", {"batchId": 8})).start()
    t0 = time.monotonic()
    assert supervise(q, stop, None, [time.monotonic()], stall_after=None) == ""
    assert q.stopped and 0.3 <= time.monotonic() - t0 < 5


def test_the_max_duration_is_a_stop():
    q, stop = FakeQuery(), Stop(None)
    q.status = {"isTriggerActive": False}
    assert supervise(q, stop, time.monotonic() - 1, [time.monotonic()], stall_after=None) == ""
    assert q.stopped and stop.reason == "max duration"


def test_a_watch_requests_a_graceful_stop_with_the_reason_it_finds():
    """The job watches the DR state: a failover recorded while it runs stops it (the failback
    copies between the two clusters itself); a check that fails is no news."""
    import time

    from kafka_dr.spark.supervision import Stop, stop_when

    answers = iter([RuntimeError("no cluster answered"), None, "failover of east"])

    def check():
        a = next(answers, "failover of east")
        if isinstance(a, Exception):
            raise a
        return a

    stop = Stop(None)
    with stop_when(stop, check, every=0.05):
        deadline = time.monotonic() + 5
        while not stop.requested() and time.monotonic() < deadline:
            time.sleep(0.01)
    assert stop.reason == "failover of east"

    quiet = Stop(None)
    with stop_when(quiet, lambda: None, every=0.01):
        time.sleep(0.1)
    assert not quiet.requested()

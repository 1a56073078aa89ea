"""How the replication job watches a query, stops it and judges its failures.

A stop (SIGTERM/SIGINT, the stop file, the max duration) lets the micro-batch in flight
finish its transactions first; streaming tasks see it through a marker file. A failure is
either permanent (:func:`is_permanent`: the job stops) or restarted by the job, which resumes
from the progress committed in Kafka (docs/replication.md, "Failures").
"""

from __future__ import annotations

import contextlib
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

#: A streaming query whose micro-batch has not completed this long past ``task_seconds`` is
#: stopped and restarted (see :func:`supervise`). A streaming task returns after
#: ``task_seconds`` whatever its copy threads do, so a batch this late has a frozen worker or
#: planner: the flow is not copying, and the restart comes well within five minutes. Longer
#: than a query's start and first task on a loaded machine.
STALL_SECONDS = 120.0

#: Failures a restart cannot cure, as text: errors from Spark tasks reach the driver as strings
#: (a Java exception wrapping a Python traceback), so a name or phrase in them is the only handle.
PERMANENT = (
    # the job cannot run as installed or configured
    "ModuleNotFoundError",
    "ImportError",
    "ConfigError",
    "no flow named",
    "UnresolvedSecret",
    # the cluster refuses our credentials
    "AuthenticationFailed",
    "authentication failed",
    "TLS handshake failed",
    # the cluster's authorizer refuses an operation: an operator grants the ACL
    "PermissionDenied",
    "kafka-dr's principal may not",
    # copying on would skip or duplicate records: the operator decides (--reset-progress, the topic)
    "ProgressLost",
    "no committed progress",
    "TargetTopicMismatch",
    "partitions but",
    # the target refuses a record and no dead-letter topic takes it
    "RecordRejected",
    " refuses ",
    " refused ",
)


def is_permanent(reason: str) -> bool:
    """Whether a failure, as :func:`failure_reason` words it, is one a restart cannot cure (it
    holds an entry of :data:`PERMANENT`): the job then stops at once instead of backing off."""
    return any(kind in reason for kind in PERMANENT)


def is_unreachable(reason: str) -> bool:
    """Whether a failure is a cluster that did not answer at all (a network cut, a cluster
    down), which an operator hears of at once, unlike a broker's restart the job rides out."""
    return " did not answer" in reason


def failure_reason(error: BaseException, flow: str) -> str:
    """The one line of a (Spark-wrapped) failure an operator needs.

    Errors raised by this package start with ``flow <name>:`` and name cluster, topic,
    partition and offset; Spark wraps them in a Java exception with a Python traceback inside.
    """
    texts = []
    seen = 0
    e: BaseException | None = error
    while e is not None and seen < 10:  # Spark's CapturedException chain keeps the Python traceback in a cause
        texts += [str(getattr(e, "_desc", "") or ""), str(e), str(getattr(e, "_stackTrace", "") or "")]
        e = getattr(e, "_cause", None) or e.__cause__
        seen += 1
    lines = [ln.strip() for t in texts for ln in t.splitlines() if ln.strip()]
    marker = f"flow {flow}:"
    for ln in lines:
        if marker in ln:
            return ln[ln.index(marker) :]
    py = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception|Lost|Rejected|Mismatch|Unreachable): ", ln)]
    return py[-1] if py else (lines[0] if lines else repr(error))


class Stop:
    """Whether, and why, the run was asked to stop; the running query's marker file."""

    def __init__(self, stop_file: str | None) -> None:
        self.reason = ""
        self.stop_file = stop_file
        self.marker: str | None = None  #: the running query's streaming tasks stop when it exists

    def request(self, reason: str) -> None:
        self.reason = self.reason or reason

    def tell_tasks(self) -> None:
        if self.marker:
            Path(self.marker).touch()

    def requested(self) -> bool:
        if not self.reason and self.stop_file and Path(self.stop_file).exists():
            self.reason = f"stop file {self.stop_file}"
        return bool(self.reason)

    def sleep(self, seconds: float, until: Callable[[], bool] | None = None, every: float = 1.0) -> None:
        """Wait ``seconds``, or less when a stop is asked for meanwhile or, asked every ``every``
        seconds, ``until()`` says so."""
        end = time.monotonic() + seconds
        asked = time.monotonic()
        while time.monotonic() < end and not self.requested():
            time.sleep(0.2)
            if until is not None and time.monotonic() - asked >= every:
                if until():
                    return
                asked = time.monotonic()


@contextlib.contextmanager
def stop_when(stop: Stop, check: Callable[[], str | None], every: float) -> Iterator[None]:
    """Meanwhile, every ``every`` seconds, ``check()``; a reason it returns requests a graceful
    stop with that reason. A check that raises says nothing (it is asked again next time)."""
    done = threading.Event()

    def watch() -> None:
        while not done.wait(every):
            try:
                why = check()
            except Exception:  # noqa: BLE001 - e.g. no cluster answered: no news
                continue
            if why is not None:
                stop.request(why)
                return

    threading.Thread(target=watch, name="kafka-dr-stop-watch", daemon=True).start()
    try:
        yield
    finally:
        done.set()


@contextlib.contextmanager
def stop_on_signals(stop: Stop) -> Iterator[None]:
    """SIGTERM and SIGINT request a graceful stop meanwhile. Only the main thread receives
    signals: run from another thread, the job leaves the handlers alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    for s in previous:
        signal.signal(s, lambda signum, _frame: stop.request(signal.Signals(signum).name))
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def supervise(query, stop: Stop, deadline: float | None, last_batch: list[float], stall_after: float | None) -> str:
    """Watch the query until it ends or is asked to stop; returns why it was stopped as stalled
    ("" otherwise).

    ``stall_after``: streaming tasks only. A micro-batch that has not completed this long
    after the previous one (or the query's start) is stalled: a Spark Python worker frozen
    inside a Kafka call freezes its own watchdog too (kafka_dr.spark.streams). Stopping the
    query makes Spark kill the worker; the job then restarts the query, and fresh copiers
    fence the old ones. Only time with a trigger running counts: a query with nothing to plan
    (a flow whose topics do not exist yet) runs no batch and is not stuck."""
    while query.isActive:
        query.awaitTermination(0.5)
        if not query.isActive:
            break
        if stall_after is not None and not query.status.get("isTriggerActive", True):
            last_batch[0] = time.monotonic()  # idle between triggers: nothing can be stuck
        if stall_after is not None and time.monotonic() - last_batch[0] > stall_after:
            quiet = time.monotonic() - last_batch[0]
            query.stop()  # the caller raises the reason: the restart path logs and alerts it once
            return (
                f"no micro-batch completed for {quiet:.0f}s (a streaming task stuck in a Kafka call?); "
                f"the query was stopped and is restarted"
            )
        if deadline and time.monotonic() >= deadline:
            stop.request("max duration")
        if stop.requested():
            # let the batch in flight finish its transactions, then stop; streaming tasks
            # stop after their current transaction once they see the marker. The batches
            # after it change nothing (their tasks see the marker at once), and on a cluster
            # they follow one another with no idle trigger between them: its end is the stop.
            stop.tell_tasks()
            in_flight, t_end = _last_batch(query), time.monotonic() + 60
            while (
                query.isActive
                and query.status.get("isTriggerActive")
                and _last_batch(query) == in_flight
                and time.monotonic() < t_end
            ):
                time.sleep(0.2)
            query.stop()
            break
    return ""


def _last_batch(query) -> int | None:
    """The id of the last micro-batch the query completed (None before its first)."""
    progress = getattr(query, "lastProgress", None)
    return progress.get("batchId") if progress else None


def jvm_answers(spark) -> bool:
    """Whether the driver's JVM still answers this Python driver. Under spark-submit the JVM is
    the parent: killed, it leaves this process behind with nothing to run queries on."""
    try:
        spark.sparkContext._jvm.java.lang.System.currentTimeMillis()
        return True
    except Exception:  # noqa: BLE001 - py4j's connection errors vary by how the JVM went
        return False

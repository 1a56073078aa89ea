"""A second process for a backlog copied in the driver.

The copy loop is Python and keeps one interpreter busy (docs/benchmarks.md), so on a machine
with more than one core the driver hands all shares but its own to a helper process. The
helper is forked before this process holds any Kafka client or any thread besides the main
one: librdkafka's handles and their threads do not survive a fork, and a fork beside other
threads can inherit a lock one of them held. Forking, not spawning, saves the helper the
interpreter's and the package's start-up. It waits for shares, copies them with the code a
Spark task runs (each partition in its own transactions, under its own transactional id, so
the two processes never fence each other), sends the rows back and waits for more; it ends
when told, when this process closes the pipe, or (Linux) when this process dies.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from multiprocessing import Pipe
from multiprocessing.connection import Connection

#: what stops a driver (kafka_dr.spark.supervision) and not its helper
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
#: copy(options, shares) -> rows: what the helper runs for each request
Copy = Callable[[dict, Iterator], Iterator[tuple]]


class HelperFailed(RuntimeError):
    """The helper ended without sending its rows back (killed, or out of memory)."""


class CopyHelper:
    """The driver's end of a forked copy process (:meth:`fork`)."""

    def __init__(self, pid: int, conn: Connection) -> None:
        self.pid, self._conn = pid, conn
        self._closed = False
        #: it ended without its rows: the driver copies every share itself from then on
        self.lost = False

    @property
    def usable(self) -> bool:
        return not (self._closed or self.lost)

    @classmethod
    def fork(cls, copy: Copy) -> CopyHelper | None:
        """A helper that runs ``copy``; None where a fork is not safe (another thread runs) or
        not possible (no ``os.fork``)."""
        if not hasattr(os, "fork") or threading.active_count() > 1:
            return None
        ours, theirs = Pipe()
        sys.stdout.flush()  # else the child inherits the buffered text and writes it again
        sys.stderr.flush()
        parent = os.getpid()
        # held back across the fork: a stop's signal must find the helper ignoring it (_serve)
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        pid = os.fork()
        if pid == 0:  # the helper: never returns
            ours.close()
            code = 1
            try:
                _die_with(parent)
                _serve(theirs, copy, blocked)
                code = 0
            finally:
                os._exit(code)  # no atexit handlers, no second flush of inherited buffers
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        theirs.close()
        return cls(pid, ours)

    def start(self, options: dict, shares: list) -> None:
        """Hand ``shares`` to the helper; :meth:`rows` waits for what it copied."""
        try:
            self._conn.send((options, shares))
        except OSError as e:
            self.lost = True
            raise HelperFailed(f"the driver's copy helper (pid {self.pid}) has ended") from e

    def rows(self) -> list[tuple]:
        """The rows of the shares last handed over; raises what the copy raised there."""
        try:
            kind, value = self._conn.recv()
        except (EOFError, OSError) as e:
            self.lost = True
            raise HelperFailed(f"the driver's copy helper (pid {self.pid}) ended without its rows") from e
        if kind == "error":
            raise value
        return value

    def close(self) -> None:
        """Tell the helper to end and reap it; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._conn.send(None)
        except OSError:
            pass  # it has ended already
        self._conn.close()
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass  # reaped already


def _serve(conn: Connection, copy: Copy, mask: set) -> None:
    # A stop lets a copy in the driver finish its transactions (kafka_dr.spark.range_job); the
    # driver waits for this process's rows, so it must not die of the signal the driver catches.
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        options, shares = request
        try:
            reply = ("rows", list(copy(options, iter(shares))))
        except Exception as e:  # noqa: BLE001 - the driver raises it as its own copy's error
            reply = ("error", _picklable(e))
        conn.send(reply)


def _picklable(e: Exception) -> Exception:
    """``e`` itself when it survives the pipe, else its type's name and text."""
    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:  # noqa: BLE001 - any failure to round-trip
        return RuntimeError(f"{type(e).__name__}: {e}")


def _die_with(parent: int) -> None:
    """Linux: the kernel kills this process when ``parent`` dies (a kill -9 of the driver)."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it died before the line above took effect
        os._exit(1)

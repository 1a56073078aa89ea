"""Start-up marks from the job's Spark Python processes (the data source's planner on the
driver, the executors' Python workers), for ``kafka-dr bench``'s start-up timeline.

They are written to the process's stderr, which Spark passes on to its JVM's (the job's log
in local mode, the executor's log on a cluster), in the driver log's line format, so one
reader (:func:`kafka_dr.bench.systems.start_up_timeline`) takes both. Each mark is written
once per process: only the first of each step of the start-up is wanted.
"""

from __future__ import annotations

import sys
import time

#: what the driver's log lines carry before the mark (``%(levelname)s %(name)s``)
PREFIX = "INFO kafka_dr.replicate timeline:"

_written: set[str] = set()


def line(mark: str, now: float) -> str:
    """The log line of ``mark`` at epoch ``now``, as the driver's logging formats its own."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
    return f"{stamp},{int(now * 1000) % 1000:03d} {PREFIX} {mark}\n"


def mark_once(mark: str) -> None:
    """Write ``mark`` to stderr the first time this process reaches it."""
    if mark in _written:
        return
    _written.add(mark)
    sys.stderr.write(line(mark, time.time()))
    sys.stderr.flush()

"""An incremental run as one Spark job of range tasks, without a streaming query.

An incremental run copies what the source holds when it starts, once: a single micro-batch.
As a streaming query that batch first waits for Spark's streaming machinery (the query, a
Python process of its own for the source's planner, another that prepares the data-source
read), seconds before the first task starts (docs/benchmarks.md, "Start-up"). Here the driver
plans with the streaming source's own reader
(:class:`~kafka_dr.spark.source.ReplicationStreamReader`: the progress read with its
lost-progress checks and orphan clearing, the end offsets with ``max_records_per_batch``, the
shares of one task per core), and Spark runs the shares as plain tasks that copy them with the
same code a micro-batch's task runs. Progress is committed by the tasks inside their Kafka
transactions, as in every mode: a failed or cancelled job leaves each partition where its last
transaction left it, and the next attempt plans from there.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator

#: a stop waits this long for the job in flight (its transactions) before cancelling it
STOP_GRACE_SECONDS = 60.0


def run_ranges(spark, options: dict, sink, stop, deadline: float | None, helper=None) -> None:
    """Plan the flow's ranges from its committed progress to the source's end offsets now,
    copy them in one Spark job (``spark`` None: here, the first share in this process and the
    others in ``helper``, a :class:`~kafka_dr.spark.copy_helper.CopyHelper`), and hand the
    metrics rows to ``sink`` as batch 0. Nothing to copy: no job and no batch. Raises what the
    planning or the job raised, unless a stop was asked for (``stop``; ``deadline``,
    monotonic, asks for one). A copy in this process is not cancelled by a stop: it is a small
    backlog, and it ends at a transaction's commit like any task."""
    from kafka_dr.spark.source import FIELDS, ReplicationStreamReader

    planner = ReplicationStreamReader(options)
    start = _as_spark_keeps(planner.initialOffset())
    end = _as_spark_keeps(planner.latestOffset(start, None))
    if end == start:
        return  # like a query's trigger with no new offsets: no batch
    shares = planner.partitions(start, end)
    if not shares:
        rows = []
    elif spark is None:  # a small backlog: copied here, as tasks would (kafka_dr.spark.job)
        rows = copy_here(options, shares, helper)
    else:
        rows = _copy(spark, options, shares, stop, deadline)
    sink.record([dict(zip(FIELDS, r, strict=True)) for r in rows], 0)


def _as_spark_keeps(offsets: dict) -> dict:
    """Offsets as a streaming query passes them back to its source: through JSON."""
    return json.loads(json.dumps(offsets))


def copy_shares(options: dict, shares: Iterator) -> Iterator[tuple]:
    """A task: copy its shares (usually one) with the replication source's reader."""
    from kafka_dr.spark.source import ReplicationStreamReader
    from kafka_dr.spark.timeline import mark_once

    mark_once("task started")
    reader = ReplicationStreamReader(options)
    for share in shares:
        yield from reader.rows(share)


def copy_here(options: dict, shares: list, helper) -> list[tuple]:
    """Copy the first share in this process and the rest in ``helper`` at the same time. When
    this one's copy fails, the helper's is still waited for: the next attempt plans from the
    progress both committed, never beside a copy still running. A helper that has ended
    without its rows fails this attempt; the next one copies every share here."""
    if helper is None or not helper.usable or len(shares) < 2:
        return list(copy_shares(options, iter(shares)))
    helper.start(options, shares[1:])
    try:
        own = list(copy_shares(options, iter(shares[:1])))
    except BaseException:
        try:
            helper.rows()
        except Exception:  # noqa: BLE001, S110 - this process's failure is the one raised
            pass
        raise
    return own + helper.rows()


def _copy(spark, options: dict, shares: list, stop, deadline: float | None) -> list[tuple]:
    """Run one task per share and collect their rows; a stop (or the deadline) lets the job
    finish its transactions for up to :data:`STOP_GRACE_SECONDS`, then cancels it."""
    import functools

    sc = spark.sparkContext
    group = f"kafka-dr-ranges-{uuid.uuid4().hex[:8]}"
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.5):
            if deadline and time.monotonic() >= deadline:
                stop.request("max duration")
            if stop.requested():
                done.wait(STOP_GRACE_SECONDS)
                if not done.is_set():
                    sc.cancelJobGroup(group)
                return

    watcher = threading.Thread(target=watch, name="kafka-dr-range-job-stop", daemon=True)
    watcher.start()
    sc.setJobGroup(group, f"kafka-dr {options['flow']}: copy {len(shares)} share(s)", interruptOnCancel=True)
    try:
        return sc.parallelize(shares, len(shares)).mapPartitions(functools.partial(copy_shares, options)).collect()
    except Exception:
        if stop.requested():
            return []  # cancelled as asked: each partition's progress is what its transactions committed
        raise
    finally:
        done.set()
        sc.setLocalProperty("spark.jobGroup.id", None)

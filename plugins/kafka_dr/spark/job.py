"""Run one flow with Spark, supervised.

``incremental`` copies what is there in one Spark job of range tasks and returns
(:mod:`kafka_dr.spark.range_job`); ``continuous`` is a Structured Streaming query that runs
micro-batches until ``max_duration_seconds``, SIGTERM/SIGINT or a stop file, finishing the
batch in flight before it stops (:mod:`kafka_dr.spark.supervision`). A failed run is restarted
with exponential backoff up to ``max_restarts`` failures in a row, resuming from the progress
committed in Kafka, so nothing is lost or copied twice; a failure no restart cures stops the job at once
(docs/replication.md, "Failures"). Each batch's rows go to the log and the metrics topic
(:mod:`kafka_dr.spark.metrics_sink`).

    run_flow: load_flow -> Spark session -> MetricsSink -> signals -> _restart_loop(_attempt)
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafka_dr.core.config import DrConfig, FlowConfig, FlowMode
from kafka_dr.kafka.copy_tuning import JOB_CHUNK_RECORDS
from kafka_dr.spark.driver_options import driver_java_options
from kafka_dr.spark.metrics_sink import JobSummary, MetricsSink
from kafka_dr.spark.outage_watch import silent_cluster, watch_outages
from kafka_dr.spark.supervision import (
    STALL_SECONDS,
    Stop,
    failure_reason,
    is_permanent,
    is_unreachable,
    jvm_answers,
    stop_on_signals,
    stop_when,
    supervise,
)

log = logging.getLogger("kafka_dr.replicate")


@dataclass
class JobOptions:
    config: str
    flow: str
    mode: str | None = None  # default: the flow's mode
    trigger_seconds: float = 1.0
    max_duration_seconds: float | None = None
    max_restarts: int = 5
    stop_file: str | None = None
    allow_reset: bool = False
    chunk_records: int = JOB_CHUNK_RECORDS  #: records per transaction at most (see there)
    master: str | None = None  # None: as spark-submit says
    #: at most this many records per source partition per micro-batch (0: no cap). Spreads a
    #: large backlog over several batches; an incremental run copies one batch only.
    max_records_per_batch: int = 0
    #: continuous mode: each micro-batch is ``tasks`` streaming tasks of this many seconds
    #: (0: micro-batches of fixed offset ranges, as incremental mode runs them)
    task_seconds: float = 30.0
    tasks: int = 1
    #: streaming tasks commit a transaction this often at the latest (the latency floor)
    commit_seconds: float = 0.1
    #: one streaming task (``tasks`` 1) copies all partitions in one transaction at a time
    #: (kafka_dr.kafka.task_copier); False: a transaction per partition, as with several tasks
    task_transactions: bool = True
    #: an incremental run with at most this many offsets to copy copies them without Spark
    #: (None: the config's ``spark.driver_copy_max_records``)
    driver_copy_max_records: int | None = None


#: the pause before the first restart of a failed query; it doubles with each restart, up to the second
FIRST_BACKOFF_SECONDS, MAX_BACKOFF_SECONDS = 2.0, 60.0
STATE_READ_TIMEOUT_SECONDS = 2.0
#: A running job reads the DR state this often: a failover recorded meanwhile stops it (the
#: failback copies between the two clusters itself, and its gate must not race a running
#: flow into the recovered cluster, which resumes copying the moment that cluster is back)
FAILOVER_CHECK_SECONDS = 10.0


@dataclass(frozen=True)
class FlowRun:
    """One run of a flow: what its steps read."""

    opts: JobOptions
    cfg: DrConfig
    flow: FlowConfig
    mode: FlowMode
    max_duration: float | None  #: seconds; None: no limit

    @property
    def driver_copy_max_records(self) -> int:
        """The largest backlog copied without Spark: the job's option, else the config's."""
        limit = self.opts.driver_copy_max_records
        return self.cfg.spark.driver_copy_max_records if limit is None else limit

    @property
    def streaming(self) -> bool:
        """Continuous micro-batches of streaming tasks (else fixed offset ranges)."""
        return self.mode is FlowMode.CONTINUOUS and self.opts.task_seconds > 0 and self.opts.max_records_per_batch <= 0


def spark_session(cfg, app_name: str, master: str | None = None, extra: dict[str, str] | None = None):
    """A Spark session for replication: the config's Spark settings, Python workers on this
    interpreter (so they import this package), quiet console, on a cluster the executors' secrets
    (:mod:`kafka_dr.spark.executor_conf`). ``extra`` settings come before the config's, which
    win, except the few every job keeps (``executor_conf.FIXED``)."""
    from pyspark.sql import SparkSession

    from kafka_dr.spark.class_archive import with_class_archive
    from kafka_dr.spark.executor_conf import FIXED, executor_secrets
    from kafka_dr.spark.executor_env import executor_env_conf, with_driver_bin_first

    shipped = executor_env_conf(cfg.spark)
    # Spark starts Python workers (data-source planners included) with $PYSPARK_PYTHON, read
    # when the JVM starts; the spark.pyspark.python setting does not reach all of them.
    if shipped:  # the executors' Python by name; here that name must be this interpreter
        os.environ.update(with_driver_bin_first(os.environ))
        os.environ["PYSPARK_PYTHON"] = shipped["spark.pyspark.python"]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    settings = {
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.showConsoleProgress": "false",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        **executor_secrets(cfg, os.environ),
        **(extra or {}),
        **dict(cfg.spark.conf),
        **shipped,
        **FIXED,
    }
    for k, v in with_class_archive(settings).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def run_flow(opts: JobOptions, spark=None) -> JobSummary:
    """Run the flow ``opts`` names (module docstring) and return what it did; raises when it
    stops on a failure."""
    run = load_flow(opts)  # checked before Spark starts
    helper = _fork_copy_helper(run, spark)  # before any Kafka client exists (copy_helper)
    try:
        return _run_flow(run, spark, helper)
    finally:
        if helper is not None:
            helper.close()


def _fork_copy_helper(run: FlowRun, spark):
    """A second copy process for a backlog the driver may copy itself, where a core is spare."""
    from kafka_dr.spark.copy_helper import CopyHelper
    from kafka_dr.spark.range_job import copy_shares

    may_copy_here = spark is None and run.mode is FlowMode.INCREMENTAL and run.driver_copy_max_records > 0
    if not may_copy_here or run.cfg.spark.driver_copy_processes < 2 or (os.cpu_count() or 1) < 2:
        return None
    # imported once, for both processes (pyspark's share: about 0.3 s, paid by a run with
    # nothing new too; the copy needs them in both)
    import kafka_dr.kafka.copier  # noqa: F401
    import kafka_dr.spark.source  # noqa: F401

    return CopyHelper.fork(copy_shares)


def _run_flow(run: FlowRun, spark, helper) -> JobSummary:
    from kafka_dr.spark.source import ReplicationSource
    from kafka_dr.spark.warmup import start_workers

    opts = run.opts
    in_driver = False
    if run.mode is FlowMode.INCREMENTAL:
        left = backlog_now(run)
        if left is not None and left.offsets == 0:
            return nothing_new(run, left.partitions)
        # a session handed in is the caller's choice: Spark it is
        in_driver = spark is None and left is not None and left.offsets <= run.driver_copy_max_records
        if in_driver:
            log.info(
                "flow %s: %d offset(s) to copy: copied in the driver, no Spark%s",
                run.flow.name,
                left.offsets,
                f", with a second process (pid {helper.pid})" if helper else "",
            )
    if helper is not None and not in_driver:
        helper.close()  # Spark copies it, or nothing does
    if spark is None and not in_driver:
        spark = spark_session(
            run.cfg, f"kafka-dr-{run.flow.name}", opts.master, driver_java_options(opts.master, run.cfg.spark.conf)
        )
        log.info("timeline: spark up")
    if run.mode is not FlowMode.INCREMENTAL:  # an incremental run is a plain Spark job (range_job)
        spark.dataSource.register(ReplicationSource)
    if run.mode is FlowMode.CONTINUOUS and not run.streaming:
        # Not for streaming tasks: a spare warm worker would take every other task, and each
        # such hand-over fences the running copy in the other worker (kafka_dr.spark.streams)
        start_workers(spark)
    sink = MetricsSink(run.cfg, run.flow, continuous=run.mode is FlowMode.CONTINUOUS)
    log.info("timeline: metrics sink")
    stop = Stop(opts.stop_file)
    try:
        with (
            stop_on_signals(stop),
            stop_when(stop, lambda: _failover_reason(run), FAILOVER_CHECK_SECONDS),
            _group_sync(run, lambda: sink.query_started),
            watch_outages(run.cfg, run.flow) if run.mode is FlowMode.CONTINUOUS else contextlib.nullcontext(),
        ):
            deadline = time.monotonic() + run.max_duration if run.max_duration else None
            sink.watch_selection()
            return _restart_loop(
                run,
                sink.summary,
                stop,
                deadline,
                lambda: _attempt(spark, run, sink, stop, deadline, helper if in_driver else None),
                lambda: failed_over(run),
                lambda: spark is None or jvm_answers(spark),
                lambda: sink.progressed_at,
                lambda: a_cluster_is_silent(run.cfg, run.flow),
            )
    finally:
        sink.producer.flush(10)


def backlog_now(run: FlowRun):
    """The flow's backlog (:class:`~kafka_dr.kafka.flow_start.Backlog`), read with plain Kafka
    clients before any Spark session starts; None when the question gets no answer (the run
    then finds out as it always does)."""
    from kafka_dr.core.secret_refs import env_resolver
    from kafka_dr.kafka.flow_start import backlog

    return backlog(run.cfg, run.flow, env_resolver(), run.opts.allow_reset)


def nothing_new(run: FlowRun, partitions: int) -> JobSummary:
    """An incremental run's summary when every partition is already copied to the source's end
    (heartbeats included): a scheduled run that finds nothing costs a second, not a Spark
    start-up."""
    from kafka_dr.core.secret_refs import env_resolver
    from kafka_dr.kafka.selection import SelectionWatch

    resolve = env_resolver()
    log.info("flow %s: nothing new in its %d partition(s): no Spark job", run.flow.name, partitions)
    summary = JobSummary(flow=run.flow.name, stopped_by="nothing new")
    if (empty := SelectionWatch(run.cfg, run.flow, resolve).check()) is not None:  # logs its warning
        summary.warnings.append(str(empty))
    return summary


def _group_sync(run: FlowRun, started: Callable[[], bool]):
    """A continuous flow's job syncs its consumer groups' positions onto the target meanwhile,
    from once its query has ``started()`` (:mod:`kafka_dr.kafka.group_sync`): not from its first
    completed batch, which streaming tasks end only after ``task_seconds``, so a restarted job
    would leave positions unsynced that long beyond its restart. An incremental flow's are the
    ``dr_offset_sync`` DAG's."""
    if run.mode is not FlowMode.CONTINUOUS:
        return contextlib.nullcontext()
    from kafka_dr.core.secret_refs import env_resolver
    from kafka_dr.kafka.group_sync import syncing_meanwhile

    return syncing_meanwhile(run.cfg, run.flow, env_resolver(), begin=started)


def load_flow(opts: JobOptions) -> FlowRun:
    """The config and the flow ``opts`` names, checked (an unknown flow is a usage error)."""
    from kafka_dr.core.config_load import load_config
    from kafka_dr.core.inputs import flow_problems, require_valid

    cfg = load_config(opts.config)
    require_valid(flow_problems(cfg, [opts.flow], opts.config))
    flow = {f.name: f for f in cfg.flows}[opts.flow]
    return FlowRun(
        opts,
        cfg,
        flow,
        FlowMode(opts.mode) if opts.mode else flow.mode,
        opts.max_duration_seconds or flow.max_duration_seconds,
    )


def _failover_reason(run: FlowRun) -> str | None:
    failed = failed_over(run)
    return None if failed is None else f"failover of {failed}"


def failed_over(run: FlowRun) -> str | None:
    """The failed-over cluster that stops this flow (its source or target), read from the DR
    state on the clusters that answer; None while the flow may run."""
    from kafka_dr.core.secret_refs import env_resolver
    from kafka_dr.kafka.state_store import read_state

    # asked before every restart, often while a cluster is down: a short wait per silent cluster
    return read_state(run.cfg, env_resolver(), timeout=STATE_READ_TIMEOUT_SECONDS).stopping(
        run.flow.source, run.flow.target
    )


def a_cluster_is_silent(cfg: DrConfig, flow: FlowConfig) -> bool:
    """Whether the flow's source or target gives no metadata within ``PROBE_SECONDS``."""
    return silent_cluster(cfg, flow) is not None


def _restart_loop(
    run: FlowRun,
    summary: JobSummary,
    stop: Stop,
    deadline: float | None,
    attempt: Callable[[], BaseException | None],
    stopped_by_failover: Callable[[], str | None],
    jvm_alive: Callable[[], bool] = lambda: True,
    progressed_at: Callable[[], float] = lambda: float("-inf"),
    still_silent: Callable[[], bool] = lambda: True,
) -> JobSummary:
    """Run ``attempt`` (one query, :func:`_attempt`) until it ends well; after a failure, run it
    again after a pause that doubles each time, unless :func:`_raise_unless_restartable` ends the
    run, or a failover recorded since the job started stops the flow (``stopped_by_failover``).
    A driver whose JVM is gone ends at once and without a restart alert: no query can start in
    it, and whatever supervises the job (the DAG's next try) starts a whole new one. A restart
    is alerted at once when a cluster did not answer and still does not (``still_silent``: a
    network cut, a cluster down), else once the flow has copied nothing (``progressed_at``,
    monotonic) for ``thresholds.restart_alert_after_seconds``: a failure it rides out sooner (a
    leader election, a broker's restart, a request that timed out on a busy host) is only logged.

    As a service manager does, a query that copied something since the last failure starts the
    count afresh: the pause is the first one again and ``max_restarts`` counts failures in a row
    (an hour-long job rides out many separate faults). After a failure because a cluster did
    not answer, the pause ends as soon as both clusters answer again."""
    backoff, in_a_row, failed_at = FIRST_BACKOFF_SECONDS, 0, float("-inf")
    while (error := attempt()) is not None:
        summary.restarts += 1
        if progressed_at() > failed_at:  # the last query copied: a new fault, not the same one again
            backoff, in_a_row = FIRST_BACKOFF_SECONDS, 0
        in_a_row += 1
        failed_at = time.monotonic()
        reason = failure_reason(error, run.flow.name)
        if not jvm_alive():
            raise RuntimeError(f"flow {run.flow.name}: stopped: the driver's JVM is gone (killed or crashed)")
        if (failed := stopped_by_failover()) is not None:
            # a failback copies between the two itself: this job must not start again
            log.warning("flow %s: %s is failed over; the job stops (%s)", run.flow.name, failed, reason)
            summary.stopped_by = f"failover of {failed}"
            return summary
        _raise_unless_restartable(run, in_a_row, reason, stop, deadline)
        log.error(
            "flow %s: query failed (%s); restart %d/%d in %.0fs",
            run.flow.name,
            reason,
            in_a_row,
            run.opts.max_restarts,
            backoff,
        )
        quiet = time.monotonic() - progressed_at()
        silent = is_unreachable(reason) and still_silent()
        if quiet >= run.cfg.thresholds.restart_alert_after_seconds or silent:
            alert_restart(run.cfg, run.flow.name, reason, in_a_row, run.opts.max_restarts, backoff, quiet)
        else:
            log.warning("flow %s: not alerted: the flow copied %.0fs ago", run.flow.name, quiet)
        # after a silent cluster, restart as soon as it answers again (each probe waits up to
        # PROBE_SECONDS): the pause only spares clusters that are still down
        stop.sleep(backoff, until=(lambda: not still_silent()) if silent else None)
        backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
    summary.stopped_by = stop.reason or ("completed" if run.mode is FlowMode.INCREMENTAL else "max duration")
    return summary


def _raise_unless_restartable(run: FlowRun, restarts: int, reason: str, stop: Stop, deadline: float | None) -> None:
    """End the run on a failure that is permanent, one past ``max_restarts``, or one after a stop
    was asked for (a signal, the stop file, the max duration)."""
    why = reason.removeprefix(f"flow {run.flow.name}: ")
    if is_permanent(reason):
        raise RuntimeError(f"flow {run.flow.name}: stopped: {why}")
    if restarts > run.opts.max_restarts or stop.requested() or (deadline and time.monotonic() > deadline):
        raise RuntimeError(f"flow {run.flow.name}: giving up after {restarts} failed run(s); last error: {why}")


def _attempt(
    spark, run: FlowRun, sink: MetricsSink, stop: Stop, deadline: float | None, helper=None
) -> BaseException | None:
    """Run one query to its end: None when it ended well (done, or stopped as asked), else why
    it failed. Its checkpoint is a folder thrown away after it: progress lives in Kafka. A copy
    in the driver shares its ranges with ``helper`` (:mod:`kafka_dr.spark.copy_helper`)."""
    checkpoint = tempfile.mkdtemp(prefix=f"kafka-dr-{run.flow.name}-")
    stop.marker = os.path.join(checkpoint, "stop")  # streaming tasks watch it (local executors see it)
    try:
        if run.mode is FlowMode.INCREMENTAL:  # one batch: a Spark job, no streaming query (range_job)
            from kafka_dr.spark.range_job import run_ranges

            log.info("flow %s: incremental run started (%s -> %s)", run.flow.name, run.flow.source, run.flow.target)
            run_ranges(spark, _source_options(spark, run, stop.marker, helper), sink, stop, deadline, helper)
            return None
        query = _start_query(spark, run, sink, checkpoint, stop.marker)
        log.info(
            "flow %s: %s query started (%s -> %s)", run.flow.name, run.mode.value, run.flow.source, run.flow.target
        )
        log.info("timeline: query started")
        sink.last_batch[0] = time.monotonic()
        sink.query_started = True
        stalled = supervise(
            query, stop, deadline, sink.last_batch, STALL_SECONDS + run.opts.task_seconds if run.streaming else None
        )
        if stalled:
            raise RuntimeError(f"flow {run.flow.name}: {stalled}")
        return query.exception()
    except Exception as e:  # noqa: BLE001 - any failure of the query is retried
        return e
    finally:
        shutil.rmtree(checkpoint, ignore_errors=True)


def _start_query(spark, run: FlowRun, sink: MetricsSink, checkpoint: str, marker: str):
    """Start the flow's query over the replication source (:mod:`kafka_dr.spark.source`)."""
    reader = spark.readStream.format("kafka_dr_replication").options(**_source_options(spark, run, marker)).load()
    writer = reader.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint)
    return writer.trigger(processingTime=f"{run.opts.trigger_seconds} seconds").start()


def _source_options(spark, run: FlowRun, marker: str, helper=None) -> dict[str, str]:
    """The replication source's options (:mod:`kafka_dr.spark.source`) for this run."""
    o = run.opts
    return {
        "config": str(Path(o.config).resolve()),
        "config_text": Path(o.config).read_text(encoding="utf-8"),  # executors may have no file of it
        "flow": run.flow.name,
        "allow_reset": str(o.allow_reset).lower(),
        "chunk_records": str(o.chunk_records),
        "max_records_per_batch": str(o.max_records_per_batch),
        "task_seconds": str(o.task_seconds if run.streaming else 0),
        "tasks": str(o.tasks),
        "commit_seconds": str(o.commit_seconds),
        "stop_marker": marker,
        "transactions": "task" if o.task_transactions else "partition",
        # fixed ranges: one task per core Spark has (spark.default.parallelism), not per partition;
        # copied in the driver: a share for it and one for its forked helper, if it has one (a
        # thread per share measured no faster, the loops sharing one interpreter: docs/benchmarks.md)
        "range_tasks": str(spark.sparkContext.defaultParallelism if spark is not None else 2 if helper else 1),
    }


def alert_restart(
    cfg, flow: str, reason: str, restart: int, max_restarts: int, backoff: float, quiet: float | None = None
) -> None:
    """Tell the config's alert channels (webhook, e-mail) that a flow's query failed and is
    being restarted: an operator hears of a cluster outage while the job still rides it out,
    not only when it gives up (then the DAG task's failure callback alerts). ``quiet``: seconds
    since the flow last copied. Never raises."""
    if cfg.alerts.webhook is None and cfg.alerts.email is None:
        return
    subject = f"[kafka-dr] flow {flow}: replication query failed, restart {restart}/{max_restarts} in {backoff:.0f}s"
    if quiet is not None:
        subject += f"; nothing copied for {quiet:.0f}s"
    body = f"{subject}\n\n{reason}\n"
    payload = {
        "source": "kafka-dr",
        "flow": flow,
        "event": "restart",
        "restart": restart,
        "max_restarts": max_restarts,
        "backoff_seconds": backoff,
        "copied_nothing_for_seconds": quiet,
        "error": reason,
    }
    from kafka_dr.alerts import send_all

    send_all(cfg.alerts, subject, body, payload)


def add_arguments(p) -> None:
    """The job's arguments, the same for ``spark-submit spark_jobs/replicate.py`` and ``kafka-dr replicate``."""
    p.add_argument(
        "--config", default=os.environ.get("KAFKA_DR_CONFIG"), help="kafka-dr YAML (default $KAFKA_DR_CONFIG)"
    )
    p.add_argument("--flow", required=True, help="the flow to run (its name in the config, e.g. east_to_west)")
    p.add_argument("--mode", choices=["continuous", "incremental"], default=None, help="default: the flow's mode")
    p.add_argument("--trigger-seconds", type=float, default=1.0)
    p.add_argument("--max-duration", type=float, default=None, help="continuous mode: stop after this many seconds")
    p.add_argument("--max-restarts", type=int, default=5)
    p.add_argument("--stop-file", default=None, help="stop gracefully when this file appears")
    p.add_argument(
        "--reset-progress",
        "--allow-reset",
        dest="allow_reset",
        action="store_true",
        help="resume partitions whose progress state was lost after the last copy found on the target "
        "(without it the job refuses to start them: ProgressLost)",
    )
    p.add_argument(
        "--chunk-records",
        type=int,
        default=JOB_CHUNK_RECORDS,
        help=f"records per transaction at most (default {JOB_CHUNK_RECORDS:,})",
    )
    p.add_argument(
        "--max-records-per-batch",
        type=int,
        default=0,
        help="at most this many records per source partition per micro-batch (0: no cap)",
    )
    p.add_argument(
        "--task-seconds",
        type=float,
        default=30.0,
        help="continuous mode: streaming tasks of this many seconds (default 30; 0: fixed-range micro-batches)",
    )
    p.add_argument(
        "--tasks",
        type=int,
        default=1,
        help="continuous mode: streaming tasks per micro-batch (partitions are shared out)",
    )
    p.add_argument(
        "--commit-seconds",
        type=float,
        default=0.1,
        help="continuous mode: the longest a transaction stays open (it commits as soon as it has caught up)",
    )
    p.add_argument(
        "--partition-transactions",
        action="store_true",
        help="continuous mode, one task: a transaction per partition instead of one for all of them",
    )
    p.add_argument(
        "--driver-copy-max-records",
        type=int,
        default=None,
        help="incremental mode: a backlog of at most this many offsets is copied in the driver, without Spark "
        "(default: the config's spark.driver_copy_max_records, 2,000,000 unless set; 0: always Spark)",
    )
    p.add_argument("--master", default=None, help="Spark master when not run by spark-submit")


def job_options(a) -> JobOptions:
    """Parsed arguments as the job's options; a missing config is a usage error (exit 2)."""
    from kafka_dr.core.inputs import InvalidInput

    if not a.config:
        raise InvalidInput(["--config or $KAFKA_DR_CONFIG is required"])
    for flag, v, least in (
        ("--tasks", a.tasks, 1),
        ("--chunk-records", a.chunk_records, 1),
        ("--max-restarts", a.max_restarts, 0),
        ("--driver-copy-max-records", 0 if a.driver_copy_max_records is None else a.driver_copy_max_records, 0),
    ):
        if v < least:
            raise InvalidInput([f"{flag} {v}: must be at least {least}"])
    return JobOptions(
        config=a.config,
        flow=a.flow,
        mode=a.mode,
        trigger_seconds=a.trigger_seconds,
        max_duration_seconds=a.max_duration,
        max_restarts=a.max_restarts,
        stop_file=a.stop_file,
        allow_reset=a.allow_reset,
        chunk_records=a.chunk_records,
        master=a.master,
        max_records_per_batch=a.max_records_per_batch,
        task_seconds=a.task_seconds,
        tasks=a.tasks,
        commit_seconds=a.commit_seconds,
        task_transactions=not a.partition_transactions,
        driver_copy_max_records=a.driver_copy_max_records,
    )


def main(argv: list[str] | None = None) -> int:
    """The spark-submit entry: logs to stdout, the summary as one JSON line, a failure as one line last."""
    import argparse

    from kafka_dr.entry import run_entry

    p = argparse.ArgumentParser(prog="replicate", description="Replicate one kafka-dr flow with Spark.")
    add_arguments(p)
    p.add_argument("--debug", action="store_true", help="a Python traceback with a failure")
    a = p.parse_args(argv)

    def body() -> int:
        opts = job_options(a)
        logging.basicConfig(
            level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s", stream=sys.stdout
        )
        logging.getLogger("py4j").setLevel(logging.WARNING)  # its INFO lines are connection chatter
        log.info("timeline: interpreter")  # the start-up's steps, for kafka-dr bench (TIMELINE)
        summary = run_flow(opts)
        print(json.dumps({"kafka_dr.summary": summary.__dict__}), flush=True)
        return 0

    return run_entry("replicate", body, a.debug)

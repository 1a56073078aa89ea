"""Run one flow as a Spark Structured Streaming query, supervised.

``incremental`` copies what is there (``trigger(availableNow=True)``) and returns;
``continuous`` runs micro-batches until ``max_duration_seconds``, SIGTERM/SIGINT or a stop
file, finishing the batch in flight before it stops. A continuous flow's micro-batches are
streaming tasks by default (``task_seconds`` > 0; see :mod:`kafka_dr.spark.source`):
records are committed as they arrive (at the latest every ``commit_seconds``), and a stop
reaches the tasks through a marker file. A failed query (a cluster unreachable, say) is restarted with exponential backoff up to ``max_restarts`` times; every restart resumes
from the progress committed in Kafka, so nothing is lost or copied twice.

Each micro-batch's per-partition results are logged as one JSON line each
(``kafka_dr.metrics {...}``) and published to ``<prefix>.metrics`` on the target cluster,
where the heartbeat, status and data-quality features read them.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kafka_dr.kafka.copier import JOB_CHUNK_RECORDS
from kafka_dr.spark.driver_options import driver_java_options

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
    #: (0: micro-batches of fixed offset ranges, as incremental mode runs them). The default
    #: since the orphaned progress commit a target restart once left behind is cleared
    #: (kafka_dr.kafka.orphaned_offsets; docs/replication.md).
    task_seconds: float = 30.0
    tasks: int = 1
    #: streaming tasks commit a transaction this often at the latest (the latency floor)
    commit_seconds: float = 0.1
    #: one streaming task (``tasks`` 1) copies all partitions in one transaction at a time
    #: (kafka_dr.kafka.task_copier); False: a transaction per partition, as with several tasks
    task_transactions: bool = True


@dataclass
class JobSummary:
    flow: str
    batches: int = 0
    records_written: int = 0
    records_filtered: int = 0
    restarts: int = 0
    stopped_by: str = ""
    written_by_topic: dict = field(default_factory=dict)
    #: source records deleted before they were replicated (a first run's log start past 0 included)
    lost_to_retention: int = 0
    #: what the run warned of (records lost to retention, a selection that matches no topic)
    warnings: list = field(default_factory=list)


#: A streaming query whose micro-batch has not completed this long past ``task_seconds`` is
#: stopped and restarted (see _supervise): longer than a partition thread's own stuck limit
#: (kafka_dr.spark.streams.STUCK_SECONDS, 240 s) plus a query start.
STALL_SECONDS = 330.0

#: Failures a restart cannot cure: stop at once instead of backing off.
PERMANENT = ("ModuleNotFoundError", "ImportError", "ConfigError", "ProgressLost", "TargetTopicMismatch", "RecordRejected",
             "partitions but", " refuses ", " refused ", "no flow named", "AuthenticationFailed", "authentication failed",
             "TLS handshake failed", "UnresolvedSecret", "no committed progress")


class _Stop:
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


def spark_session(cfg, app_name: str, master: str | None = None, extra: dict[str, str] | None = None):
    """A Spark session for replication: the config's Spark settings, Python workers on this
    interpreter (so they import this package), quiet console. ``extra`` settings come before
    the config's, which win."""
    from pyspark.sql import SparkSession

    # Spark starts Python workers (data-source planners included) with $PYSPARK_PYTHON, read
    # when the JVM starts; the spark.pyspark.python setting does not reach all of them.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for k, v in {"spark.sql.shuffle.partitions": "2", "spark.ui.showConsoleProgress": "false",
                 "spark.pyspark.python": sys.executable, "spark.pyspark.driver.python": sys.executable, **(extra or {}),
                 **dict(cfg.spark.conf)}.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def run_flow(opts: JobOptions, spark=None) -> JobSummary:

    from kafka_dr.core.config import FlowMode
    from kafka_dr.core.config_load import load_config
    from kafka_dr.core.secret_refs import env_resolver
    from kafka_dr.kafka import clients
    from kafka_dr.kafka.selection import SelectionWatch
    from kafka_dr.kafka.topics import ensure_topic
    from kafka_dr.spark.source import FIELDS, ReplicationSource

    from kafka_dr.core.inputs import flow_problems, require_valid

    cfg = load_config(opts.config)
    require_valid(flow_problems(cfg, [opts.flow], opts.config))  # before Spark starts
    flow = {f.name: f for f in cfg.flows}[opts.flow]
    mode = FlowMode(opts.mode) if opts.mode else flow.mode
    max_duration = opts.max_duration_seconds or flow.max_duration_seconds

    if spark is None:
        spark = spark_session(cfg, f"kafka-dr-{flow.name}", opts.master, driver_java_options(opts.master, cfg.spark.conf))
    spark.dataSource.register(ReplicationSource)

    target = cfg.cluster(flow.target)
    mtopic = cfg.names.metrics_topic
    try:
        ensure_topic(clients.admin(target, env_resolver()), mtopic, partitions=1, config={"retention.ms": str(7 * 86400 * 1000)})
    except Exception as e:  # noqa: BLE001 - named: refused credentials, or which cluster did not answer
        raise clients.unreachable(target, f"flow {flow.name}: creating {mtopic} on target", str(e), env_resolver()) from None
    metrics_producer = clients.producer(target, env_resolver())
    summary = JobSummary(flow.name)
    selection = SelectionWatch(cfg, flow, env_resolver())

    def watch_selection() -> None:
        empty = selection.check()  # logs its warning
        if empty is not None:
            summary.warnings.append(str(empty))

    def sink(df, batch_id: int) -> None:
        rows = df.collect()  # one small row per partition range: nothing big reaches the driver
        for row in rows:
            d = {k: row[k] for k in FIELDS}
            d["batch"] = batch_id
            d["at_ms"] = int(time.time() * 1000)
            line = json.dumps(d, separators=(",", ":"))
            log.info("kafka_dr.metrics %s", line)
            metrics_producer.produce(mtopic, key=flow.name.encode(), value=line.encode())
            summary.records_written += d["written"] or 0
            summary.written_by_topic[d["topic"]] = summary.written_by_topic.get(d["topic"], 0) + (d["written"] or 0)
            summary.records_filtered += d["filtered"] or 0
            if d["lost_to_retention"]:
                summary.lost_to_retention += d["lost_to_retention"]
                summary.warnings.append(lost_warning(flow, d))
                log.warning("%s", summary.warnings[-1])
        metrics_producer.flush(30)
        if mode is FlowMode.CONTINUOUS:
            watch_selection()
        summary.batches += 1
        last_batch[0] = time.monotonic()

    stop = _Stop(opts.stop_file)
    last_batch = [time.monotonic()]  #: when a micro-batch last completed or no trigger ran (the stall watchdog)
    previous = {}
    if threading.current_thread() is threading.main_thread():  # signals only reach the main thread
        previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
        for s in previous:
            signal.signal(s, lambda signum, _frame: stop.request(signal.Signals(signum).name))
    deadline = time.monotonic() + max_duration if max_duration else None
    backoff = 2.0
    watch_selection()
    try:
        streaming = mode is FlowMode.CONTINUOUS and opts.task_seconds > 0 and opts.max_records_per_batch <= 0
        while True:
            checkpoint = tempfile.mkdtemp(prefix=f"kafka-dr-{flow.name}-")
            stop.marker = os.path.join(checkpoint, "stop")  # streaming tasks watch it (local executors see it)
            try:
                reader = (spark.readStream.format("kafka_dr_replication").option("config", str(Path(opts.config).resolve()))
                          .option("flow", flow.name).option("allow_reset", str(opts.allow_reset).lower())
                          .option("chunk_records", str(opts.chunk_records))
                          .option("max_records_per_batch", str(opts.max_records_per_batch))
                          .option("task_seconds", str(opts.task_seconds if streaming else 0)).option("tasks", str(opts.tasks))
                          .option("commit_seconds", str(opts.commit_seconds)).option("stop_marker", stop.marker)
                          .option("transactions", "task" if opts.task_transactions else "partition").load())
                writer = reader.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint)
                if mode is FlowMode.INCREMENTAL:
                    query = writer.trigger(availableNow=True).start()
                else:
                    query = writer.trigger(processingTime=f"{opts.trigger_seconds} seconds").start()
                log.info("flow %s: %s query started (%s -> %s)", flow.name, mode.value, flow.source, flow.target)
                last_batch[0] = time.monotonic()
                stalled = _supervise(query, stop, deadline, last_batch, STALL_SECONDS + opts.task_seconds if streaming else None)
                if stalled:
                    raise RuntimeError(f"flow {flow.name}: {stalled}")
                if query.exception() is None:
                    summary.stopped_by = stop.reason or ("completed" if mode is FlowMode.INCREMENTAL else "max duration")
                    return summary
                error = query.exception()
            except Exception as e:  # noqa: BLE001 - any failure of the query is retried
                error = e
            finally:
                shutil.rmtree(checkpoint, ignore_errors=True)
            summary.restarts += 1
            reason = failure_reason(error, flow.name)
            why = reason.removeprefix(f"flow {flow.name}: ")
            if any(kind in reason for kind in PERMANENT):
                raise RuntimeError(f"flow {flow.name}: stopped: {why}")
            if summary.restarts > opts.max_restarts or stop.requested() or (deadline and time.monotonic() > deadline):
                raise RuntimeError(f"flow {flow.name}: giving up after {summary.restarts} failed run(s); last error: {why}")
            log.error("flow %s: query failed (%s); restart %d/%d in %.0fs", flow.name, reason, summary.restarts, opts.max_restarts, backoff)
            alert_restart(cfg, flow.name, reason, summary.restarts, opts.max_restarts, backoff)
            _sleep(backoff, stop)
            backoff = min(backoff * 2, 60.0)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        metrics_producer.flush(10)


def lost_warning(flow, row: dict) -> str:
    """The job log's line for a metrics row that counts records lost to source retention."""
    span = f" (offsets {row['lost_first']}..{row['lost_last']})" if row.get("lost_first") is not None else ""
    return (f"flow {flow.name}: {row['lost_to_retention']} record(s) of {flow.source}/{row['topic']}[{row['partition']}]{span} were "
            f"deleted on the source before they were replicated (counted in lost_to_retention)")


def alert_restart(cfg, flow: str, reason: str, restart: int, max_restarts: int, backoff: float) -> None:
    """Tell the config's alert channels (webhook, e-mail) that a flow's query failed and is
    being restarted: an operator hears of a cluster outage while the job still rides it out,
    not only when it gives up (then the DAG task's failure callback alerts). Never raises."""
    if cfg.alerts.webhook is None and cfg.alerts.email is None:
        return
    subject = f"[kafka-dr] flow {flow}: replication query failed, restart {restart}/{max_restarts} in {backoff:.0f}s"
    body = f"{subject}\n\n{reason}\n"
    payload = {"source": "kafka-dr", "flow": flow, "event": "restart", "restart": restart, "max_restarts": max_restarts,
               "backoff_seconds": backoff, "error": reason}
    from kafka_dr.alerts import send_all

    send_all(cfg.alerts, subject, body, payload)


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
            return ln[ln.index(marker):]
    py = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception|Lost|Rejected|Mismatch|Unreachable): ", ln)]
    return py[-1] if py else (lines[0] if lines else repr(error))


def _supervise(query, stop: _Stop, deadline: float | None, last_batch: list[float], stall_after: float | None) -> str:
    """Watch the query until it ends or is asked to stop; returns why it was stopped as stalled
    ("" otherwise).

    ``stall_after``: streaming tasks only. A micro-batch that has not completed this long
    after the previous one (or the query's start) is stalled: seen once in CI, during a
    network cut to the target, when a Spark Python worker froze inside a Kafka call (the
    worker's own watchdog froze with it). Stopping the query makes Spark kill the worker;
    the job then restarts the query, and fresh copiers fence the old ones. Only time with a
    trigger running counts: a query with nothing to plan (a flow whose topics do not exist
    yet) runs no batch and is not stuck."""
    while query.isActive:
        query.awaitTermination(0.5)
        if not query.isActive:
            break
        if stall_after is not None and not query.status.get("isTriggerActive", True):
            last_batch[0] = time.monotonic()  # idle between triggers: nothing can be stuck
        if stall_after is not None and time.monotonic() - last_batch[0] > stall_after:
            quiet = time.monotonic() - last_batch[0]
            query.stop()  # the caller raises the reason: the restart path logs and alerts it once
            return (f"no micro-batch completed for {quiet:.0f}s (a streaming task stuck in a Kafka call?); "
                    f"the query was stopped and is restarted")
        if deadline and time.monotonic() >= deadline:
            stop.request("max duration")
        if stop.requested():
            # let the batch in flight finish its transactions, then stop; streaming tasks
            # stop after their current transaction once they see the marker
            stop.tell_tasks()
            t_end = time.monotonic() + 60
            while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < t_end:
                time.sleep(0.2)
            query.stop()
            break
    return ""


def _sleep(seconds: float, stop: _Stop) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end and not stop.requested():
        time.sleep(0.2)


def add_arguments(p) -> None:
    """The job's arguments: ``spark-submit spark_jobs/replicate.py ...`` and ``kafka-dr replicate ...`` take the same."""
    p.add_argument("--config", default=os.environ.get("KAFKA_DR_CONFIG"), help="kafka-dr YAML (default $KAFKA_DR_CONFIG)")
    p.add_argument("--flow", required=True, help="the flow to run (its name in the config, e.g. east_to_west)")
    p.add_argument("--mode", choices=["continuous", "incremental"], default=None, help="default: the flow's mode")
    p.add_argument("--trigger-seconds", type=float, default=1.0)
    p.add_argument("--max-duration", type=float, default=None, help="continuous mode: stop after this many seconds")
    p.add_argument("--max-restarts", type=int, default=5)
    p.add_argument("--stop-file", default=None, help="stop gracefully when this file appears")
    p.add_argument("--reset-progress", "--allow-reset", dest="allow_reset", action="store_true",
                   help="resume partitions whose progress state was lost after the last copy found on the target "
                        "(without it the job refuses to start them: ProgressLost)")
    p.add_argument("--chunk-records", type=int, default=JOB_CHUNK_RECORDS,
                   help=f"records per transaction at most (default {JOB_CHUNK_RECORDS:,})")
    p.add_argument("--max-records-per-batch", type=int, default=0,
                   help="at most this many records per source partition per micro-batch (0: no cap)")
    p.add_argument("--task-seconds", type=float, default=30.0,
                   help="continuous mode: streaming tasks of this many seconds (default 30; 0: fixed-range micro-batches)")
    p.add_argument("--tasks", type=int, default=1, help="continuous mode: streaming tasks per micro-batch (partitions are shared out)")
    p.add_argument("--commit-seconds", type=float, default=0.1,
                   help="continuous mode: the longest a transaction stays open (it commits as soon as it has caught up)")
    p.add_argument("--partition-transactions", action="store_true",
                   help="continuous mode, one task: a transaction per partition instead of one for all of them")
    p.add_argument("--master", default=None, help="Spark master when not run by spark-submit")


def job_options(a) -> JobOptions:
    """Parsed arguments as the job's options; a missing config is a usage error (exit 2)."""
    from kafka_dr.core.inputs import InvalidInput

    if not a.config:
        raise InvalidInput(["--config or $KAFKA_DR_CONFIG is required"])
    for flag, v, least in (("--tasks", a.tasks, 1), ("--chunk-records", a.chunk_records, 1), ("--max-restarts", a.max_restarts, 0)):
        if v < least:
            raise InvalidInput([f"{flag} {v}: must be at least {least}"])
    return JobOptions(config=a.config, flow=a.flow, mode=a.mode, trigger_seconds=a.trigger_seconds,
                      max_duration_seconds=a.max_duration, max_restarts=a.max_restarts, stop_file=a.stop_file,
                      allow_reset=a.allow_reset, chunk_records=a.chunk_records, master=a.master,
                      max_records_per_batch=a.max_records_per_batch, task_seconds=a.task_seconds, tasks=a.tasks,
                      commit_seconds=a.commit_seconds, task_transactions=not a.partition_transactions)


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
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s", stream=sys.stdout)
        logging.getLogger("py4j").setLevel(logging.WARNING)  # its INFO lines are connection chatter
        summary = run_flow(opts)
        print(json.dumps({"kafka_dr.summary": summary.__dict__}), flush=True)
        return 0

    return run_entry("replicate", body, a.debug)

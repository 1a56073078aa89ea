"""One data-quality run: plan the windows (each from its verified watermark unless a full
sweep), build the comparison with Spark, validate with GX, keep the watermarks of the windows
that passed, publish the summary.

``run_data_quality`` is what the ``dr_data_quality`` DAG and the failback gate call. It
raises only when it cannot *check* (a cluster unreachable, a bad flow name); a check that
fails is a result with ``success=False``, for the caller to raise
:class:`~kafka_dr.core.dq.DataQualityFailed` with.
"""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path

from kafka_dr.core.config import DrConfig
from kafka_dr.core.dq import COMPARISON_COLUMNS, DqResult, failure_lines, failures_by_topic
from kafka_dr.kafka.clients import SecretResolver

log = logging.getLogger(__name__)


def context_dir(config: DrConfig) -> Path:
    """Where the GX runtime context (validation results, Data Docs) lives: ``data_quality.dir``,
    else ``data-quality/`` next to the config file."""
    if config.data_quality.dir:
        return Path(config.data_quality.dir)
    base = Path(config.source_path).resolve().parent if config.source_path else Path.cwd()
    return base / "data-quality"


def run_data_quality(
    config: DrConfig,
    spark=None,
    flows: list[str] | None = None,
    topics: list[str] | None = None,
    resolve: SecretResolver | None = None,
    publish_results: bool = True,
    latency_max_ms: float | None = None,
    full: bool = False,
    master: str | None = None,
) -> DqResult:
    """Compare every enabled flow's (or ``flows``') topic-partitions (or only ``topics``, by
    source topic name), the schema registries and the topic configs; validate; publish.

    :param spark: a session to use; default: one from the config's Spark settings
    :param resolve: secret resolver for the driver-side clients (tasks read ``$KAFKA_DR_SECRET_*``)
    :param latency_max_ms: overrides ``thresholds.latency_p99_max_seconds`` (the failback gate
        checks correctness only: records written during an outage were copied late by nature)
    :param full: compare everything the clusters retain (a full sweep), not only what arrived
        since each window's verified watermark (``kafka_dr.core.dq_watermark``)
    :param master: the Spark master when no ``spark`` is given (default: ``spark.master``).
        No session starts when no window has anything to read.
    """
    import pandas as pd

    from kafka_dr.core.dq_watermark import empty, empty_row
    from kafka_dr.dq.incremental import keep_marks, plan_flow
    from kafka_dr.dq.validation import import_in_background, validate
    from kafka_dr.kafka.dq_inputs import config_rows, publish, schema_rows, selected_flows

    if config.source_path is None:
        raise ValueError("data quality: the config must be loaded from a file (Spark tasks read it by path)")
    t0 = time.monotonic()
    ts_ms = int(time.time() * 1000)
    run_id = time.strftime("dq-%Y%m%dT%H%M%SZ", time.gmtime(ts_ms / 1000)) + "-" + uuid.uuid4().hex[:6]
    chosen = selected_flows(config, flows)
    plans = [plan_flow(config, f, topics, resolve, ts_ms, full) for f in chosen]
    windows = [w for p in plans for w in p.windows]
    to_read = [w for w in windows if not empty(w)]
    t_plan = time.monotonic()

    rows = [empty_row(w) for w in windows if empty(w)]
    gx_loaded = None
    if to_read:
        if spark is None:
            from kafka_dr.spark.job import spark_session

            spark = spark_session(config, "kafka-dr-data-quality", master or config.spark.master)
        from kafka_dr.spark.comparison import comparison_rows

        # after Spark's own imports: the two threads import no module at the same time
        gx_loaded = import_in_background()

        window_ms = config.thresholds.latency_window_seconds * 1000
        since = int(ts_ms - window_ms) if window_ms else 0
        rows += comparison_rows(spark, config.source_path, to_read, since)  # one row per window
    t_compare = time.monotonic()
    rows += schema_rows(config, resolve)
    rows += config_rows(config, chosen, topics, resolve)
    # object columns: a partition stays 3, not 3.0, beside the rows that have none
    frame = pd.DataFrame({c: pd.Series([r.get(c) for r in rows], dtype=object) for c in COMPARISON_COLUMNS})

    latency_ms = config.thresholds.latency_p99_max_seconds * 1000.0 if latency_max_ms is None else latency_max_ms
    if gx_loaded is not None:
        gx_loaded.join()
    success, failures, docs = validate(frame, context_dir(config), {"latency_p99_max_ms": latency_ms}, run_id)
    t_validate = time.monotonic()
    partition_rows = [r for r in rows if r["kind"] == "partition"]
    by_window = {(r["flow"], r["topic"], r["partition"]): r for r in partition_rows}
    marks = sum(keep_marks(config, p, by_window, ts_ms, run_id, resolve) for p in plans)
    figures = {
        "records_source": sum(r["source_count"] or 0 for r in partition_rows),
        "records_target": sum(r["target_count"] or 0 for r in partition_rows),
        "windows_from_watermark": sum(p.narrowed for p in plans),
        "windows_full": len(windows) - sum(p.narrowed for p in plans),
        "windows_read": len(to_read),
        "watermarks_written": marks,
        "seconds_plan": round(t_plan - t0, 3),
        "seconds_compare": round(t_compare - t_plan, 3),
        "seconds_validate": round(t_validate - t_compare, 3),
    }
    result = DqResult(
        *(success, failure_lines(failures), docs, run_id, ts_ms, len(windows), figures),
        failures_by_topic(failures, checked={w.topic for w in windows}),
    )
    log.info("%s", result.summary())
    if publish_results:
        publish(config, result.to_record(), resolve)
    return result

"""Every metric kafka-dr serves to Prometheus: name, type, labels and meaning, in one place.

Names follow Prometheus's conventions: the ``kafka_dr_`` namespace, base units (seconds,
bytes), ``_total`` for counters, and label sets bounded by the config (flows, clusters, the
flows' topics and partitions, the configured consumer groups): nothing per record, per
client or per run id. The exporter (:mod:`kafka_dr.exporter`), the shipped alert rules and
the Grafana dashboard (``monitoring/``) use these names; docs/monitoring.md lists them.
"""

from __future__ import annotations

from dataclasses import dataclass

NAMESPACE = "kafka_dr"

FLOW = ("flow", "source", "target")
PARTITION = (*FLOW, "topic", "partition")


@dataclass(frozen=True)
class Metric:
    name: str  #: without the namespace
    kind: str  #: "gauge" | "counter" | "histogram"
    labels: tuple[str, ...]
    help: str

    @property
    def full_name(self) -> str:
        """The name Prometheus stores (a counter's samples end in ``_total``)."""
        base = f"{NAMESPACE}_{self.name}"
        return f"{base}_total" if self.kind == "counter" else base


#: Read from the clusters at each scrape: right while the replication job is dead.
CLUSTER_UP = Metric("cluster_up", "gauge", ("cluster",), "1 when the cluster answered a metadata request, else 0")
LAG_RECORDS = Metric(
    "replication_lag_records",
    "gauge",
    PARTITION,
    "Source end offset minus the flow's committed progress (offsets not yet copied)",
)
LAG_SECONDS = Metric(
    "replication_lag_seconds",
    "gauge",
    PARTITION,
    "Age of the oldest source record the flow has not copied yet (0 when caught up)",
)
FLOW_ACTIVE = Metric(
    "flow_active",
    "gauge",
    FLOW,
    "1 when the flow is enabled and not stopped by a failover (expected to copy), else 0",
)
HEARTBEAT_AGE = Metric(
    "heartbeat_age_seconds", "gauge", FLOW, "Age of the newest heartbeat from the source found on the target"
)
OFFSET_SYNC_AGE = Metric(
    "offset_sync_age_seconds",
    "gauge",
    (*FLOW, "group"),
    "Age of the newest synced position of the consumer group on the flow's target",
)
LAST_RUN_TIMESTAMP = Metric(
    "last_dr_run_timestamp_seconds",
    "gauge",
    ("kind",),
    "When the last failover or failback (kind) finished, as Unix time",
)
LAST_RUN_SUCCESS = Metric(
    "last_dr_run_success", "gauge", ("kind",), "1 when the last failover or failback (kind) succeeded, 0 when it failed"
)
LAST_RUN_DURATION = Metric(
    "last_dr_run_duration_seconds",
    "gauge",
    ("kind",),
    "How long the last failover or failback took, from its start to its last step (its RTO share)",
)
LAST_RUN_RPO_RECORDS = Metric(
    "last_dr_run_missing_records",
    "gauge",
    ("kind",),
    "Records the last failover reported not yet copied when the source failed (its RPO, at least)",
)
LAST_RUN_REREADS = Metric(
    "last_dr_run_reread_records",
    "gauge",
    ("kind",),
    "Records the moved consumer groups re-read after the last failover or failback, as it reported",
)
DQ_SUCCESS = Metric(
    "data_quality_success", "gauge", (), "1 when the newest data-quality run found the clusters agree, else 0"
)
DQ_TIMESTAMP = Metric("data_quality_last_run_timestamp_seconds", "gauge", (), "When the newest data-quality run ran")
DQ_FAILED_CHECKS = Metric(
    "data_quality_failed_checks",
    "gauge",
    ("topic",),
    "Checks the newest data-quality run failed, per topic (0: the topic was compared and passed)",
)
PARITY_READY = Metric(
    "parity_ready",
    "gauge",
    ("from_cluster", "to_cluster"),
    "1 when the newest parity report says consumers can move from one cluster to the other",
)
PARITY_DIFFERENCES = Metric(
    "parity_differences",
    "gauge",
    ("from_cluster", "to_cluster", "kind"),
    "Differences the newest parity report found (ACLs, quotas, topic configs, groups), per kind",
)
THRESHOLD = Metric(
    "threshold",
    "gauge",
    ("name",),
    "The config's thresholds (thresholds.<name>), which the shipped alert rules compare against",
)

#: Counted from the rows each replication micro-batch publishes to the metrics topic, since
#: the exporter started (Prometheus's rate() and increase() handle its restarts).
RECORDS_COPIED = Metric("records_copied", "counter", (*FLOW, "topic"), "Records the flow copied")
BYTES_COPIED = Metric("bytes_copied", "counter", (*FLOW, "topic"), "Bytes (keys, values, headers) the flow copied")
TRANSACTIONS = Metric("transactions_committed", "counter", FLOW, "Transactions the flow's copiers committed")
TRANSACTIONS_ABORTED = Metric(
    "transactions_aborted",
    "counter",
    FLOW,
    "Transactions the flow's copiers rolled back and redid because the target refused a record in them",
)
REFUSED = Metric(
    "records_refused",
    "counter",
    (*FLOW, "topic"),
    "Records the target refused (then copied with a larger request, or dead-lettered)",
)
DEAD_LETTERED = Metric(
    "records_dead_lettered", "counter", (*FLOW, "topic"), "Records the target refused and the flow dead-lettered"
)
LOST_TO_RETENTION = Metric(
    "records_lost_to_retention",
    "counter",
    (*FLOW, "topic"),
    "Source records deleted by retention before the flow copied them",
)
JOB_RESTARTS = Metric("job_restarts", "counter", FLOW, "Times the flow's replication job restarted its query")
LATENCY = Metric(
    "end_to_end_latency_seconds",
    "histogram",
    FLOW,
    "Source append to target append, per micro-batch's median record",
)
LAST_BATCH = Metric(
    "last_batch_timestamp_seconds", "gauge", FLOW, "When the flow's newest micro-batch finished, as Unix time"
)

#: The exporter's own health.
SCRAPE_SECONDS = Metric("exporter_read_duration_seconds", "gauge", (), "How long the exporter's last read took")
READ_ERRORS = Metric("exporter_read_errors", "counter", ("what",), "Reads of the clusters that failed")

ALL = (
    CLUSTER_UP,
    LAG_RECORDS,
    LAG_SECONDS,
    FLOW_ACTIVE,
    HEARTBEAT_AGE,
    OFFSET_SYNC_AGE,
    LAST_RUN_TIMESTAMP,
    LAST_RUN_SUCCESS,
    LAST_RUN_DURATION,
    LAST_RUN_RPO_RECORDS,
    LAST_RUN_REREADS,
    DQ_SUCCESS,
    DQ_TIMESTAMP,
    DQ_FAILED_CHECKS,
    PARITY_READY,
    PARITY_DIFFERENCES,
    THRESHOLD,
    RECORDS_COPIED,
    BYTES_COPIED,
    TRANSACTIONS,
    TRANSACTIONS_ABORTED,
    REFUSED,
    DEAD_LETTERED,
    LOST_TO_RETENTION,
    JOB_RESTARTS,
    LATENCY,
    LAST_BATCH,
    SCRAPE_SECONDS,
    READ_ERRORS,
)

#: the latency histogram's buckets, in seconds
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


def series_names() -> frozenset[str]:
    """Every series name a query may use (a histogram's ``_bucket``, ``_sum`` and ``_count``)."""
    out = set()
    for m in ALL:
        if m.kind == "histogram":
            out |= {f"{m.full_name}_bucket", f"{m.full_name}_sum", f"{m.full_name}_count"}
        else:
            out.add(m.full_name)
    return frozenset(out)

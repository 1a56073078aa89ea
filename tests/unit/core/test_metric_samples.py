"""What the exporter serves, from plain readings (kafka_dr.core.metric_samples, metric_counters,
replication_lag, dr_runs)."""

from __future__ import annotations

from kafka_dr.core import metric_catalog as m
from kafka_dr.core.config_load import parse_config
from kafka_dr.core.dr_runs import newest_by_kind, reread_total, run_record
from kafka_dr.core.metric_counters import Counters, Histogram
from kafka_dr.core.metric_samples import Reading, samples
from kafka_dr.core.offsets import sync_key, synced_at
from kafka_dr.core.replication_lag import PartitionLag

CFG = parse_config(
    {
        "clusters": {"east": {"bootstrap_servers": "e:9092"}, "west": {"bootstrap_servers": "w:9092"}},
        "flows": [{"source": "east", "target": "west"}, {"source": "west", "target": "east", "enabled": False}],
        "thresholds": {"replication_lag_max_seconds": 30},
    }
)
E2W, W2E = ("east_to_west", "east", "west"), ("west_to_east", "west", "east")
NOW = 1_000_000


def reading(**kw) -> Reading:
    base = dict(
        now_ms=NOW,
        health={"east": True, "west": False},
        stopped_sources=frozenset(),
        lags={},
        heartbeat_ages={},
        group_sync_ages={},
        dq=None,
        parity=[],
        dr_runs={},
        read_seconds=0.25,
    )
    return Reading(**{**base, **kw})


def by_name(values) -> dict[str, dict[tuple, float]]:
    out: dict[str, dict[tuple, float]] = {}
    for s in values:
        out.setdefault(s.metric.full_name, {})[s.labels] = s.value
    return out


def test_lag_in_records_and_seconds_per_partition():
    lag = [PartitionLag("orders", 0, 120, 100, NOW - 7_500), PartitionLag("orders", 1, 50, 50, None)]
    got = by_name(samples(CFG, reading(lags={"east_to_west": lag}), Counters()))
    assert got["kafka_dr_replication_lag_records"] == {(*E2W, "orders", "0"): 20.0, (*E2W, "orders", "1"): 0.0}
    assert got["kafka_dr_replication_lag_seconds"] == {(*E2W, "orders", "0"): 7.5, (*E2W, "orders", "1"): 0.0}


def test_an_unread_oldest_record_leaves_the_seconds_out_and_an_unread_flow_everything():
    lag = [PartitionLag("orders", 0, 120, 100, None)]
    got = by_name(samples(CFG, reading(lags={"east_to_west": lag, "west_to_east": None}), Counters()))
    assert got["kafka_dr_replication_lag_records"] == {(*E2W, "orders", "0"): 20.0}
    assert "kafka_dr_replication_lag_seconds" not in got


def test_clusters_flows_thresholds_and_the_read_time():
    got = by_name(samples(CFG, reading(stopped_sources=frozenset()), Counters()))
    assert got["kafka_dr_cluster_up"] == {("east",): 1.0, ("west",): 0.0}
    assert got["kafka_dr_flow_active"] == {E2W: 1.0, W2E: 0.0}  # west_to_east is disabled
    assert got["kafka_dr_threshold"][("replication_lag_max_seconds",)] == 30.0
    assert got["kafka_dr_exporter_read_duration_seconds"] == {(): 0.25}
    stopped = by_name(samples(CFG, reading(stopped_sources=frozenset({"east"})), Counters()))
    assert stopped["kafka_dr_flow_active"][E2W] == 0.0  # a failover stopped it


def test_heartbeats_group_syncs_dq_parity_and_dr_runs():
    r = reading(
        heartbeat_ages={"east_to_west": 3.5, "west_to_east": None},
        group_sync_ages={("east_to_west", "billing"): 12.0},
        dq={"success": False, "ts_ms": 2_000, "failed_by_topic": {"orders": 2}},
        parity=[
            {"from": "east", "to": "west", "verdict": "not_ready", "differences": [{"area": "acls"}, {"area": "acls"}]},
            {"from": "west", "to": "east", "verdict": "degraded", "differences": []},
        ],
        dr_runs={"failover": run_record("failover", True, 1_000, 4_000, {"failed": "east", "survivor": "west"}, 7, 3)},
    )
    got = by_name(samples(CFG, r, Counters()))
    assert got["kafka_dr_heartbeat_age_seconds"] == {E2W: 3.5}
    assert got["kafka_dr_offset_sync_age_seconds"] == {(*E2W, "billing"): 12.0}
    assert got["kafka_dr_data_quality_success"] == {(): 0.0}
    assert got["kafka_dr_data_quality_last_run_timestamp_seconds"] == {(): 2.0}
    assert got["kafka_dr_data_quality_failed_checks"] == {("orders",): 2.0}
    assert got["kafka_dr_parity_ready"] == {("east", "west"): 0.0, ("west", "east"): 1.0}
    assert got["kafka_dr_parity_differences"] == {("east", "west", "acls"): 2.0}
    assert got["kafka_dr_last_dr_run_success"] == {("failover",): 1.0}
    assert got["kafka_dr_last_dr_run_timestamp_seconds"] == {("failover",): 4.0}
    assert got["kafka_dr_last_dr_run_duration_seconds"] == {("failover",): 3.0}
    assert got["kafka_dr_last_dr_run_missing_records"] == {("failover",): 7.0}
    assert got["kafka_dr_last_dr_run_reread_records"] == {("failover",): 3.0}


def row(**kw) -> dict:
    return {"flow": "east_to_west", "topic": "orders", "written": 10, "bytes": 500, "transactions": 2, **kw}


def test_counters_add_up_the_jobs_rows_and_count_restarts_across_jobs():
    c = Counters()
    refused = row(restarts=0, dead_lettered=1, aborted=2, refused=2)
    c.add([row(restarts=0, at_ms=5_000, latency_p50_ms=40.0), refused], {"east_to_west"})
    c.add([row(restarts=2), row(restarts=1), row(flow="other", restarts=9)], {"east_to_west"})
    assert c.by_topic[("records_copied", "east_to_west", "orders")] == 40  # four rows of the flow
    assert c.by_topic[("bytes_copied", "east_to_west", "orders")] == 2000
    assert c.by_topic[("records_dead_lettered", "east_to_west", "orders")] == 1
    assert c.by_flow[("transactions_committed", "east_to_west")] == 8
    assert c.by_flow[("transactions_aborted", "east_to_west")] == 2
    assert c.by_topic[("records_refused", "east_to_west", "orders")] == 2
    assert c.by_flow[("job_restarts", "east_to_west")] == 3  # 0 -> 2, then a new job that restarted once
    assert c.last_batch_ms == {"east_to_west": 5_000}
    assert c.latency["east_to_west"].cumulative()[1] == ("0.1", 1)  # 40 ms: in the 0.05..0.1 bucket
    got = by_name(samples(CFG, reading(), c))
    assert got["kafka_dr_records_copied_total"] == {(*E2W, "orders"): 40.0}
    assert got["kafka_dr_job_restarts_total"] == {E2W: 3.0}
    assert got["kafka_dr_transactions_aborted_total"] == {E2W: 2.0}
    assert got["kafka_dr_records_refused_total"] == {(*E2W, "orders"): 2.0}


def test_histogram_buckets_are_cumulative_with_inf_last():
    h = Histogram()
    for s in (0.01, 0.2, 400.0):
        h.observe(s)
    pairs = h.cumulative()
    assert pairs[0] == ("0.05", 1) and ("0.25", 2) in pairs and pairs[-1] == ("+Inf", 3)
    assert h.total == 400.21


def test_dr_run_records_newest_per_kind_and_rereads():
    old = run_record("failover", False, 0, 10, {"failed": "east", "survivor": "west"}, error="boom")
    new = run_record("failover", True, 20, 30, {"failed": "east", "survivor": "west"})
    back = run_record("failback", True, 40, 50, {"recovered": "east", "survivor": "west"})
    assert newest_by_kind([new, old, back, {"kind": "nonsense"}]) == {"failover": new, "failback": back}
    assert old["duration_seconds"] == 0.01 and old["error"] == "boom"
    assert reread_total([{"reread": {"east": 3, "west": 4}}, {"reread": {}}]) == 7
    assert reread_total([{"reread": {"east": None}}]) is None


def test_synced_at_is_the_newest_record_per_flow_and_group():
    records = [
        (sync_key("e2w", "billing", "orders", 0), b"{}", 100),
        (sync_key("e2w", "billing", "orders", 1), b"{}", 250),
        (sync_key("e2w", "audit", "orders", 0), None, 300),  # a tombstone
        (b"not json", b"{}", 999),
    ]
    assert synced_at(records) == {("e2w", "billing"): 250}


def test_every_metric_is_named_by_prometheus_conventions():
    for metric in m.ALL:
        assert metric.full_name.startswith("kafka_dr_")
        assert metric.full_name.endswith("_total") == (metric.kind == "counter")
        assert "partition" not in metric.labels or metric in (m.LAG_RECORDS, m.LAG_SECONDS)

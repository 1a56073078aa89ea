"""The benchmark's report (kafka_dr.bench.report) with literal figures."""

import os

import pytest

from kafka_dr.bench.mm2 import Mm2Checkpoint, decode_checkpoint
from kafka_dr.bench.report import (
    backlog_figures,
    expected_keys,
    flatten,
    json_line,
    latency_figures,
    percentile,
    ratio,
    round_schedule,
    table,
)
from kafka_dr.bench.warm_report import per_record

PARAMS = {
    "run": "bench.x",
    "records": 1000,
    "partitions": 8,
    "sizes": [100],
    "latency_rates": [500],
    "latency_seconds": 5.0,
    "latency_warmup_seconds": 1.0,
    "latency_rounds": 2,
    "backlog_rounds": 1,
    "cold_round": False,
    "warm_backlog": False,
    "brokers_per_cluster": 3,
    "mm2_deviations": {"mm2": {"tasks.max": "1 -> 2"}},
}


def backlog(rps, mbps):
    return {
        "records_per_s": rps,
        "mb_per_s": mbps,
        "copy_seconds": 1.0,
        "startup_seconds": 2.0,
        "launch_to_done_seconds": 3.0,
        "launch_to_exit_seconds": 3.5,
        "run_cpu_us_per_record": rps / 50,
        "source_wire_mb": 0.12,
        "startup_timeline": {"first record": 2.0},
        "cpu_us_per_record": rps / 100,
        "records": 1000,
        "copied": 1000,
        "complete": True,
        "peak_rss_mb": 100,
        "produce_requests_per_s": rps // 10,
        "records_per_produce_request": 10.0,
        "records_per_fetch_request": 500.0,
        "records_per_follower_fetch": 250.0,
        "transaction_requests": 0,
        "records_per_batch": 5.0,
        "log_bytes_per_record": 150.0,
        "control_batches": 0,
    }


def latency(p50, p99):
    return {
        "p50_ms": p50,
        "p99_ms": p99,
        "samples": 10,
        "sent": 12,
        "peak_rss_mb": 50,
        "p99_ms_by_round": [p99 - 1, p99 + 1],
    }


RESULTS = {
    "ours": {
        "s100": backlog(800, 0.08),
        "latency500": latency(900.0, 1500.0),
        "nothing_new": {"seconds": 1.2, "cpu_seconds": 0.9, "stopped_by": "nothing new"},
    },
    "mm2": {"s100": backlog(1000, 0.1), "latency500": latency(30.0, 100.0)},
    "mm2eos": {"s100": backlog(400, 0.04), "latency500": latency(300.0, 3000.0)},
    "rawpipe": {"s100": backlog(1600, 0.16), "latency500": latency(10.0, 20.0)},
    "rawpipe1": {"s100": backlog(1000, 0.1)},  # throughput only
}
GUARANTEES = {
    "ours": "exactly-once",
    "mm2": "at-least-once",
    "mm2eos": "exactly-once (MirrorMaker 2)",
    "rawpipe": "none",
    "rawpipe1": "none",
}
SYSTEMS = ["ours", "mm2", "mm2eos", "rawpipe", "rawpipe1"]


def test_flatten_has_every_figure_and_the_ratios():
    flat = flatten(PARAMS, GUARANTEES, RESULTS)
    assert expected_keys(SYSTEMS, [100], [500], latency_systems=SYSTEMS[:4]) <= set(flat)
    assert flat["ours_s100_records_per_s"] == 800 and flat["mm2_latency500_p99_ms"] == 100.0
    assert flat["ratio_ours_mm2_s100_records_per_s"] == 0.8
    assert (
        flat["ratio_ours_rawpipe_s100_records_per_s"] == 0.5 and flat["ratio_ours_rawpipe1_s100_records_per_s"] == 0.8
    )
    assert flat["ratio_ours_rawpipe_s100_cpu_us_per_record"] == 0.5 and flat["ours_s100_launch_to_done_seconds"] == 3.0
    # the whole run's ratios beside the copy window's
    assert flat["ratio_ours_rawpipe_s100_run_cpu_us_per_record"] == 0.5
    assert flat["ratio_ours_rawpipe_s100_launch_to_exit_seconds"] == 1.0
    assert flat["ratio_ours_mm2_latency500_p99_ms"] == 15.0
    assert flat["ratio_ours_mm2_latency500_p99_ms_by_round"] == [15.141, 14.861]
    assert flat["ratio_ours_mm2eos_s100_records_per_s"] == 2.0 and flat["ratio_ours_mm2eos_latency500_p99_ms"] == 0.5
    assert not [k for k in flat if k.startswith("rawpipe1_latency") or k.startswith("ratio_ours_rawpipe1_latency")]


def test_ratio_is_none_without_a_figure():
    assert ratio(None, 3) is None and ratio(3, 0) is None and ratio(1, 3) == 0.333


def test_table_names_every_system_and_the_json_line_is_one_line():
    flat = flatten(PARAMS, GUARANTEES, RESULTS)
    text = table(flat)
    assert "Throughput (backlog)" in text and "End-to-end latency" in text
    for s in ("ours", "mm2", "mm2eos", "rawpipe", "rawpipe1", "exactly-once", "at-least-once"):
        assert s in text
    assert "\n" not in json_line(flat)
    assert "Nothing new (ours, an incremental run of a flow already copied, launch to exit): 1.20 s, 0.90 CPU-s" in text


def test_mm2_checkpoint_wire_format():
    # key: group "g1", topic "east.t", partition 3; value: version 0, upstream 137, downstream 101, metadata ""
    key = b"\x00\x02g1" + b"\x00\x06east.t" + b"\x00\x00\x00\x03"
    value = b"\x00\x00" + (137).to_bytes(8, "big") + (101).to_bytes(8, "big") + b"\x00\x00"
    assert decode_checkpoint(key, value) == Mm2Checkpoint("g1", "east.t", 3, 137, 101, "")


def test_mm2_properties_enable_exactly_once_for_the_target_and_name_remote_topics_apart():
    from kafka_dr.bench.mm2 import Mm2Settings, mm2_properties
    from kafka_dr.core.config import ClusterConfig

    east, west = (
        ClusterConfig(name="east", bootstrap_servers="127.0.0.1:1"),
        ClusterConfig(name="west", bootstrap_servers="127.0.0.1:2"),
    )
    plain = mm2_properties(east, west, "t", Mm2Settings())
    assert "exactly.once" not in plain and "separator" not in plain and "transaction" not in plain
    assert "interval.seconds" not in plain  # MirrorMaker's own intervals, as it ships
    eos = mm2_properties(
        east, west, "t", Mm2Settings(exactly_once=True, separator=".eos.", transaction_interval_ms=5000)
    )
    lines = set(eos.splitlines())
    assert {
        "west.exactly.once.source.support = enabled",
        "dedicated.mode.enable.internal.rest = true",
        "replication.policy.separator = .eos.",
        "east.consumer.isolation.level = read_committed",
        "east->west.transaction.boundary = interval",
        "east->west.transaction.boundary.interval.ms = 5000",
    } <= lines
    assert "east.exactly.once.source.support = enabled" not in lines  # only the target is written to


def test_every_other_round_runs_the_systems_in_reverse_order():
    assert round_schedule(["ours", "mm2", "rawpipe"], 1) == [["ours", "mm2", "rawpipe"]]
    assert round_schedule(["ours", "mm2", "rawpipe"], 3) == [
        ["ours", "mm2", "rawpipe"],
        ["rawpipe", "mm2", "ours"],
        ["ours", "mm2", "rawpipe"],
    ]
    with pytest.raises(ValueError, match="rounds must be at least 1, not 0"):
        round_schedule(["ours"], 0)


def test_latency_rounds_are_pooled_before_the_percentiles_and_each_round_keeps_its_own_p99():
    # round 1: 100 samples of 10 ms; round 2: 99 of 20 ms and one of 500 ms (a stall), its own p99
    first = {"latencies": [10] * 100, "sent": 110, "peak_rss_mb": 300, "synced_mb": 7}
    second = {"latencies": [20] * 99 + [500], "sent": 111, "peak_rss_mb": 320, "synced_mb": 0}
    r = latency_figures([first, second])
    # pooled: 200 samples, the 99th percentile is sample 198 of 0..199 sorted: 20 ms (the stall is the last)
    assert r["samples"] == 200 and r["p50_ms"] == 20.0 and r["p99_ms"] == 20.0
    assert r["p99_ms_by_round"] == [10.0, 500.0]
    assert r["sent"] == 221 and r["peak_rss_mb"] == 320 and r["synced_mb"] == 7
    assert (
        percentile([], 0.99) is None
        and latency_figures([{"latencies": [], "sent": 0, "peak_rss_mb": None}])["p99_ms"] is None
    )


def test_the_latency_table_shows_each_rounds_p99_and_says_how_many_rounds():
    text = table(flatten(PARAMS, GUARANTEES, RESULTS))
    assert "latency at 500 records/s, 5 s each after 1 s of warm-up per system in 2 rounds" in text
    ours = next(line for line in text.splitlines() if line.startswith("ours ") and "1,499 / 1,501" in line)
    assert "1,500" in ours and "     500" in ours


def _round(rps, seconds, **extra):
    return {
        "records_per_s": rps,
        "mb_per_s": rps * 100 / 1e6,
        "copy_seconds": seconds,
        "startup_seconds": 20.0,
        "launch_to_done_seconds": 20.0 + seconds,
        "records": rps * seconds,
        "copied": rps * seconds,
        "complete": True,
        "peak_rss_mb": 100,
        **extra,
    }


def test_backlog_rounds_pool_every_record_over_every_window_and_keep_each_rounds_rate():
    # 1,000,000 records in 5 s, then 1,000,000 in 10 s (a slow round): 2,000,000 over 15 s,
    # not the mean of 200,000 and 100,000
    fast = _round(
        200_000, 5, cpu_busy_cores=2.0, cpu_own_cores=1.5, cpu_steal_cores=0.0, cpu_idle_cores=0.0, synced_mb=3
    )
    slow = {
        **_round(
            100_000, 10, cpu_busy_cores=1.0, cpu_own_cores=0.6, cpu_steal_cores=0.3, cpu_idle_cores=0.7, synced_mb=4
        ),
        "startup_seconds": 30.0,
        "peak_rss_mb": 300,
    }
    r = backlog_figures([fast, slow])
    assert r["records_per_s"] == 133_333 and r["records_per_s_by_round"] == [200_000, 100_000]
    assert (
        r["mb_per_s"] == 13.33
        and r["copy_seconds"] == 15
        and r["records"] == 2_000_000 == r["copied"]
        and r["complete"] is True
    )
    assert r["startup_seconds"] == 25.0 and r["peak_rss_mb"] == 300 and r["synced_mb"] == 7
    assert r["launch_to_done_seconds"] == 27.5  # the mean of 25 and 30
    # cores weighted by window: (2.0 x 5 + 1.0 x 10) / 15; busy CPU per record: 20 core-seconds / 2,000,000 records
    assert (
        r["cpu_busy_cores"] == 1.33
        and r["cpu_own_cores"] == 0.9
        and r["cpu_steal_cores"] == 0.2
        and r["cpu_idle_cores"] == 0.47
    )
    assert r["cpu_us_per_record"] == 10.0 and r["cpu_us_per_record_by_round"] == [10.0, 10.0]
    # a round the machine slowed moves the pooled figure, not the median of three
    three = backlog_figures([fast, slow, {**fast, "cpu_busy_cores": 4.0}])
    assert three["cpu_us_per_record_by_round"] == [10.0, 10.0, 20.0] and three["cpu_us_per_record_median"] == 10.0
    assert three["cpu_us_per_record"] == 13.3  # 40 core-seconds over 3,000,000 records
    assert "cpu_broker_cores" not in r  # the brokers' pids were not known
    assert backlog_figures([fast, {**slow, "complete": False}])["complete"] is False
    # the brokers' part the same way: (0.5 x 5 + 0.2 x 10) / 15 cores; 4.5 core-seconds / 2,000,000 records
    b = backlog_figures([{**fast, "cpu_broker_cores": 0.5}, {**slow, "cpu_broker_cores": 0.2}])
    assert b["cpu_broker_cores"] == 0.3 and b["cpu_broker_us_per_record"] == 2.2


def test_one_backlog_round_gives_its_own_figures_and_the_table_shows_the_rounds():
    one = backlog_figures([_round(200_000, 5)])
    assert (
        one["records_per_s"] == 200_000 and one["records_per_s_by_round"] == [200_000] and "cpu_busy_cores" not in one
    )
    two = backlog_figures([_round(200_000, 5), _round(100_000, 10)])
    flat = flatten({**PARAMS, "backlog_rounds": 2}, GUARANTEES, {"ours": {"s100": two}, "rawpipe": {"s100": one}})
    text = table(flat)
    assert "Throughput (backlog, 2 rounds of every size, every other one in reverse order)" in text
    assert [ln for ln in text.splitlines() if ln.startswith("ours ") and ln.endswith("200,000 / 100,000")]


def test_the_start_up_timeline_is_read_from_the_jobs_log_and_averaged_over_rounds():
    from datetime import datetime

    from kafka_dr.bench.report import mean_timeline
    from kafka_dr.bench.systems import start_up_timeline

    launched = datetime(2026, 11, 27, 18, 0, 0).timestamp()
    log = (
        "2026-11-27 18:00:02,500 INFO kafka_dr.replicate timeline: interpreter\n"
        "2026-11-27 18:00:03,000 WARN org.apache.spark something else\n"
        "2026-11-27 18:00:09,250 INFO kafka_dr.replicate timeline: spark up\n"
        "2026-11-27 18:00:12,000 INFO kafka_dr.replicate timeline: query started\n"
        "2026-11-27 18:00:40,000 INFO kafka_dr.replicate timeline: query started\n"  # a restart: the first counts
    )
    first = start_up_timeline(log, launched)
    assert first == {"interpreter": 2.5, "spark up": 9.25, "query started": 12.0}
    second = {"interpreter": 3.5, "spark up": 10.75, "first record": 20.0}
    assert list(mean_timeline([first, second]).items()) == [
        ("interpreter", 3.0),
        ("spark up", 10.0),
        ("query started", 12.0),
        ("first record", 20.0),
    ]


def test_a_whole_run_is_the_median_round_with_each_round_and_the_spread_beside_it():
    rounds = [
        {**backlog(1000, 0.1), "launch_to_exit_seconds": x, "run_cpu_us_per_record": c, "source_wire_mb": 0.5}
        for x, c in ((9.0, 4.0), (7.0, 5.0), (8.0, 6.0))
    ]
    f = backlog_figures(rounds)
    assert f["launch_to_exit_seconds"] == 8.0 and f["launch_to_exit_seconds_by_round"] == [9.0, 7.0, 8.0]
    assert f["launch_to_exit_seconds_spread"] == round(9 / 7, 3)
    assert f["run_cpu_us_per_record"] == 5.0 and f["run_cpu_us_per_record_spread"] == 1.5
    assert f["source_wire_mb"] == 1.5  # the rounds' backlogs together


def test_a_round_without_a_whole_run_figure_leaves_it_none_not_zero():
    f = backlog_figures([{**backlog(1000, 0.1), "launch_to_exit_seconds": None, "source_wire_mb": None}])
    assert f["launch_to_exit_seconds"] is None and f["launch_to_exit_seconds_spread"] is None
    assert f["source_wire_mb"] is None


def test_the_table_shows_launch_to_exit_and_the_whole_runs_cpu_of_every_phase_the_cold_one_included():
    results = {
        "ours": {
            "s100": backlog(800, 0.08),
            "s100cold": {**backlog(700, 0.07), "launch_to_exit_seconds": 12.25},
            "nothing_new": RESULTS["ours"]["nothing_new"],
        },
        "rawpipe": {"s100": backlog(1600, 0.16), "s100cold": backlog(1500, 0.15)},
    }
    flat = flatten({**PARAMS, "cold_round": True, "latency_rates": []}, GUARANTEES, results)
    assert expected_keys(["ours", "rawpipe"], [100], [], cold_round=True) <= set(flat)
    text = table(flat)
    assert "Whole run, launch to exit" in text
    rows = [line.split() for line in text.splitlines() if line.startswith(("ours ", "rawpipe "))]
    assert ["ours", "s100", "3.50", "-", "16.0", "-", "120"] in rows  # 0.12 MB of 1,000 records: 120 B each
    assert ["ours", "s100cold", "12.25", "-", "14.0", "-", "120"] in rows
    assert flat["ratio_ours_rawpipe_s100cold_launch_to_exit_seconds"] == 3.5


def test_mm2_deviations_name_each_setting_that_differs_from_what_it_ships_with():
    from kafka_dr.bench.mm2 import Mm2Settings, deviations

    d = deviations(Mm2Settings(tasks=2))
    assert d["tasks.max"] == "1 -> 2" and d["producer linger.ms"] == "5 -> 10"
    assert d["consumer isolation.level"] == "read_uncommitted -> read_committed"
    assert d["emit.checkpoints.enabled"] == "true -> false"
    assert "producer acks" not in d and "transaction.boundary" not in d  # as shipped
    assert "tasks.max" not in deviations(Mm2Settings(tasks=1))
    assert "transaction.boundary" not in deviations(Mm2Settings(exactly_once=True))  # per poll, as shipped
    assert deviations(Mm2Settings(exactly_once=True, transaction_interval_ms=5000))["transaction.boundary"] == (
        "poll -> interval (5000 ms)"
    )


def test_mirrormakers_exactly_once_ships_a_transaction_per_poll_and_the_interval_variant_lasts_as_ours(tmp_path):
    from kafka_dr.bench.mm2_systems import Mm2ExactlyOnce, Mm2ExactlyOnceInterval, Mm2OneTask
    from kafka_dr.core.config_load import load_config

    cfg_file = tmp_path / "kafka-dr.yaml"
    cfg_file.write_text(
        "clusters:\n  east: {bootstrap_servers: '127.0.0.1:1'}\n  west: {bootstrap_servers: '127.0.0.1:2'}\n"
        "flows:\n  - {name: east_to_west, source: east, target: west}\n"
    )
    cfg = load_config(cfg_file)
    shipped, interval = Mm2ExactlyOnce(cfg, tmp_path), Mm2ExactlyOnceInterval(cfg, tmp_path)
    for continuous, ms in ((False, 5000), (True, 100)):
        shipped.set_transaction_boundary(continuous)
        interval.set_transaction_boundary(continuous)
        assert shipped.settings.transaction_interval_ms is None and interval.settings.transaction_interval_ms == ms
    assert shipped.settings.tasks == (os.cpu_count() or 1) and Mm2OneTask(cfg, tmp_path).settings.tasks == 1
    names = {s.target_topic("t") for s in (shipped, interval, Mm2OneTask(cfg, tmp_path))}
    assert names == {"east.eos.t", "east.eosi.t", "east.t1.t"}  # each writes topics of its own


def warm(rps, own_cores, broker_cores):
    return {
        "records_per_s": rps,
        "copy_seconds": 2.0,
        "produce_records_per_s": 5000,
        "records": 1000,
        "copied": 1000,
        "complete": True,
        "peak_rss_mb": 70,
        "cpu_own_cores": own_cores,
        "cpu_broker_cores": broker_cores,
        **per_record({"cpu_own_cores": own_cores, "cpu_broker_cores": broker_cores}, 2.0, 1000),
    }


def test_warm_backlogs_have_their_figures_ratios_and_table_rows():
    results = {
        "ours": {
            "s100": backlog(800, 0.08),
            "warm100": warm(500, 0.5, 0.25),
            "nothing_new": {"seconds": 1.2, "cpu_seconds": 0.9, "stopped_by": "nothing new"},
        },
        "mm2": {"s100": backlog(1000, 0.1), "warm100": warm(1000, 1.0, 0.5)},
        "rawpipe1": {"s100": backlog(1000, 0.1)},  # runs no continuous copy: not warm
    }
    flat = flatten({**PARAMS, "warm_backlog": True, "latency_rates": []}, GUARANTEES, results)
    keys = expected_keys(["ours", "mm2", "rawpipe1"], [100], [], latency_systems=["ours", "mm2"], warm=True)
    assert keys <= set(flat), keys - set(flat)
    # 0.5 cores over 2 s for 1,000 records: 1,000 us each
    assert (
        flat["ours_warm100_cpu_own_us_per_record"] == 1000.0 and flat["mm2_warm100_cpu_broker_us_per_record"] == 1000.0
    )
    assert flat["ratio_ours_mm2_warm100_records_per_s"] == 0.5
    assert flat["ratio_ours_mm2_warm100_cpu_own_us_per_record"] == 0.5
    assert not [k for k in flat if k.startswith("rawpipe1_warm")]
    text = table(flat)
    assert "Warm backlog (the system already running" in text
    rows = [line for line in text.splitlines() if line.startswith(("ours ", "mm2 ")) and " 1,000 " in line]
    assert any(line.split()[:3] == ["mm2", "100", "1,000"] for line in rows), text
    assert per_record({"cpu_own_cores": None, "cpu_broker_cores": 1.0}, 1.0, 0) == {
        "cpu_own_us_per_record": None,
        "cpu_broker_us_per_record": None,
    }

"""``kafka-dr bench --quick`` on the real lab: the benchmark runs end to end.

Only the shape is checked (the table, then one JSON line with every figure, every copy
complete); never a timing: figures on a shared CI machine mean nothing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from confluent_kafka.admin import AdminClient

from conftest import TEST_SPARK_PORT, TEST_SPARK_WEBUI_PORT
from kafka_checks import read_topic
from kafka_dr.bench.disk import DROP_CACHES
from kafka_dr.bench.report import expected_keys
from kafka_dr.kafka.clients import client_config
from kafka_dr.kafka.topics import delete_topics
from kafka_dr.lab.spark_cluster import SparkCluster

pytestmark = [pytest.mark.lab, pytest.mark.slow]


def test_quick_bench_prints_the_table_and_a_json_line_with_every_figure(lab, lab_config):
    proc = subprocess.run(
        [sys.executable, "-m", "kafka_dr.cli", "bench", "--quick", "--dir", str(lab.root)],
        capture_output=True,
        text=True,
        timeout=1800,
    )  # one system after another, each launched for each size and for its latency
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    lines = proc.stdout.strip().splitlines()
    figures = json.loads(lines[-1])
    missing = expected_keys(["ours", "mm2", "rawpipe"], [100, 1024], [1000]) - set(figures)
    assert not missing, sorted(missing)
    text = "\n".join(lines[:-1])
    assert "Throughput (backlog)" in text and "End-to-end latency" in text and "Whole run, launch to exit" in text
    assert "What the copy asked of the brokers" in text
    for system in ("ours", "mm2", "rawpipe"):
        for size in (100, 1024):
            k = f"{system}_s{size}_"
            assert figures[k + "complete"] is True, (system, size, figures[k + "copied"])
            assert figures[k + "records_per_s"] > 0 and figures[k + "peak_rss_mb"] > 0
            # launch to exit: every process of the system gone after its copy was done
            assert figures[k + "launch_to_exit_seconds"] >= figures[k + "launch_to_done_seconds"] > 0, system
            # the machine's CPU minus its idle baseline: never negative; on a machine shared with other tests
            # the baseline can be as busy as the run, so only its presence is checked here
            assert figures[k + "run_cpu_us_per_record"] >= 0, system
            # every value is fresh random bytes: the backlog's produce requests cannot be smaller than its values
            assert figures[k + "source_wire_mb"] * 1e6 >= 0.95 * figures[k + "records"] * size, (system, size)
            # what it asked of the brokers: produce requests (their own metrics), batches in the target's log
            assert figures[k + "produce_requests_per_s"] > 0 and figures[k + "records_per_produce_request"] > 0
            assert figures[k + "records_per_fetch_request"] > 0, system  # it read the backlog from the source
            if len(lab_config.cluster("west").bootstrap_servers.split(",")) > 1:  # replicas follow their leaders
                assert figures[k + "records_per_follower_fetch"] > 0, system
            else:
                assert figures[k + "records_per_follower_fetch"] is None, system  # no follower fetched a thing
            assert figures[k + "records_per_batch"] >= 1, (system, size)
            # fresh random values: no compression stores a record in fewer bytes than its value
            assert figures[k + "log_bytes_per_record"] >= size, (system, size, figures[k + "log_bytes_per_record"])
            # only ours copies in transactions: their requests, and a marker per transaction and partition
            transactional = system == "ours"
            for m in ("transaction_requests", "control_batches"):
                assert (figures[k + m] > 0) is transactional, (system, m, figures[k + m])
        assert system == "ours" or figures[f"ratio_ours_{system}_s100_launch_to_exit_seconds"] > 0
        assert (
            figures[f"{system}_latency1000_samples"] > 0
            and figures[f"{system}_latency1000_p99_ms"] >= figures[f"{system}_latency1000_p50_ms"]
        )
    assert figures["ours_guarantee"].startswith("exactly-once")
    # MirrorMaker runs a task per core, and says where it differs from what it ships with
    assert figures["mm2_deviations"]["mm2"]["tasks.max"] == f"1 -> {os.cpu_count()}"
    assert f"mm2 settings changed from MirrorMaker 2's shipped defaults: tasks.max 1 -> {os.cpu_count()}" in text
    assert figures["brokers_per_cluster"] == len(lab_config.cluster("east").bootstrap_servers.split(","))
    # ours run again on a backlog it copied: nothing new, no Spark (its cost is the docs' figure)
    assert figures["ours_nothing_new_stopped_by"] == "nothing new", figures.get("ours_nothing_new_error")
    assert 0 < figures["ours_nothing_new_seconds"] and 0 < figures["ours_nothing_new_cpu_seconds"]
    assert "Nothing new (ours" in text
    # the run's topics (backlogs, latency, copies, MirrorMaker's worker topics) are gone again
    for cluster in lab_config.clusters.values():
        left = [t for t in AdminClient(client_config(cluster)).list_topics(timeout=30).topics if figures["run"] in t]
        assert not left, (cluster.name, left)


def test_a_full_run_warms_the_brokers_up_first_and_deletes_that_topic_too(lab, lab_config):
    """The full run's path (one system after another), the raw pipes only and small: the
    unmeasured warm-up copies (the brokers', then one per system) happen before the first
    measured phase, and their topics go with the run's. Every measured phase starts with the
    dirty page cache written out, and says how much; the backlog is measured in two rounds and
    the latency at two rates in two rounds (the one-process pipe: throughput only); a backlog's
    CPU is accounted, and its launch-to-done."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_dr.cli",
            "bench",
            "--dir",
            str(lab.root),
            "--systems",
            "rawpipe,rawpipe1",
            "--records",
            "40000",
            "--sizes",
            "100",
            "--latency-rates",
            "1000,2000",
            "--latency-seconds",
            "1",
            "--latency-warmup",
            "0.5",
            "--latency-rounds",
            "2",
            "--backlog-rounds",
            "2",
            "--warmup-records",
            "2000",
            "--no-warm-backlog",  # the MirrorMaker exactly-once test runs a warm backlog
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    out = proc.stdout
    warmed = re.search(r"brokers warmed up .*: 2,000 records produced and copied, ([\d,]+) transactions", out)
    assert warmed and int(warmed.group(1).replace(",", "")) > 0, out[-2000:]
    first_measured = out.index("[bench] rawpipe  s100 round 1/2:")
    assert out.index("brokers warmed up") < first_measured, "warm-up before the first measured phase"
    # then every system copies an unmeasured backlog of its own, all of it, before anything is measured
    for pipe in ("rawpipe ", "rawpipe1"):
        line = re.search(
            rf"\[bench\] {pipe} warmed up \(not measured\): copied 2,000/2,000, launch-to-done [\d.]+s", out
        )
        assert line and line.start() < first_measured, out[-3000:]
    figures = json.loads(out.strip().splitlines()[-1])
    # the backlog in two rounds, each a fresh backlog of 40,000 records copied completely (long enough a window for CPU
    # samples inside it); the warm-up's records are not counted
    assert figures["backlog_rounds"] == 2 and len(figures["rawpipe_s100_records_per_s_by_round"]) == 2
    assert (
        figures["rawpipe_s100_complete"] is True
        and figures["rawpipe_s100_records"] == 80000 == figures["rawpipe_s100_copied"]
    )
    assert (
        len(
            re.findall(
                r"\[bench\] rawpipe  s100 round [12]/2: [\d,]+ records/s "
                r".*copied 40,000/40,000, .*CPU busy [\d.]+, own "
                r"[\d.]+, brokers [\d.]+, steal [\d.]+ cores",
                out,
            )
        )
        == 2
    ), out[-2000:]
    # the pipe's own CPU is part of the machine's (a tick of sampling apart; the pipe per core's children are found
    # by the tree walk once a second, longer than its copy of this small backlog may take)
    assert 0 < figures["rawpipe1_s100_cpu_own_cores"] <= figures["rawpipe1_s100_cpu_busy_cores"] + 0.1
    # the lab's brokers are counted apart: they took part of the machine's CPU, the pipe the rest
    assert 0 < figures["rawpipe_s100_cpu_broker_cores"] <= figures["rawpipe_s100_cpu_busy_cores"] + 0.1
    assert figures["rawpipe_s100_cpu_broker_us_per_record"] <= figures["rawpipe_s100_cpu_us_per_record"] + 0.1
    assert isinstance(figures["rawpipe_s100_synced_mb"], int) and isinstance(
        figures["rawpipe_latency1000_synced_mb"], int
    )
    # both pipes copied everything (the pipe per core in one process per core, each with its share of the partitions)
    assert figures["rawpipe1_s100_copied"] == 80000 == figures["rawpipe_s100_copied"]
    for pipe in ("rawpipe", "rawpipe1"):
        assert 0 <= figures[f"{pipe}_s100_startup_seconds"] < figures[f"{pipe}_s100_launch_to_done_seconds"]
        # and a round more with the page cache dropped first (only root may drop it)
        cold = f"{pipe}_s100cold_"
        assert figures[cold + "copied"] == 40000 == figures[cold + "records"] and figures[cold + "complete"] is True
        assert figures[cold + "cache_dropped"] is os.access(DROP_CACHES, os.W_OK)
        assert figures[cold + "launch_to_exit_seconds"] >= figures[cold + "launch_to_done_seconds"]
    assert len(re.findall(r"\[bench\] rawpipe1? +s100 cold cache: .*copied 40,000/40,000", out)) == 2, out[-2000:]
    # latency in two rounds (the second in reverse order), each after the page cache was written out, at each rate
    assert figures["latency_rounds"] == 2 and figures["latency_rates"] == [1000, 2000]
    for rate in (1000, 2000):
        assert len(figures[f"rawpipe_latency{rate}_p99_ms_by_round"]) == 2 and figures[f"rawpipe_latency{rate}_samples"]
        found = re.findall(rf"\[bench\] rawpipe  latency round [12]/2 at {rate:,}/s: .*, \d+ MB synced first", out)
        assert len(found) == 2, out[-2000:]
    assert not [k for k in figures if k.startswith("rawpipe1_latency")]
    for cluster in lab_config.clusters.values():
        left = [t for t in AdminClient(client_config(cluster)).list_topics(timeout=30).topics if figures["run"] in t]
        assert not left, (cluster.name, left)


def test_ours_beside_itself_on_spark_and_with_its_exporter_scraped_each_copying_a_backlog_of_its_own(lab, lab_config):
    """``--systems ours,ours_spark,ours_scraped`` on the full run's path (one system after
    another): all write into their source topic's name, so the second and third get a twin
    backlog of the same records; each copies all of its own; ours copies its small backlog in
    the driver and ours_spark with Spark; the exporter beside ``ours_scraped`` was read and
    scraped."""
    proc = subprocess.run(
        [sys.executable, "-m", "kafka_dr.cli", "bench", "--dir", str(lab.root)]
        + ["--systems", "ours,ours_spark,ours_scraped"]
        + ["--records", "10000", "--sizes", "100", "--latency-rates", "1000", "--latency-seconds", "1"]
        + ["--latency-warmup", "0", "--latency-rounds", "1", "--backlog-rounds", "1", "--warmup-records", "0"]
        + ["--no-cold-round", "--no-warm-backlog"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    for system in ("ours", "ours_spark", "ours_scraped"):
        assert figures[f"{system}_s100_complete"] is True and figures[f"{system}_s100_copied"] == 10000, system
    for twin in ("ours_spark", "ours_scraped"):
        assert len(re.findall(rf"\[bench\] bench\.\w+\.s100\.{twin}: 10,000 records", proc.stdout)) == 1, twin
    assert figures["ratio_ours_ours_scraped_s100_records_per_s"] > 0
    assert figures["ratio_ours_ours_spark_s100_launch_to_exit_seconds"] > 0
    bench_dir = lab.root / "bench" / figures["run"]
    driver_log = "\n".join(f.read_text(errors="replace") for f in (bench_dir / "ours").glob("job-*.s100.log"))
    spark_log = "\n".join(f.read_text(errors="replace") for f in (bench_dir / "ours_spark").glob("job-*.log"))
    assert "copied in the driver, no Spark" in driver_log and "timeline: spark up" not in driver_log
    assert "timeline: spark up" in spark_log and "copied in the driver" not in spark_log
    logs = list((lab.root / "bench" / figures["run"] / "ours_scraped" / "exporter").glob("*.log"))
    assert logs and any("kafka-dr exporter" in f.read_text(errors="replace") for f in logs), logs


def test_mirrormaker_with_exactly_once_copies_every_record_once_in_transactions(lab, lab_config):
    """``--systems mm2eos`` (left out of ``--quick`` by default): MirrorMaker 2 runs with its
    exactly-once source support, the backlog's completion is read from its committed source
    offsets, and a ``read_committed`` count finds every record exactly once; with
    ``--warm-backlog`` it copies a backlog produced while it already runs too, and this test
    reads both ends of that copy itself."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_dr.cli",
            "bench",
            "--dir",
            str(lab.root),
            "--systems",
            "mm2eos",
            "--records",
            "3000",
            "--sizes",
            "100",
            "--latency-rates",
            "1000",
            "--latency-seconds",
            "1",
            "--latency-warmup",
            "0.5",
            "--warmup-records",
            "0",
            "--latency-rounds",
            "1",
            "--backlog-rounds",
            "1",
            "--no-cold-round",
            "--warm-backlog",
            "--keep-topics",
        ],  # one MirrorMaker start per phase is enough here
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert figures["latency_rounds"] == 1 and len(figures["mm2eos_latency1000_p99_ms_by_round"]) == 1
    assert figures["mm2eos_guarantee"].startswith("exactly-once")
    assert figures["mm2eos_s100_copied"] == 3000 and figures["mm2eos_s100_complete"] is True
    assert figures["mm2eos_latency1000_samples"] > 0
    # already running when its backlog arrived: every record on the target once, read here
    assert figures["warm_backlog"] is True and figures["mm2eos_warm100_complete"] is True
    assert figures["mm2eos_warm100_records_per_s"] > 0 and figures["mm2eos_warm100_cpu_own_us_per_record"] > 0
    assert "Warm backlog (the system already running" in proc.stdout
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    source = f"{figures['run']}.warm100.mm2eos"
    try:
        sent = [r.value for r in read_topic(east, source) if r.key != b"ping"]
        copied = [r.value for r in read_topic(west, f"east.eos.{source}") if r.key != b"ping"]
    finally:
        for cluster in (east, west):
            admin = AdminClient(client_config(cluster))
            delete_topics(admin, [t for t in admin.list_topics(timeout=30).topics if figures["run"] in t])
    assert len(sent) == 3000 and sorted(copied) == sorted(sent)
    logs = list((lab.root / "bench" / figures["run"] / "mm2eos").glob("*/mm2.log"))
    assert len(logs) == 3, logs  # the backlog's run, the warm backlog's and the latency run
    for log in logs:
        text = log.read_text(errors="replace")
        assert (
            "exactly.once.source.support = enabled" in text and "transactional.id = kafka-dr-bench-mm2eos." in text
        ), log
        # a transaction per poll, as MirrorMaker ships (mm2eosint: per interval, as long as ours may last)
        assert "transaction.boundary = interval" not in text, log


def test_quick_scale_out_copies_two_flows_at_once_on_a_spark_cluster_of_its_own(lab, lab_config):
    """``--scale-out --quick``: a Spark standalone cluster of its own (two one-core workers), both
    flows at once with one executor each; every copy complete, each executor in a worker's JVM,
    the cluster stopped and the run's topics deleted afterwards."""
    env = {
        **os.environ,
        "KAFKA_DR_LAB_SPARK_WEBUI_PORT": str(TEST_SPARK_WEBUI_PORT + 20),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_dr.cli",
            "bench",
            "--scale-out",
            "--quick",
            "--dir",
            str(lab.root),
            "--spark-port",
            str(TEST_SPARK_PORT + 20),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    lines = proc.stdout.strip().splitlines()
    figures = json.loads(lines[-1])
    assert figures["scaleout_rows"] == ["e2_t1_f2"] and figures["scaleout_size"] == 1024
    assert figures["scaleout_e2_t1_f2_complete"] is True, figures
    assert figures["scaleout_e2_t1_f2_records"] == 40_000 == figures["scaleout_e2_t1_f2_copied"]
    assert figures["scaleout_e2_t1_f2_records_per_s"] > 0 and figures["scaleout_e2_t1_f2_cpu_us_per_record"] > 0
    assert "Scale-out on a Spark standalone cluster (2 workers of 1 core" in "\n".join(lines[:-1])
    run_dir = lab.root / "bench" / figures["run"]
    # each flow's executor ran in a worker's JVM: each worker's folder holds one application's executor
    assert len(list((run_dir / "spark" / "work").glob("worker-*/app-*/*/stderr"))) == 2
    assert not SparkCluster(run_dir / "spark").running_master()
    for cluster in lab_config.clusters.values():
        left = [t for t in AdminClient(client_config(cluster)).list_topics(timeout=30).topics if figures["run"] in t]
        assert not left, (cluster.name, left)


def test_an_unknown_system_is_refused_before_anything_starts(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "kafka_dr.cli", "bench", "--dir", str(tmp_path / "nolab"), "--systems", "ours,mm3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and "unknown mm3" in proc.stderr and "mm2eos" in proc.stderr
    assert not (tmp_path / "nolab").exists()


@pytest.mark.parametrize("flag", ["--latency-rounds", "--backlog-rounds"])
def test_zero_rounds_are_refused_before_anything_starts(tmp_path, flag):
    proc = subprocess.run(
        [sys.executable, "-m", "kafka_dr.cli", "bench", "--dir", str(tmp_path / "nolab"), flag, "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and f"{flag} 0: must be at least 1" in proc.stderr
    assert not (tmp_path / "nolab").exists()


def test_the_group_sync_measurement_syncs_every_groups_positions_and_reports_each_round(lab):
    """``python -m kafka_dr.bench.group_sync``, small: every group's position on every partition
    is synced in the first round and again after every group moved; an idle round syncs none."""
    proc = subprocess.run(
        [sys.executable, "-m", "kafka_dr.bench.group_sync", "--dir", str(lab.root)]
        + ["--groups", "12", "--partitions", "3", "--records", "100"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert figures["positions"] == 36
    for name in ("first", "moved"):
        assert figures[f"{name}_groups"] == 12 and figures[f"{name}_committed"] == 36, figures
        assert figures[f"{name}_seconds"] > 0 and figures[f"{name}_cpu_ms_per_position"] >= 0
    assert figures["idle_positions"] == 0
    assert "group-offset sync: 12 groups x 3 partitions = 36 positions" in proc.stdout

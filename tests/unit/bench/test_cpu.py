"""The bench's CPU figures over a copy window (kafka_dr.bench.cpu), from literal samples."""

import os
import subprocess
import sys
import time

from kafka_dr.bench.cpu import CpuSample, CpuWindow, window_figures
from kafka_dr.bench.report import flatten, table


def test_cores_busy_own_stolen_and_idle_over_the_window():
    # 2 s at 100 ticks/s: user 200, system 100, irq 10, softirq 10 -> 1.6 busy;
    # idle 50 + iowait 10 -> 0.3; steal 20 -> 0.1
    a = CpuSample(10.0, (1000, 0, 500, 9000, 100, 0, 0, 50), {11: 300, 12: 40})
    b = CpuSample(12.0, (1200, 0, 600, 9050, 110, 10, 10, 70), {11: 450, 12: 90, 13: 30})  # 13 started in the window
    f = window_figures(a, b, records=100_000, ticks=100)
    assert f == {
        "cpu_busy_cores": 1.6,
        "cpu_own_cores": 1.15,
        "cpu_steal_cores": 0.1,
        "cpu_idle_cores": 0.3,
        "cpu_broker_cores": None,
        "cpu_us_per_record": 32.0,
    }  # (150 + 50 + 30) ticks / 2 s; 1.6 cores x 2 s / 100,000 records


def test_the_brokers_are_counted_apart_and_only_those_running_through_the_window():
    a = CpuSample(10.0, (1000, 0, 500, 9000, 100, 0, 0, 50), {11: 300}, {21: 1000, 22: 2000, 23: 5})
    b = CpuSample(12.0, (1200, 0, 600, 9050, 110, 10, 10, 70), {11: 450}, {21: 1040, 22: 2060, 24: 99})
    f = window_figures(a, b, records=100_000, ticks=100)
    assert f["cpu_broker_cores"] == 0.5  # (40 + 60) ticks / 2 s; 23 stopped, 24 started inside the window
    assert f["cpu_own_cores"] == 0.75


def test_no_window_gives_no_figures_rather_than_a_division_by_zero():
    s = CpuSample(5.0, (1, 2, 3, 4, 5, 6, 7, 8), {})
    assert set(window_figures(s, s, 10).values()) == {None}


def test_the_table_shows_the_cpu_of_each_backlog_phase_that_has_it():
    phase = {
        "records_per_s": 10,
        "mb_per_s": 0.1,
        "copy_seconds": 1.0,
        "startup_seconds": 1.0,
        "records": 10,
        "copied": 10,
        "complete": True,
        "peak_rss_mb": 1,
        "cpu_busy_cores": 1.96,
        "cpu_own_cores": 1.4,
        "cpu_steal_cores": 0.02,
        "cpu_idle_cores": 0.03,
        "cpu_us_per_record": 21.3,
        "cpu_broker_cores": 0.5,
        "cpu_broker_us_per_record": 5.4,
        "cpu_us_per_record_by_round": [19.0, 23.6],
    }
    flat = flatten(
        {
            "run": "r",
            "records": 10,
            "partitions": 8,
            "sizes": [100],
            "latency_rates": [1],
            "latency_seconds": 1.0,
            "latency_warmup_seconds": 0.0,
        },
        {"ours": "exactly-once", "rawpipe": "none"},
        {"ours": {"s100": phase}, "rawpipe": {"s100": {**phase, "cpu_busy_cores": None}}},
    )
    assert flat["ours_s100_cpu_busy_cores"] == 1.96
    text = table(flat)
    assert "CPU over the copy window" in text
    row = [ln for ln in text.splitlines() if ln.startswith("ours") and "1.96" in ln]
    assert row and row[0].split()[1:] == [
        "100",
        "1.96",
        "1.40",
        "0.50",
        "0.02",
        "0.03",
        "21.3",
        "5.4",
        "19.0",
        "/",
        "23.6",
    ], row
    assert not [ln for ln in text.splitlines() if ln.startswith("rawpipe") and "1.40" in ln]  # no figures, no row


def test_a_process_that_exits_inside_the_window_keeps_its_cpu():
    # a real child burns about 0.4 s of CPU and exits before the window's end sample is taken
    window = CpuWindow(os.getpid(), interval=0.02, tree_interval=0.02).start()
    time.sleep(0.1)
    start = time.monotonic()
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass"
    subprocess.run([sys.executable, "-c", burn], check=True)
    time.sleep(0.2)
    end = time.monotonic()
    window.stop()
    f = window.figures(start, end, records=1)
    assert f["cpu_own_cores"] * (end - start) >= 0.3, f


def test_a_whole_run_counts_the_machines_busy_cpu_minus_its_idle_baseline():
    from kafka_dr.bench.cpu import run_figures

    # 10 s at 100 ticks/s: user 1200, system 300, irq 0, softirq 100 busy -> 16 CPU-s; idle 0.1 cores x 10 s
    a = CpuSample(100.0, (0, 0, 0, 0, 0, 0, 0, 0), {})
    b = CpuSample(110.0, (1200, 0, 300, 400, 50, 0, 100, 20), {})
    assert run_figures(a, b, records=1_000_000, idle_cores=0.1, ticks=100) == {
        "run_cpu_seconds": 15.0,
        "run_cpu_us_per_record": 15.0,
    }
    # never negative, and no time no figure
    assert run_figures(a, b, 10, idle_cores=5.0, ticks=100)["run_cpu_seconds"] == 0.0
    assert set(run_figures(a, a, 10, 0.1).values()) == {None}


def test_the_idle_baseline_is_what_the_machine_burns_while_this_process_waits():
    from kafka_dr.bench.cpu import idle_cores

    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)
        busy = idle_cores(0.5)
    finally:
        spinner.kill()
        spinner.wait()
    assert busy >= 0.8  # one core spinning is not idle (the upper end moves with /proc's tick accounting)

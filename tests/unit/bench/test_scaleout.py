"""The scale-out rows' shape: each job's share of the executors, the table, bad ports refused."""

from __future__ import annotations

import argparse

import pytest

from kafka_dr.bench import scaleout
from kafka_dr.bench.cli import add_arguments, scale_out_layout
from kafka_dr.core.inputs import InvalidInput


def test_each_job_gets_its_share_of_the_executors_one_core_each():
    assert scaleout.ScaleRow(2, 4).spark_conf()["spark.cores.max"] == "2"
    two_flows = scaleout.ScaleRow(2, 1, flows=2).spark_conf()
    assert two_flows["spark.cores.max"] == "1" and two_flows["spark.executor.cores"] == "1"
    assert two_flows["spark.driver.host"] == "127.0.0.1"  # the executors reach the driver on loopback


def test_the_rows_cover_one_and_two_executors_each_task_count_and_two_flows():
    rows = {(r.executors, r.tasks, r.flows) for r in scaleout.ROWS}
    assert {(e, t, 1) for e in (1, 2) for t in (1, 2, 4)} <= rows and (2, 1, 2) in rows
    assert len({r.key for r in scaleout.ROWS}) == len(scaleout.ROWS)


def test_the_table_shows_each_row_and_names_a_failed_one():
    done, broken = scaleout.ROWS[0], scaleout.ROWS[-1]
    flat = {
        "scaleout_size": 1024,
        "scaleout_records_per_flow": 20000,
        "scaleout_workers": 2,
        "scaleout_rows": [done.key, broken.key],
        **{
            f"scaleout_{done.key}_{m}": v
            for m, v in {
                "records_per_s": 41000,
                "records_per_s_per_executor": 41000,
                "copy_seconds": 0.49,
                "launch_to_done_seconds": 21.3,
                "cpu_busy_cores": 1.9,
                "cpu_us_per_record": 46.3,
                "complete": True,
            }.items()
        },
        f"scaleout_{broken.key}_error": "no record came through",
    }
    text = scaleout.table(flat)
    assert "2 workers of 1 core" in text and "20,000 records of 1024 B per flow" in text
    row = next(line for line in text.splitlines() if line.startswith(done.label))
    assert row[len(done.label) :].split() == ["41,000", "41,000", "0.49", "21.3", "1.9", "46.3", "yes"]
    assert f"{broken.label}" in text and "FAILED: no record came through" in text


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_arguments(p)
    return p.parse_args(list(argv))


def test_a_spark_port_it_cannot_use_is_named_before_anything_starts():
    with pytest.raises(InvalidInput, match=r"--spark-port 80: must be between 1024"):
        scale_out_layout(_args("--scale-out", "--spark-port", "80"))
    assert scale_out_layout(_args()) is None
    layout = scale_out_layout(_args("--scale-out", "--spark-port", "17077"))
    assert layout.master_url == "spark://127.0.0.1:17077" and layout.workers == 2 and layout.cores == 1

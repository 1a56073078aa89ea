"""The Spark driver's class archive, made by a real local warm-up job: a driver JVM that must
use it (``-Xshare:on``) starts and runs a job, so the archive matches this host's pyspark and
JDK; a warm-up job that cannot run fails with its own last lines."""

from __future__ import annotations

import os
import subprocess

import pytest

from kafka_dr.spark import class_archive
from kafka_dr.spark.class_archive import DRIVER_OPTIONS, ensure_archive, with_class_archive
from kafka_dr.spark.driver_options import spark_submit_env


def test_a_driver_that_must_map_the_archive_starts_with_it(tmp_path):
    archive = ensure_archive()  # made by `make setup`; made here when the suite runs alone
    assert archive.is_file() and ensure_archive() == archive
    script = tmp_path / "job.py"
    script.write_text(
        "from pyspark.sql import SparkSession\n"
        "s = SparkSession.builder.getOrCreate()\n"
        "print('rows', s.range(5).count())\n"
        "s.stop()\n"
    )
    conf = with_class_archive({}, archive)
    options = f"{conf[DRIVER_OPTIONS]} -Xshare:on"  # on: a JVM that cannot map it refuses to start
    env = {**os.environ, **spark_submit_env()}
    command = ["spark-submit", "--master", "local[1]", "--conf", f"{DRIVER_OPTIONS}={options}", str(script)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "rows 5" in done.stdout


def test_a_warm_up_that_cannot_run_names_its_failure(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_DR_CACHE", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"spark class archive: the warm-up job failed \(exit 1\)"):
        ensure_archive("-Xmx1m")  # too small a heap: the JVM does not start
    assert not class_archive.archive_file().exists()
    assert list(tmp_path.iterdir()) == []  # no partial archive left behind

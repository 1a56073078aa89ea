"""A replication job starts its data-source Python workers while its query starts: the first
task is handed a worker that already imported what returning rows needs (pandas), instead of
importing it before it copies. Each case runs a real local Spark in a process of its own, so
no other test's workers are reused (about 25 s)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROBE = textwrap.dedent(
    """
    import os, sys
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
    from kafka_dr.spark.warmup import start_workers

    class Reader(DataSourceReader):
        def partitions(self):
            return [InputPartition(i) for i in range(2)]

        def read(self, partition):
            import sys
            yield ("pandas" in sys.modules,)

    class Probe(DataSource):
        @classmethod
        def name(cls):
            return "probe"

        def schema(self):
            return "warm boolean"

        def reader(self, schema):
            return Reader()

    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(Probe)
    if sys.argv[1] == "warm":
        start_workers(spark).join(120)
    print("WARM", sorted({r.warm for r in spark.read.format("probe").load().collect()}))
    spark.stop()
    """
)


def _first_tasks_found_pandas(mode: str) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return next(line for line in done.stdout.splitlines() if line.startswith("WARM "))


def test_the_first_data_source_tasks_get_workers_that_already_imported_pandas():
    assert _first_tasks_found_pandas("warm") == "WARM [True]"


def test_without_it_the_first_tasks_start_cold():
    """The control: the probe can tell (a fresh worker has not imported pandas)."""
    assert _first_tasks_found_pandas("cold") == "WARM [False]"

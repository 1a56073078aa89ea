"""What a Spark Python worker imports early instead of when its first task's rows go back.

When a task first returns its rows, pyspark converts them to Arrow and on the way imports
pandas and ``pyarrow.compute``: CPU time with the GIL held, during which every copy thread of
the worker waits (docs/replication.md, "Continuous flows: streaming tasks"). A worker's first
task starts importing them in a background thread (:func:`import_output_path_in_background`)
while its copier starts (network waits, GIL released), so the cost is paid at start-up and a
cold worker, such as a lost executor's replacement, copies without waiting for it.
Modules that are missing are skipped: pyspark then does not import them either.

:func:`start_workers` goes further: it has the executors' data-source workers started and
warmed while the query itself starts, so the first task is handed one ready to copy.
"""

from __future__ import annotations

import functools
import importlib
import logging
import threading

log = logging.getLogger(__name__)

#: the data source :func:`start_workers` reads
WARMUP_SOURCE = "kafka_dr_warmup"
#: what pyspark imports when a task first returns rows (nearly all of it pandas)
OUTPUT_PATH_MODULES = ("pandas", "pyarrow.compute", "pyarrow.pandas_compat")


@functools.cache
def import_output_path_once() -> None:
    """Import :data:`OUTPUT_PATH_MODULES`, once per worker (see the module docstring)."""
    for name in OUTPUT_PATH_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


_background: list[threading.Thread] = []
_background_lock = threading.Lock()


def import_output_path_in_background(then=lambda: None) -> threading.Thread:
    """:func:`import_output_path_once` in a daemon thread started once per worker (``then``
    runs after it); the caller goes on at once. Returns that thread."""
    with _background_lock:
        if not _background:

            def run() -> None:
                import_output_path_once()
                then()

            thread = threading.Thread(target=run, name="kafka-dr-output-path-import", daemon=True)
            thread.start()
            _background.append(thread)
        return _background[0]


def warmup_source(parallelism: int):
    """A batch data source of ``parallelism`` tasks that only warm their worker. Spark runs
    data-source readers in Python workers of their own (not the ones RDD tasks use), so only a
    data-source read starts the workers the replication source's tasks will be given."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class Reader(DataSourceReader):
        def partitions(self):
            return [InputPartition(i) for i in range(parallelism)]

        def read(self, partition):
            import_output_path_once()
            return iter(())

    class Source(DataSource):
        @classmethod
        def name(cls) -> str:
            return WARMUP_SOURCE

        def schema(self) -> str:
            return "unused int"

        def reader(self, schema):
            return Reader()

    return Source


def start_workers(spark) -> threading.Thread:
    """Start every executor's data-source Python workers while the query starts: a small read
    of a task per core, in the background, each importing pyspark's worker and
    :data:`OUTPUT_PATH_MODULES`. Spark keeps those workers idle and hands them the first
    micro-batch's tasks, which then start without paying for either. A failure only costs the
    gain."""
    parallelism = max(1, spark.sparkContext.defaultParallelism)

    def run() -> None:
        try:
            spark.dataSource.register(warmup_source(parallelism))
            spark.read.format(WARMUP_SOURCE).load().collect()
        except Exception as e:  # noqa: BLE001 - the query starts its workers itself anyway
            log.info("starting Python workers ahead of the query failed: %s", e)

    thread = threading.Thread(target=run, name="kafka-dr-start-workers", daemon=True)
    thread.start()
    return thread

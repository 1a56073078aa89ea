"""A Spark Python worker imports what pyspark needs for the task's rows beside its first copy:
importing pandas when the first rows went back held the GIL for 1.5 s, in the middle of the
copies, and importing it before the copy delayed a cold worker's first records (kafka_dr.spark.warmup)."""

import threading

from kafka_dr.spark import source, warmup
from kafka_dr.spark.source import RangePartition, ReplicationStreamReader, StreamPartition


def test_a_workers_first_task_imports_beside_its_copy_and_only_once(monkeypatch):
    events = []
    copied = threading.Event()
    warmup.import_output_path_once.cache_clear()
    monkeypatch.setattr(warmup, "_background", [])
    monkeypatch.setattr(warmup, "OUTPUT_PATH_MODULES", ("json", "no_such_module_kafka_dr"))

    def import_after_the_copy(name):
        assert copied.wait(10), "the copy waited for the import"
        events.append(name)
        return __import__(name)

    monkeypatch.setattr(warmup.importlib, "import_module", import_after_the_copy)
    row = dict.fromkeys(source.FIELDS, 0)
    reader = ReplicationStreamReader({})
    monkeypatch.setattr(reader, "_copy", lambda _p: events.append("range copy") or copied.set() or row)
    monkeypatch.setattr(reader, "_stream", lambda _p: events.append("streaming task") or [row])

    assert len(list(reader.read(RangePartition("t", 0, 0, 10, "t")))) == 1
    assert len(list(reader.read(StreamPartition([("t", 0, 0, "t")], 1.0)))) == 1
    (thread,) = warmup._background  # one import per worker, however many tasks
    thread.join(10)
    assert sorted(events) == ["json", "no_such_module_kafka_dr", "range copy", "streaming task"], events
    assert events.index("range copy") < events.index("json"), "the copy went first, the import beside it"
    warmup.import_output_path_once.cache_clear()


def test_the_modules_it_imports_exist_here():
    """The list names real modules of this environment (a typo would silently import nothing)."""
    import importlib.util

    assert all(importlib.util.find_spec(m) is not None for m in warmup.OUTPUT_PATH_MODULES)

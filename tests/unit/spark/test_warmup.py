"""A Spark Python worker imports what pyspark needs for the task's rows before it copies:
importing pandas when the first rows went back held the GIL for 1.5 s, in the middle of the
copies (kafka_dr.spark.warmup)."""

from kafka_dr.spark import source, warmup
from kafka_dr.spark.source import RangePartition, ReplicationStreamReader, StreamPartition


def test_a_workers_first_task_imports_before_it_copies_and_only_once(monkeypatch):
    events = []
    warmup.import_output_path_once.cache_clear()
    monkeypatch.setattr(warmup, "OUTPUT_PATH_MODULES", ("json", "no_such_module_kafka_dr"))
    monkeypatch.setattr(warmup.importlib, "import_module", lambda name: events.append(name) or __import__(name))
    row = dict.fromkeys(source.FIELDS, 0)
    reader = ReplicationStreamReader({})
    monkeypatch.setattr(reader, "_copy", lambda _p: events.append("range copy") or row)
    monkeypatch.setattr(reader, "_stream", lambda _p: events.append("streaming task") or [row])

    assert len(list(reader.read(RangePartition("t", 0, 0, 10, "t")))) == 1
    assert len(list(reader.read(StreamPartition([("t", 0, 0, "t")], 1.0)))) == 1
    assert events == ["json", "no_such_module_kafka_dr", "range copy", "streaming task"], (
        "imported once, before the first copy; a missing module skipped"
    )
    warmup.import_output_path_once.cache_clear()


def test_the_modules_it_imports_exist_here():
    """The list names real modules of this environment (a typo would silently import nothing)."""
    import importlib.util

    assert all(importlib.util.find_spec(m) is not None for m in warmup.OUTPUT_PATH_MODULES)

"""What a Spark Python worker imports before its first copy starts instead of while it copies.

When a task first returns its rows, pyspark converts them to Arrow and on the way imports
pandas and ``pyarrow.compute``: CPU time with the GIL held, during which every copy thread of
the worker waits (docs/replication.md, "Continuous flows: streaming tasks"). Importing them
when a worker's first task starts, before any copy, moves that cost into the job's start-up.
Modules that are missing are skipped: pyspark then does not import them either.
"""

from __future__ import annotations

import functools
import importlib

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

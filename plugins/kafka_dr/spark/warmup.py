"""What a Spark Python worker imports before its first copy starts instead of while it copies.

When a task first returns its rows, pyspark's side of the worker converts them to Arrow and on
the way imports pandas and ``pyarrow.compute``: about 1.5 s of CPU with the GIL held (1.54 s
measured in this project's environment). Measured on the lab, 8 partitions:

- backlog (incremental mode, one range per task, two tasks at a time): the first two tasks
  ended 1.3 s before the next two started; later tasks followed each other within 0.1 s. That
  gap was a sixth of a 1,000,000-record copy window;
- streaming tasks (continuous mode): the worker's main thread burned 0.7 s of CPU in each of
  the two seconds after the first task returned, and every copy thread, which runs in the
  same process, waited for the GIL meanwhile.

Importing them when a worker's first task starts, before any copy, moves that cost into the
job's start-up. Modules that are missing are skipped: pyspark then does not import them either.
"""

from __future__ import annotations

import functools
import importlib

#: what pyspark imports when a task first returns rows (found by comparing ``sys.modules`` in
#: a worker at its first and second task's start: 370 new modules, nearly all pandas')
OUTPUT_PATH_MODULES = ("pandas", "pyarrow.compute", "pyarrow.pandas_compat")


@functools.cache
def import_output_path_once() -> None:
    """Import :data:`OUTPUT_PATH_MODULES`, once per worker (see the module docstring)."""
    for name in OUTPUT_PATH_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            pass

"""Pause Python's cyclic garbage collector while a copier moves records.

Every ``consume`` hands the copy loop thousands of ``Message`` objects, and each record adds a
headers list and tuples: containers the cyclic collector tracks, so CPython ran a collection
every 700 of them and walked the live batch again and again (docs/benchmarks.md#settings).

Nothing the loop allocates forms a reference cycle, so reference counting frees it all the
same; the collector is only paused, for one chunk at a time (at most ``chunk_seconds``), and
collects whatever cycles other threads made as soon as it runs again.

The collector's switch is process-wide and copies can run in several threads of one Spark
worker, so :func:`gc_paused` counts its holders: the first one turns the collector off, the
last one out turns it back on, and only if it was on when the first one came in.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector is off inside (for every thread); back as it was once the last holder leaves."""
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()

"""The page cache's dirty data, written out before each measured phase of a full run.

Why: the lab's brokers write their logs through the page cache, and the kernel writes dirty
data back in the background once it is ``vm.dirty_expire_centisecs`` old (30 s by default)
or above ``vm.dirty_background_ratio``. A phase that starts right after gigabytes of writes
(a backlog produced, the previous system's copy) shares the disk and a core with that
writeback; the phase after an idle minute does not. Our latency phase was always the first
one after about 5 GB of backlog writes, and its p99 was higher there than alone on the same
lab (docs/benchmarks.md, "Ours is the first latency phase"). With ``os.sync()`` before every
phase, each one starts from the same state: nothing dirty. The amount written out is
reported with the phase's figures (``synced_mb``), so a reader can see what it was.
"""

from __future__ import annotations

import os
from pathlib import Path

MEMINFO = Path("/proc/meminfo")


def dirty_bytes() -> int:
    """Dirty and under-writeback page-cache bytes, machine-wide (0 where /proc is absent)."""
    total = 0
    try:
        for line in MEMINFO.read_text().splitlines():
            name, _, rest = line.partition(":")
            if name in ("Dirty", "Writeback"):
                total += int(rest.split()[0]) * 1024
    except OSError:
        return 0
    return total


def write_back() -> int:
    """Write every dirty page out (blocks until done); returns how many MB were dirty."""
    before = dirty_bytes()
    os.sync()
    return int(round(before / 1e6))


DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def drop_caches() -> bool:
    """Dirty pages written out, then the page cache, dentries and inodes dropped, so the next
    run reads the backlog, the jars and the interpreter's files from disk (a cold round).
    False where this process may not (only root may write ``drop_caches``)."""
    os.sync()
    try:
        DROP_CACHES.write_text("3\n")
    except OSError:
        return False
    return True

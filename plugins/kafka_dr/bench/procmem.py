"""Peak resident memory of a process and all its descendants, sampled from ``/proc``.

The figure a benchmark wants is what the machine gives a system: for MirrorMaker 2 the JVM,
for our job the Python driver, the Spark JVM and its Python workers, for the raw pipe one
Python process. Children are found by walking ``/proc/<pid>/stat`` parent ids at every sample,
so workers started later are counted.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

PROC = Path("/proc")


def _stats():
    """Every process's ``/proc/<pid>/stat`` fields after its command name: (pid, fields)."""
    for d in os.listdir(PROC):
        if not d.isdigit():
            continue
        try:
            stat = (PROC / d / "stat").read_text()
        except OSError:
            continue
        # the command name sits in parentheses and may itself contain spaces or parentheses
        yield int(d), stat[stat.rindex(")") + 2 :].split()


def _parents() -> dict[int, int]:
    return {pid: int(fields[1]) for pid, fields in _stats()}


def group_alive(pgid: int) -> bool:
    """Whether a process of the process group ``pgid`` still runs (zombies do not count: in a
    container nothing may reap an orphan's)."""
    return any(fields[0] != "Z" and int(fields[2]) == pgid for _, fields in _stats())


def tree(pid: int) -> list[int]:
    """``pid`` and every descendant alive now."""
    parents = _parents()
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in parents or p == pid:
            out.append(p)
        todo.extend(children.get(p, []))
    return out


def rss_bytes(pid: int) -> int:
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tree_rss_bytes(pid: int) -> int:
    return sum(rss_bytes(p) for p in tree(pid))


class Sampler:
    """A daemon thread that calls :meth:`tick` every ``interval`` seconds from :meth:`start` to
    :meth:`stop`; a tick that raises ``OSError`` ends the sampling (``/proc`` unreadable)."""

    def __init__(self, pid: int, interval: float) -> None:
        self.pid, self.interval = pid, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"{type(self).__name__}-{pid}", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def tick(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except OSError:
                return
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


class PeakRss(Sampler):
    """Samples the tree of ``pid`` every ``interval`` seconds until :meth:`stop`; ``peak`` in bytes."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        super().__init__(pid, interval)
        self.peak = 0

    def tick(self) -> None:
        self.peak = max(self.peak, tree_rss_bytes(self.pid))

    def stop(self) -> int:
        super().stop()
        return self.peak

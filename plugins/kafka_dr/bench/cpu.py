"""Where the machine's CPU went during a copy window: all of it, the system's own, and steal.

Why: on a 2-core lab a ratio between two systems measured minutes apart says little by
itself. A system that keeps both cores busy is bound by the CPU it spends per record; one
that leaves a core idle is bound by something else (the raw pipe by its one Python thread);
and a virtual machine whose host takes cycles back (``steal`` in ``/proc/stat``) slows
whichever system it hits. So every backlog phase reports, over its copy window only (start-up
excluded), how many cores the machine was busy, how many the system's own process tree used,
how many were stolen and how many idle, and the machine's busy CPU per record copied. The
lab's brokers are counted apart: the same records cost them more or less depending on how a
system writes them (batches per request, transactions), and that is part of its cost.

Samples are taken every ``interval`` seconds by a thread (as :mod:`kafka_dr.bench.procmem`
does for memory); a window's figures come from the samples nearest to its ends. The tree is
walked once a second (a walk reads every process of the machine, 4.5 ms here: every 0.1 s it
would take 0.05 of a core from the systems measured), so a worker started later counts from
the next walk on, with all of its CPU since it started; a process that exits inside the
window keeps the CPU it was last seen with (the pipe per core's processes end with the copy).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace

from kafka_dr.bench.procmem import PROC, Sampler, tree

#: clock ticks per second of ``/proc`` CPU times
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class CpuSample:
    """One reading: monotonic time, the machine's ``/proc/stat`` totals (ticks) and the CPU
    ticks of every process of the tree by pid."""

    at: float
    machine: tuple[int, ...]  #: user, nice, system, idle, iowait, irq, softirq, steal
    own: dict[int, int]
    brokers: dict[int, int] | None = None  #: the lab brokers' CPU ticks by pid, when they are known


def window_figures(a: CpuSample, b: CpuSample, records: int, ticks: int = TICKS) -> dict:
    """Cores busy, the tree's own, stolen and idle between ``a`` and ``b``, and the machine's
    busy CPU per record (microseconds). A process only in ``b`` started in the window: all of
    its CPU counts. Pure, for the unit tests."""
    seconds = b.at - a.at
    if seconds <= 0:
        return {
            "cpu_busy_cores": None,
            "cpu_own_cores": None,
            "cpu_steal_cores": None,
            "cpu_idle_cores": None,
            "cpu_broker_cores": None,
            "cpu_us_per_record": None,
        }
    d = [(y - x) / ticks / seconds for x, y in zip(a.machine, b.machine)]
    user, nice, system, idle, iowait, irq, softirq, steal = (d + [0.0] * 8)[:8]
    busy = user + nice + system + irq + softirq
    own = sum(v - a.own.get(pid, 0) for pid, v in b.own.items()) / ticks / seconds
    brokers = None
    if a.brokers and b.brokers:  # a broker must run through the whole window to be counted
        brokers = round(
            sum(v - a.brokers[pid] for pid, v in b.brokers.items() if pid in a.brokers) / ticks / seconds, 2
        )
    return {
        "cpu_busy_cores": round(busy, 2),
        "cpu_own_cores": round(own, 2),
        "cpu_steal_cores": round(steal, 2),
        "cpu_idle_cores": round(idle + iowait, 2),
        "cpu_broker_cores": brokers,
        "cpu_us_per_record": round(busy * seconds / records * 1e6, 1) if records > 0 else None,
    }


def _busy_seconds(a: CpuSample, b: CpuSample, ticks: int) -> float:
    """The machine's busy CPU-seconds (user, nice, system, irq, softirq) from ``a`` to ``b``."""
    d = [(y - x) / ticks for x, y in zip(a.machine, b.machine)]
    user, nice, system, _idle, _iowait, irq, softirq, _steal = (d + [0.0] * 8)[:8]
    return user + nice + system + irq + softirq


def run_figures(a: CpuSample, b: CpuSample, records: int, idle_cores: float, ticks: int = TICKS) -> dict:
    """A whole run, from the sample ``a`` taken before the launch to ``b`` after the exit: the
    machine's busy CPU-seconds minus what it burns idle (``idle_cores`` busy cores measured with
    nothing running: brokers' housekeeping, this process's sampling) over the same time, and
    that per record (microseconds). Pure, for the unit tests."""
    seconds = b.at - a.at
    if seconds <= 0 or not a.machine or not b.machine:
        return {"run_cpu_seconds": None, "run_cpu_us_per_record": None}
    cpu = max(0.0, _busy_seconds(a, b, ticks) - idle_cores * seconds)
    return {
        "run_cpu_seconds": round(cpu, 2),
        "run_cpu_us_per_record": round(cpu / records * 1e6, 1) if records > 0 else None,
    }


def idle_cores(seconds: float = 1.0) -> float:
    """Busy cores of the machine over ``seconds`` while this process only waits."""
    a = sample([])
    time.sleep(seconds)
    b = sample([])
    return round(_busy_seconds(a, b, TICKS) / max(b.at - a.at, 1e-3), 3)


def _machine() -> tuple[int, ...]:
    with open(PROC / "stat") as f:
        return tuple(int(x) for x in f.readline().split()[1:9])


def _ticks(pid: int) -> int | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    rest = stat[stat.rindex(")") + 2 :].split()
    return int(rest[11]) + int(rest[12])  # utime + stime


def _ticks_of(pids: list[int]) -> dict[int, int]:
    out = {}
    for p in pids:
        t = _ticks(p)
        if t is not None:
            out[p] = t
    return out


def sample(pids: list[int], brokers: tuple[int, ...] = ()) -> CpuSample:
    return CpuSample(time.monotonic(), _machine(), _ticks_of(pids), _ticks_of(list(brokers)) if brokers else None)


class CpuWindow(Sampler):
    """Samples ``pid``'s tree, the lab's ``brokers`` (pids) and the machine every ``interval``
    seconds until :meth:`stop` (the tree walked every ``tree_interval``); :meth:`figures` then
    gives a window's :func:`window_figures`."""

    def __init__(
        self, pid: int, brokers: tuple[int, ...] = (), interval: float = 0.1, tree_interval: float = 1.0
    ) -> None:
        super().__init__(pid, interval)
        self.brokers = tuple(brokers)
        self.tree_interval = tree_interval
        self.samples: list[CpuSample] = []
        self._pids, self._walked = [pid], float("-inf")
        self._last: dict[int, int] = {}  #: every process of the tree seen so far, with its last ticks

    def tick(self) -> None:
        if time.monotonic() - self._walked >= self.tree_interval:
            self._pids, self._walked = tree(self.pid), time.monotonic()
        s = sample(self._pids, self.brokers)
        # a process that exited keeps its last ticks: a pipe's children end with the copy, often
        # before the sample nearest to its end, and their CPU must not leave the window with them
        self._last.update(s.own)
        self.samples.append(replace(s, own=dict(self._last)))

    def figures(self, start: float | None, end: float | None, records: int) -> dict:
        if not self.samples or start is None or end is None:
            return window_figures(CpuSample(0, (), {}), CpuSample(0, (), {}), records)
        a = min(self.samples, key=lambda s: abs(s.at - start))
        b = min(self.samples, key=lambda s: abs(s.at - end))
        return window_figures(a, b, records)

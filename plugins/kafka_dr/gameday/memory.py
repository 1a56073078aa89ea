"""Memory of the lab's processes over the game day: resident set size per role, sampled, and
whether it stayed flat after warm-up.

A role (``brokers``, ``spark-executors``, ``airflow``...) sums the RSS of every process that
plays it at the moment of the sample, so a restarted process is still counted where it
belongs. Flat means: the mean of the last quarter of the samples is within ``tolerance`` of
the mean of the first quarter after warm-up (restarts reset a process's memory, so a fault can
only make a leak look smaller, never create one).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


def rss_mib(pid: int) -> float:
    """Resident set size of ``pid`` in MiB; 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


@dataclass
class Growth:
    role: str
    early_mib: float
    late_mib: float

    @property
    def ratio(self) -> float:
        return self.late_mib / self.early_mib if self.early_mib else 1.0


def growth(samples: list[tuple[float, float]], warm_up_s: float, role: str) -> Growth | None:
    """``samples``: (seconds since start, MiB). None when too few samples after warm-up."""
    after = [mib for t, mib in samples if t >= warm_up_s]
    if len(after) < 8:
        return None
    q = len(after) // 4
    return Growth(role, sum(after[:q]) / q, sum(after[-q:]) / q)


@dataclass
class MemorySampler:
    """Samples ``roles()`` (role -> pids, asked again at each sample) every ``every`` seconds."""

    roles: Callable[[], dict[str, list[int]]]
    every: float = 10.0
    samples: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> MemorySampler:
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="gameday-memory", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            now = time.monotonic() - self._t0
            try:
                roles = self.roles()
            except Exception:  # noqa: BLE001 - a sample is skipped, the run goes on
                continue
            for role, pids in roles.items():
                self.samples.setdefault(role, []).append((now, sum(rss_mib(p) for p in pids)))

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(5)

    def growths(self, warm_up_s: float) -> list[Growth]:
        return [g for role, s in sorted(self.samples.items()) if (g := growth(s, warm_up_s, role))]

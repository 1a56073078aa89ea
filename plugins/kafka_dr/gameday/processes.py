"""Finding the processes a fault kills: Spark executors, the replication job's driver, Python
workers. Read from the process table (``ps``), matched by command line: the game day kills
exactly the process a crash would take, never one it only guesses at.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass

EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
SUBMIT_CLASS = "org.apache.spark.deploy.SparkSubmit"


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    args: str


def parse_ps(text: str) -> list[Proc]:
    """``ps -e -o pid=,ppid=,args=`` output as rows (lines that do not parse are skipped)."""
    out = []
    for line in text.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit():
            out.append(Proc(int(parts[0]), int(parts[1]), parts[2]))
    return out


def process_table() -> list[Proc]:
    # -ww: whole command lines, whatever width ps would guess (80 columns under some parents)
    ps = subprocess.run(["ps", "-e", "-ww", "-o", "pid=,ppid=,args="], capture_output=True, text=True, check=True)
    return parse_ps(ps.stdout)


def _arg(args: str, name: str) -> str | None:
    words = args.split()
    for i, w in enumerate(words[:-1]):
        if w == name:
            return words[i + 1]
    return None


def replication_drivers(procs: list[Proc], flow: str) -> list[Proc]:
    """The driver JVMs of ``flow``'s replication job (spark-submit in client mode)."""
    return [p for p in procs if SUBMIT_CLASS in p.args and "replicate.py" in p.args and _arg(p.args, "--flow") == flow]


def executors(procs: list[Proc], app_id: str | None = None) -> list[Proc]:
    """Executor JVMs on the workers, of one Spark application or of all."""
    return [p for p in procs if EXECUTOR_CLASS in p.args and (app_id is None or _arg(p.args, "--app-id") == app_id)]


def descendants(procs: list[Proc], pid: int) -> list[Proc]:
    children: dict[int, list[Proc]] = {}
    for p in procs:
        children.setdefault(p.ppid, []).append(p)
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c.pid)
    return out


def kill9(pid: int) -> bool:
    """SIGKILL; False when the process was already gone."""
    try:
        os.kill(pid, signal.SIGKILL)
        return True
    except ProcessLookupError:
        return False

"""The lab's own processes, recorded by pid and start time: whether one still runs, and
stopping the session it leads. Linux ``/proc`` only (the lab runs on Linux)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def start_ticks(stat: str) -> int:
    """A process's start time (clock ticks since boot) from its ``/proc/<pid>/stat`` line."""
    return int(stat.rsplit(")", 1)[1].split()[19])


def proc_state(pid: int) -> tuple[int, str] | None:
    """``(start ticks, command line)`` of a live (not zombie) process, else ``None``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    if stat.rsplit(")", 1)[1].split()[0] == "Z":
        return None
    return start_ticks(stat), cmdline


def is_ours(entry: dict | None, marker: str | tuple[str, ...], rereads: int = 5) -> bool:
    """Whether a recorded process still runs: same pid, same start time, a command line naming
    ``marker`` (or one of them). A command line read while the process sets its title (Airflow's parts do, once
    started) or before it has exec'd its program can come back torn: a live process with its
    start time is read again before it is disowned."""
    if not entry or not entry.get("pid"):
        return False
    for attempt in range(rereads + 1):
        seen = proc_state(entry["pid"])
        if seen is None or seen[0] != entry.get("start"):
            return False
        if any(m in seen[1] for m in ((marker,) if isinstance(marker, str) else marker)):
            return True
        if attempt < rereads:
            time.sleep(0.1)
    return False


def session_members(sid: int) -> list[int]:
    """The live processes of session ``sid`` (``/proc/<pid>/stat``'s session field)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(d.name))
    return found


def stop_session(pid: int, timeout: float = 30.0) -> None:
    """SIGTERM every process of the session ``pid`` leads, then SIGKILL what is left after
    ``timeout``. Only called for a pid :func:`is_ours` accepted. The session, not the process
    group: a task runs in a process group of its own, with its Spark job under it."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        signalled: set[int] = set()
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            members = session_members(pid)
            for member in set(members) - signalled:  # a child forked as the signals went out gets one too
                with contextlib.suppress(ProcessLookupError):
                    os.kill(member, sig)
                signalled.add(member)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # our own child (the module used in-process) must not linger as a zombie
            if not members:
                return
            time.sleep(0.2)

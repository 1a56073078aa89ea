"""The lab Airflow's Celery broker: Debian's ``redis-server`` on a Unix socket in the lab folder.

A socket, not a TCP port: nothing to allocate beside the lab's other ports, and nothing but
the lab's own processes can reach it. No persistence: what it holds is the queue of tasks not
yet picked up by the worker, which the scheduler queues again after a restart of both.
Recorded like the lab's other processes (pid and start time, :mod:`kafka_dr.lab.processes`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from kafka_dr.lab import processes
from kafka_dr.lab.lab import LabError

#: the kernel's limit for a Unix socket's path, its terminating byte included
SOCKET_PATH_MAX = 107


class RedisBroker:
    """The broker of the Airflow service in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.socket = self.folder / "redis.sock"

    @property
    def url(self) -> str:
        """Celery's broker URL for the socket."""
        return f"redis+socket://{self.socket}"

    @property
    def state_file(self) -> Path:
        return self.folder / "redis.json"

    def ensure(self, timeout: float = 20.0) -> None:
        """Start it unless it runs; wait until it answers."""
        if self.running():
            return
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not Path(binary).exists():
            raise LabError("redis-server is not installed (Debian's redis-server package; `make debian-packages`)")
        if len(str(self.socket)) > SOCKET_PATH_MAX:
            raise LabError(f"the broker socket {self.socket} is too long a path: use a shorter lab folder")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.socket.unlink(missing_ok=True)
        argv = [binary, "--port", "0", "--unixsocket", str(self.socket), "--unixsocketperm", "700"]
        argv += ["--save", "", "--appendonly", "no", "--dir", str(self.folder)]
        argv += ["--logfile", str(self.folder / "redis.log")]
        # no stream of the caller's: a caller reading this process's output to its end would wait for Redis
        quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        proc = subprocess.Popen(argv, **quiet, start_new_session=True)
        seen = processes.proc_state(proc.pid)
        if seen is None:
            raise LabError(f"redis-server exited at once; see {self.folder / 'redis.log'}")
        self.state_file.write_text(json.dumps({"pid": proc.pid, "start": seen[0]}))
        deadline = time.monotonic() + timeout
        while not self.answering():
            if proc.poll() is not None or time.monotonic() >= deadline:
                raise LabError(f"redis-server did not answer on {self.socket}; see {self.folder / 'redis.log'}")
            time.sleep(0.1)

    def answering(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(unix_socket_path=str(self.socket), socket_timeout=2).ping())
        except (redis.RedisError, OSError):
            return False

    def pid(self) -> int | None:
        entry = self._entry()
        return entry["pid"] if processes.is_ours(entry, "redis-server") else None

    def running(self) -> bool:
        return self.pid() is not None

    def stop(self) -> bool:
        """Stop it if it runs; whether it did."""
        pid = self.pid()
        if pid is None:
            return False
        processes.stop_session(pid, timeout=10.0)
        self.socket.unlink(missing_ok=True)
        return True

    def _entry(self) -> dict:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {}

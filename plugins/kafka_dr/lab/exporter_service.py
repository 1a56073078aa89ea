"""The lab's ``kafka-dr exporter``: a long-running process over the lab's config, as a
deployment runs it beside Airflow, under ``<lab>/monitoring`` (``exporter.json``: its port,
pid and start time; ``exporter.log``: its output)."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from kafka_dr.lab.postgres import port_in_use
from kafka_dr.lab.processes import is_ours, proc_state, stop_session
from kafka_dr.lab.records import read_record, write_record


class ExporterService:
    def __init__(self, root: Path, port: int) -> None:
        self.root, self.port = root, port
        self.state_file, self.log = root / "exporter.json", root / "exporter.log"

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def up(self, config: Path, interval: float = 1.0, timeout: float = 60.0) -> None:
        """Start it unless it runs (on this port, over this config); return once /metrics answers."""
        entry = self._load()
        if self._is_ours(entry) and entry.get("port") == self.port and entry.get("config") == str(config):
            return self._wait(timeout)
        self.down()
        if port_in_use(self.port):
            raise RuntimeError(f"port {self.port} on 127.0.0.1 is already in use (the lab's exporter)")
        self.root.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "kafka_dr.cli", "exporter", "--config", str(config)]
        argv += ["--port", str(self.port), "--interval", str(interval)]
        with open(self.log, "ab") as out:
            proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        seen = proc_state(proc.pid)
        if seen is None:
            raise RuntimeError(f"the lab's exporter exited at once; see {self.log}")
        write_record(self.state_file, {"pid": proc.pid, "start": seen[0], "port": self.port, "config": str(config)})
        self._wait(timeout)

    def down(self) -> None:
        entry = self._load()
        if self._is_ours(entry):
            stop_session(entry["pid"], timeout=10.0)
        self.state_file.unlink(missing_ok=True)

    def running(self) -> bool:
        return self._is_ours(self._load())

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                raise RuntimeError(f"the lab's exporter stopped; last output of {self.log}:\n{self._tail()}")
            try:
                with urllib.request.urlopen(f"http://{self.target}/metrics", timeout=30) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the lab's exporter did not answer on {self.target} within {timeout:.0f}s; see {self.log}")

    def _is_ours(self, entry: dict) -> bool:
        # its command line can read torn while the CLI's imports set the process title
        return is_ours(entry, "exporter")

    def _load(self) -> dict:
        return read_record(self.state_file)

    def _tail(self) -> str:
        return self.log.read_text(errors="replace")[-1500:] if self.log.exists() else ""

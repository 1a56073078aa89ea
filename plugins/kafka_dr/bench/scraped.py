"""``ours_scraped``: this project's job while its monitoring runs as a deployment runs it.

The exporter (``kafka-dr exporter``) reads the clusters and the run's internal topics every
second (five times as often as its default) and is scraped every second, as Prometheus would;
the job itself is :class:`~kafka_dr.bench.systems.Ours` unchanged. Beside ``ours`` in the same
rounds it shows what monitoring costs the copy: the copy path counts nothing per record, so
any difference is the exporter's reads of the brokers and its share of the machine.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import urllib.request

from kafka_dr.bench.systems import Ours

#: the exporter's read interval and the scrape interval in this system, seconds
SCRAPE_EVERY = 1.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OursScraped(Ours):
    name = "ours_scraped"
    guarantee = "as ours; exporter read+scraped every 1 s"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._exporter: subprocess.Popen | None = None
        self._stop_scraping = threading.Event()
        self._scraper: threading.Thread | None = None
        self.scrapes = 0

    def start(self, topics: str | list[str], partitions: int, continuous: bool) -> None:
        super().start(topics, partitions, continuous)
        first = topics if isinstance(topics, str) else topics[0]
        config = self.workdir / f"kafka-dr-{first}.yaml"  # what Ours.start wrote for this run
        port = _free_port()
        command = [sys.executable, "-m", "kafka_dr.cli", "exporter", "--config", str(config)]
        command += ["--port", str(port), "--interval", str(SCRAPE_EVERY)]
        logs = self.workdir / "exporter"  # beside, not among, the job's logs (log_tail reads the newest)
        logs.mkdir(exist_ok=True)
        with open(logs / f"{first}.log", "ab") as out:
            self._exporter = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self._stop_scraping.clear()
        self._scraper = threading.Thread(target=self._scrape, args=(port,), name="bench-scraper", daemon=True)
        self._scraper.start()

    def _scrape(self, port: int) -> None:
        url = f"http://127.0.0.1:{port}/metrics"
        while not self._stop_scraping.wait(SCRAPE_EVERY):
            try:
                with urllib.request.urlopen(url, timeout=SCRAPE_EVERY) as r:
                    r.read()
                self.scrapes += 1
            except OSError:
                pass  # not listening yet: Prometheus would record the target down and go on

    def stop(self, grace: float = 60.0) -> None:
        self._stop_scraping.set()
        if self._scraper is not None:
            self._scraper.join(5)
        if self._exporter is not None and self._exporter.poll() is None:
            self._exporter.terminate()
            try:
                self._exporter.wait(15)
            except subprocess.TimeoutExpired:
                self._exporter.kill()
                self._exporter.wait(10)
        self._exporter = None
        super().stop(grace)

"""The lab broker's class archive, made by a real one-broker warm-up: a JVM that must map it
(``-Xshare:on``) runs a broker's main class, and lab brokers start with it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kafka_dr.lab.broker_archive import ensure_archive
from kafka_dr.lab.jars import ensure_jars


def test_a_jvm_that_must_map_the_archive_runs_the_broker(lab):
    archive = ensure_archive()  # made by `make setup`; made here when the suite runs alone
    assert archive.is_file() and ensure_archive() == archive
    jars = ensure_jars()
    command = ["java", "-Xshare:on", f"-XX:SharedArchiveFile={archive}", "-cp", f"{jars}/*", "kafka.Kafka", "--version"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    # the suite's own brokers run with it
    pids = [b.pid for b in lab.status() if b.pid]
    assert pids
    for pid in pids:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        assert f"-XX:SharedArchiveFile={archive}" in args
        maps = Path(f"/proc/{pid}/maps").read_text()
        assert archive.name in maps, "the broker did not map the archive"

"""What reaches the console when a command starts Spark.

Spark's JVM and the Python workers it forks write their start-up chatter (hostname and
log4j notices, incubator-module warnings, stage logs) to the process's standard error. A
command that starts Spark sends file descriptor 2 to a log file for its whole run, so those
processes inherit the file, and keeps the console for the product's own lines. ``--verbose``
leaves everything on the console.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: transient client chatter (e.g. librdkafka's "Coordinator load in progress: retrying" while
#: a transaction coordinator loads) that a retry cures; shown with --verbose
QUIET_LOGGERS = ("py4j", "kafka_dr.librdkafka")


def log_dir() -> Path:
    return Path(os.environ.get("KAFKA_DR_LOG_DIR") or Path(tempfile.gettempdir()) / "kafka-dr")


FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def setup_logging(level: int) -> None:
    """The product's log lines on stdout, one per event."""
    logging.basicConfig(level=level, format=FORMAT, stream=sys.stdout, force=True)


def quiet_chatter(verbose: bool) -> None:
    """Unless verbose, py4j and librdkafka log nowhere but to a command's log file (what a
    failure means reaches the user as the command's own error line)."""
    if verbose:
        return
    for name in QUIET_LOGGERS:
        logger = logging.getLogger(name)
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


def _route_chatter(path: Path) -> None:
    """py4j (which logs a whole traceback for a failed micro-batch, already reported in one line
    by the job) and librdkafka's transient warnings go to the log file only."""
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter(FORMAT))
    for name in QUIET_LOGGERS:
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.propagate = False


@contextmanager
def spark_output_to_file(name: str, verbose: bool) -> Iterator[Path | None]:
    """Send standard error (fd 2) to ``<log dir>/<name>-<time>.log`` for the block; ``sys.stderr``
    stays the console. Yields the file, or None when ``verbose``."""
    if verbose:
        yield None
        return
    folder = log_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    sys.stdout.flush()
    sys.stderr.flush()
    console_fd = os.dup(2)
    console = sys.stderr
    with open(path, "ab") as f:
        os.dup2(f.fileno(), 2)
    sys.stderr = open(console_fd, "w", buffering=1, closefd=False)  # noqa: SIM115 - closed below
    _route_chatter(path)
    print(f"Spark and client output: {path} (--verbose shows it here)", file=sys.stderr)
    try:
        yield path
    finally:
        sys.stderr.flush()
        os.dup2(console_fd, 2)
        sys.stderr.close()
        os.close(console_fd)
        sys.stderr = console

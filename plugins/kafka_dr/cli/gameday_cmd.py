"""``kafka-dr gameday``: the whole product deployed on a lab of its own, left alone under faults."""

from __future__ import annotations

import argparse
import signal
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "gameday",
        parents=[common],
        help="deploy 3-broker clusters, Spark and Airflow on a lab of their own, inject faults, prove nothing was lost",
    )
    p.add_argument("--minutes", type=float, default=30.0, help="length of the fault script (default 30)")
    p.add_argument(
        "--short",
        action="store_true",
        help="each fault kind once, then the disaster, every phase shortened (the test suite's game day)",
    )
    p.add_argument("--brokers", type=int, default=3, help="brokers per cluster (default 3)")
    p.add_argument("--spark-workers", type=int, default=2, help="Spark workers (default 2)")
    p.add_argument("--dir", type=Path, default=Path(".gameday"), help="the game day's folder (default ./.gameday)")
    p.add_argument("--base-port", type=int, default=24092, help="first port of the game day's lab (default 24092)")
    p.set_defaults(handler=run)


def _interrupted(_signum, _frame) -> None:
    """A kill (a CI job's timeout) tears the game day's lab, Spark and Airflow down as Ctrl-C does."""
    raise KeyboardInterrupt


def run(a: argparse.Namespace) -> int:
    from kafka_dr.core.inputs import InvalidInput
    from kafka_dr.gameday.run import run_gameday
    from kafka_dr.gameday.script import FULL, SHORT, minimum_minutes, script, short_script

    problems = []
    if not 1 <= a.brokers <= 5:
        problems.append(f"--brokers {a.brokers}: must be between 1 and 5")
    if a.spark_workers < 1:
        problems.append(f"--spark-workers {a.spark_workers}: must be at least 1")
    if not a.short and a.minutes < minimum_minutes():
        problems.append(f"--minutes {a.minutes:g}: a game day needs at least {minimum_minutes():.0f} (or --short)")
    if not 1024 <= a.base_port <= 65000:
        problems.append(f"--base-port {a.base_port}: must be between 1024 and 65000")
    if problems:
        raise InvalidInput(problems)
    steps = short_script() if a.short else script(a.minutes)
    signal.signal(signal.SIGTERM, _interrupted)
    pace = SHORT if a.short else FULL
    return run_gameday(a.dir, a.minutes, a.brokers, a.spark_workers, a.base_port, steps, pace)

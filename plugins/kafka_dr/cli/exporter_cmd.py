"""``kafka-dr exporter``: the Prometheus exporter (docs/monitoring.md)."""

from __future__ import annotations

import argparse
from pathlib import Path


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"--port: expected a TCP port (1-65535), got {text!r}")
    return port


def _interval(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"--interval: expected seconds (more than 0), got {text!r}")
    return seconds


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from kafka_dr.exporter.server import DEFAULT_PORT

    p = sub.add_parser(
        "exporter",
        parents=[common],
        help="serve replication lag, heartbeats, DR runs, data quality and parity as Prometheus metrics",
    )
    p.add_argument("--config", type=Path, default=None, help="config file (default $KAFKA_DR_CONFIG or the lab's)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0 in a pod)")
    p.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})")
    p.add_argument(
        "--interval",
        type=_interval,
        default=5.0,
        help="read the clusters every this many seconds; a scrape serves the newest read (default 5)",
    )
    p.set_defaults(handler=run)


def run(a: argparse.Namespace) -> int:
    import logging

    from kafka_dr.cli.operator_cmds import _config
    from kafka_dr.core.secret_refs import env_resolver
    from kafka_dr.exporter.server import serve

    # a service's log: its reads that fail are warnings there (and kafka_dr_exporter_read_errors_total)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s", force=True)
    serve(_config(a.config), a.host, a.port, a.interval, env_resolver())
    return 0

"""``kafka-dr lab monitoring up|down|status``: the lab's Prometheus, Alertmanager and exporter
(:mod:`kafka_dr.lab.monitoring`, :mod:`kafka_dr.lab.exporter_service`), with kafka-dr's
shipped alert rules loaded."""

from __future__ import annotations

import argparse
import os


def _default(name: str, fallback: int) -> int:
    return int(os.environ.get(name, fallback))


def add_parser(verbs: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    mon = verbs.add_parser(
        "monitoring",
        help="the lab's Prometheus and Alertmanager (Debian's) with kafka-dr's exporter and alert rules",
        parents=[common],
    )
    mv = mon.add_subparsers(dest="monitoring_cmd", required=True, metavar="{up,down,status}")
    up = mv.add_parser(
        "up", help="start the exporter, Prometheus and Alertmanager on loopback (idempotent)", parents=[common]
    )
    up.add_argument("--webhook", default=None, help="where Alertmanager posts its notifications (default: nowhere)")
    up.add_argument(
        "--port",
        type=int,
        default=None,
        help="Prometheus's port; Alertmanager's is +1, the exporter's +2 "
        "(default $KAFKA_DR_LAB_MONITORING_PORT or 19990)",
    )
    mv.add_parser("down", help="stop them", parents=[common])
    mv.add_parser("status", help="show the three (exit 0 only when all run)", parents=[common])


def services(lab, port: int | None = None):
    from kafka_dr.lab.exporter_service import ExporterService
    from kafka_dr.lab.monitoring import Monitoring

    base = port or _default("KAFKA_DR_LAB_MONITORING_PORT", 19990)
    root = lab.root / "monitoring"
    return Monitoring(root, base, base + 1), ExporterService(root, base + 2)


def run(args: argparse.Namespace) -> int:
    from kafka_dr.core.inputs import InvalidInput
    from kafka_dr.lab.lab import Lab
    from kafka_dr.shipped import folder

    lab = Lab(args.dir)
    if args.monitoring_cmd == "up":
        if not lab.config_file.exists():
            raise InvalidInput([f"no lab config in {lab.root} (run `kafka-dr lab up` first)"])
        monitoring, exporter = services(lab, args.port)
        exporter.up(lab.config_file)
        rules = folder("monitoring") / "prometheus" / "kafka-dr-rules.yml"
        monitoring.up([exporter.target], [rules], args.webhook)
        print(f"exporter:     http://{exporter.target}/metrics")
        print(f"prometheus:   {monitoring.prometheus_url}   (rules: {rules})")
        print(f"alertmanager: {monitoring.alertmanager_url}   (notifications: {args.webhook or 'none'})")
        return 0
    monitoring, exporter = services(lab, recorded_port(lab))
    if args.monitoring_cmd == "down":
        monitoring.down()
        exporter.down()
        print(f"monitoring stopped: {monitoring.root}")
        return 0
    rows = [("exporter", exporter.running()), ("prometheus/alertmanager", monitoring.running())]
    for name, ok in rows:
        print(f"{name:<24} {'running' if ok else 'stopped'}")
    return 0 if all(ok for _, ok in rows) else 1


def recorded_port(lab) -> int | None:
    """The port ``up`` used, from the monitoring's record (``down`` and ``status`` take no port)."""
    from kafka_dr.lab.records import read_record

    return (read_record(lab.root / "monitoring" / "monitoring.json").get("ports") or {}).get("prometheus")

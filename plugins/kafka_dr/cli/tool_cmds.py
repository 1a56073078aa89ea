"""``kafka-dr config check``, ``drill``, ``bench`` and ``demo``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parsers(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    check = sub.add_parser("config", parents=[common], help="check a config file")
    check.add_argument("check", choices=["check"])
    check.add_argument("path", type=Path)
    check.set_defaults(handler=config_check)
    from kafka_dr.lab.drill import FAULTS

    dr = sub.add_parser(
        "drill",
        parents=[common],
        help="fault drills on a lab of their own: kill -9, broker restarts, network cut, soak; prints a table",
    )

    def fault(name: str) -> str:  # not choices=: with nargs="*" argparse checks an empty list against them
        if name not in FAULTS:
            raise argparse.ArgumentTypeError(f"unknown fault {name!r} (choose from {', '.join(FAULTS)})")
        return name

    dr.add_argument(
        "faults", nargs="*", type=fault, metavar="fault", help=f"of {', '.join(FAULTS)} (default: all but soak)"
    )
    dr.add_argument("--kill-trials", type=int, default=10)
    dr.add_argument("--soak-seconds", type=float, default=600)
    dr.add_argument("--soak-batch", type=int, default=200, help="soak load: records every 0.1 s (default 200: ~2000/s)")
    dr.add_argument("--dir", type=Path, default=None, help="drill lab folder (default ./.lab-drill; wiped first)")
    dr.add_argument("--base-port", type=int, default=19892)
    dr.set_defaults(handler=drill)
    from kafka_dr.bench.cli import add_arguments as bench_arguments

    bench = sub.add_parser(
        "bench",
        parents=[common],
        help="benchmark the replication job against MirrorMaker 2 and the raw-pipe limit on the lab",
    )
    bench_arguments(bench)
    bench.set_defaults(handler=run_bench)
    demo = sub.add_parser("demo", parents=[common], help="run the demo on the local lab")
    demo.add_argument("--dir", type=Path, default=None, help="lab folder (default: ./.lab)")
    demo.set_defaults(handler=demo_run)


def config_check(a: argparse.Namespace) -> int:
    from kafka_dr.core.config_load import load_config

    cfg = load_config(a.path)
    print(f"{a.path}: ok — {len(cfg.clusters)} cluster(s), {len(cfg.flows)} flow(s)")
    for f in cfg.flows:
        print(f"  {f.name}: {f.source} -> {f.target} ({f.loop_policy.value}, {f.mode.value})")
    return 0


def drill(a: argparse.Namespace) -> int:
    from kafka_dr.core.inputs import InvalidInput
    from kafka_dr.lab.drill import FAULTS, format_table, run_drill

    for flag, v in (
        ("--kill-trials", a.kill_trials),
        ("--soak-seconds", a.soak_seconds),
        ("--soak-batch", a.soak_batch),
    ):
        if v <= 0:
            raise InvalidInput([f"{flag} {v:g}: must be positive"])
    faults = a.faults or [f for f in FAULTS if f != "soak"]
    results = run_drill(a.dir, faults, a.kill_trials, a.soak_seconds, a.base_port, soak_batch=a.soak_batch)
    print(format_table(results))
    bad = [r for r in results if r.lost or r.duplicated]
    if bad:
        print(f"kafka-dr drill: {len(bad)} trial(s) lost or duplicated records (table above)", file=sys.stderr)
        return 1
    return 0


def run_bench(a: argparse.Namespace) -> int:
    from kafka_dr.bench.cli import run

    return run(a)


def demo_run(a: argparse.Namespace) -> int:
    from kafka_dr.cli.console import spark_output_to_file
    from kafka_dr.demo import run_demo

    with spark_output_to_file("demo", a.verbose):
        return run_demo(a.dir)

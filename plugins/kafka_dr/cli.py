"""The ``kafka-dr`` command: the lab, config checks and the demo.

Thin: parse arguments, call the package, print. Exit codes: 0 ok, 1 the operation failed,
2 bad usage or an invalid config.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kafka_dr.core.config_load import ConfigError, load_config


def _lab_parser(sub: argparse._SubParsersAction) -> None:
    lab = sub.add_parser("lab", help="the local lab of real Apache Kafka clusters")
    lab.add_argument("--dir", type=Path, default=None, help="lab folder (default: $KAFKA_DR_LAB_DIR or ./.lab)")
    ls = lab.add_subparsers(dest="lab_cmd", required=True)
    up = ls.add_parser("up", help="start the clusters (idempotent) and write the lab config")
    up.add_argument("--clusters", type=int, default=2, help="how many clusters (default 2: east, west)")
    up.add_argument("--base-port", type=int, default=19092, help="first broker port; cluster i uses base+100*i")
    down = ls.add_parser("down", help="stop every lab broker this lab started")
    down.add_argument("--wipe", action="store_true", help="also delete the lab folder and its data")
    ls.add_parser("status", help="show each cluster's state")
    for verb, text in (("stop", "stop one cluster, keeping its data"), ("start", "start one stopped cluster"), ("kill", "SIGKILL one cluster's broker")):
        p = ls.add_parser(verb, help=text)
        p.add_argument("cluster")


def _run_lab(args: argparse.Namespace) -> int:
    from kafka_dr.lab.lab import Lab

    lab = Lab(args.dir)
    if args.lab_cmd == "up":
        path = lab.up(count=args.clusters, base_port=args.base_port)
        _print_status(lab)
        print(f"\nlab config: {path}")
        print(f"use it:     export KAFKA_DR_CONFIG={path}")
    elif args.lab_cmd == "down":
        lab.down(wipe=args.wipe)
        print(f"lab stopped{' and wiped' if args.wipe else ''}: {lab.root}")
    elif args.lab_cmd == "status":
        if not lab.clusters():
            print(f"no lab in {lab.root} (run `kafka-dr lab up`)")
            return 1
        return 0 if _print_status(lab) else 1
    elif args.lab_cmd == "stop":
        lab.stop(args.cluster)
        print(f"stopped {args.cluster} (data kept)")
    elif args.lab_cmd == "start":
        lab.start(args.cluster)
        print(f"started {args.cluster}")
    elif args.lab_cmd == "kill":
        lab.kill(args.cluster)
        print(f"killed {args.cluster}")
    return 0


def _print_status(lab) -> bool:
    rows = lab.status()
    print(f"{'cluster':<10}{'bootstrap':<18}{'pid':<9}{'state':<10}{'topics':<8}cluster id")
    for r in rows:
        state = "healthy" if r.answering else ("starting" if r.running else "stopped")
        print(f"{r.name:<10}{r.bootstrap:<18}{r.pid or '-':<9}{state:<10}{'' if r.topics is None else r.topics:<8}{r.cluster_id or '-'}")
    return all(r.answering for r in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafka-dr", description="Disaster recovery for Apache Kafka, scheduled by Airflow.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    _lab_parser(sub)
    check = sub.add_parser("config", help="check a config file")
    check.add_argument("check", choices=["check"])
    check.add_argument("path", type=Path)
    af = sub.add_parser("airflow", help="Airflow wiring for a config")
    af.add_argument("airflow_cmd", choices=["env"], help="env: print the export lines for a project-local Airflow")
    af.add_argument("--config", type=Path, default=None, help="config file (default: the lab's)")
    af.add_argument("--home", type=Path, default=None, help="AIRFLOW_HOME (default: <lab>/airflow)")
    rep = sub.add_parser("replicate", help="run one flow's replication job here (local Spark); spark-submit spark_jobs/replicate.py for a cluster")
    rep.add_argument("rest", nargs=argparse.REMAINDER, help="--flow NAME [--config PATH] [--mode incremental|continuous] ... (see kafka-dr replicate --help)")
    fo = sub.add_parser("failover", help="fail over from a failed cluster to a survivor (the dr_failover DAG's steps)")
    fo.add_argument("--from", dest="failed", required=True, help="the failed cluster")
    fo.add_argument("--to", dest="survivor", required=True, help="the surviving cluster")
    fo.add_argument("--groups", default=".*", help="consumer groups to move (regex, default all)")
    fo.add_argument("--dry-run", action="store_true", help="report what would happen, change nothing")
    fo.add_argument("--force", action="store_true", help="even if the failed cluster still answers")
    fo.add_argument("--config", type=Path, default=None, help="config file (default $KAFKA_DR_CONFIG or the lab's)")
    from kafka_dr.bench.cli import add_arguments as bench_arguments

    bench_arguments(sub.add_parser("bench", help="benchmark the replication job against MirrorMaker 2 and the raw-pipe limit on the lab"))
    demo = sub.add_parser("demo", help="run the demo on the local lab")
    demo.add_argument("--dir", type=Path, default=None, help="lab folder (default: ./.lab)")
    args = parser.parse_args(argv)

    try:
        if args.cmd == "lab":
            return _run_lab(args)
        if args.cmd == "config":
            cfg = load_config(args.path)
            print(f"{args.path}: ok — {len(cfg.clusters)} cluster(s), {len(cfg.flows)} flow(s)")
            for f in cfg.flows:
                print(f"  {f.name}: {f.source} -> {f.target} ({f.loop_policy.value}, {f.mode.value})")
            return 0
        if args.cmd == "airflow":
            import shlex

            from kafka_dr.airflow.env import airflow_env
            from kafka_dr.lab.lab import Lab

            lab = Lab()
            path = args.config or lab.config_file
            for key, value in airflow_env(args.home or lab.root / "airflow", path, load_config(path)).items():
                print(f"export {key}={shlex.quote(value)}")
            return 0
        if args.cmd == "replicate":
            from kafka_dr.spark.job import main as replicate_main

            rest = args.rest
            if "--master" not in rest:
                rest = [*rest, "--master", "local[*]"]
            return replicate_main(rest)
        if args.cmd == "failover":
            import json
            import os

            from kafka_dr.kafka.failover import FailoverRefused, format_summary, run_failover
            from kafka_dr.lab.lab import Lab

            path = args.config or Path(os.environ.get("KAFKA_DR_CONFIG") or Lab().config_file)
            try:
                summary = run_failover(load_config(path), args.failed, args.survivor, args.groups, args.dry_run, args.force)
            except FailoverRefused as e:
                print(f"kafka-dr failover: refused: {e}", file=sys.stderr)
                return 1
            print(format_summary(summary))
            print(json.dumps(summary, default=str))
            return 0
        if args.cmd == "bench":
            from kafka_dr.bench.cli import run as run_bench

            return run_bench(args)
        if args.cmd == "demo":
            from kafka_dr.demo import run_demo

            return run_demo(args.dir)
    except ConfigError as e:
        print(f"kafka-dr: invalid config: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - the CLI's job is a one-line message
        from kafka_dr.lab.jars import LabPrerequisiteMissing
        from kafka_dr.lab.lab import LabError

        if isinstance(e, (LabError, LabPrerequisiteMissing)):
            print(f"kafka-dr: {e}", file=sys.stderr)
            return 1
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())

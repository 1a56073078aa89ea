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
    up.add_argument("--secure", action="store_true", help="SASL_SSL (SCRAM-SHA-512) listeners with generated certificates; secrets in <dir>/secrets.env")
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
        path = lab.up(count=args.clusters, base_port=args.base_port, secure=args.secure)
        _print_status(lab)
        print(f"\nlab config: {path}")
        if args.secure:
            print(f"secrets:    source {lab.root / 'secrets.env'}   (SCRAM user and password for ${{env:...}} references)")
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
    fb = sub.add_parser("failback", help="fail back to a recovered cluster: resync or reseed (the dr_failback DAG's steps)")
    fb.add_argument("--recovered", required=True, help="the cluster that is back (resync) or rebuilt empty (reseed)")
    fb.add_argument("--survivor", required=True, help="the cluster that served during the outage")
    fb.add_argument("--mode", choices=["resync", "reseed"], required=True)
    fb.add_argument("--topics", default=".*", help="narrow the topics copied back (regex)")
    fb.add_argument("--groups", default=".*", help="consumer groups to move back (regex, default all)")
    fb.add_argument("--since-ms", type=int, default=None, help="resync without a configured flow back: copy survivor records from this time")
    fb.add_argument("--until-ms", type=int, default=None, help="... and before this time")
    fb.add_argument("--dry-run", action="store_true", help="report what would happen, change nothing")
    fb.add_argument("--force", action="store_true", help="even if not recorded as failed, or (reseed) not empty")
    fb.add_argument("--config", type=Path, default=None, help="config file (default $KAFKA_DR_CONFIG or the lab's)")
    dq = sub.add_parser("dq", help="compare the clusters and validate the data-quality expectations (local Spark)")
    dq.add_argument("rest", nargs=argparse.REMAINDER, help="--config PATH [--flow NAME] [--topic NAME] ... (see kafka-dr dq --help)")
    dr = sub.add_parser("drill", help="fault drills on a lab of their own: kill -9, broker restarts, network cut, soak; prints a table")
    dr.add_argument("faults", nargs="*", default=["kill-job", "target-restart", "source-restart", "network-cut"],
                    help="kill-job, target-restart, source-restart, network-cut, soak (default: all but soak)")
    dr.add_argument("--kill-trials", type=int, default=10)
    dr.add_argument("--soak-seconds", type=float, default=600)
    dr.add_argument("--soak-batch", type=int, default=200, help="soak load: records every 0.1 s (default 200: ~2000/s)")
    dr.add_argument("--dir", type=Path, default=None, help="drill lab folder (default ./.lab-drill; wiped first)")
    dr.add_argument("--base-port", type=int, default=19892)
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

            from kafka_dr.airflow.env import LAB_USER, airflow_env, ensure_login
            from kafka_dr.lab.lab import Lab

            lab = Lab()
            path = args.config or lab.config_file
            home = args.home or lab.root / "airflow"
            for key, value in airflow_env(home, path, load_config(path)).items():
                print(f"export {key}={shlex.quote(value)}")
            pw = ensure_login(home)
            print(f"# Airflow login: user {LAB_USER!r}, password in {pw} (key {LAB_USER!r})", file=sys.stderr)
            return 0
        if args.cmd == "replicate":
            from kafka_dr.spark.job import main as replicate_main

            rest = args.rest
            if "--master" not in rest:
                rest = [*rest, "--master", "local[*]"]
            return replicate_main(rest)
        if args.cmd == "dq":
            from kafka_dr.dq.cli import main as dq_main

            return dq_main(args.rest)
        if args.cmd == "failover":
            from kafka_dr.kafka.failover import FailoverRefused, format_summary, run_failover

            return _operator_run("failover", "refused", (FailoverRefused,), format_summary, lambda cfg: run_failover(
                cfg, args.failed, args.survivor, args.groups, args.dry_run, args.force), args.config)
        if args.cmd == "failback":
            from kafka_dr.core.dq import DataQualityFailed
            from kafka_dr.core.failback import FailbackRefused
            from kafka_dr.kafka.failback import GateFailed, format_summary, run_failback

            return _operator_run("failback", "stopped", (FailbackRefused, GateFailed, DataQualityFailed), format_summary,
                                 lambda cfg: run_failback(cfg, args.recovered, args.survivor, args.mode, args.groups, args.topics,
                                                          args.dry_run, args.force, args.since_ms, args.until_ms), args.config)
        if args.cmd == "drill":
            from kafka_dr.lab.drill import format_table, run_drill

            results = run_drill(args.dir, args.faults, args.kill_trials, args.soak_seconds, args.base_port, soak_batch=args.soak_batch)
            print(format_table(results))
            return 0 if all(r.lost == 0 and r.duplicated == 0 for r in results) else 1
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


def _operator_run(name: str, verb: str, stops: tuple, format_summary, run, config: Path | None) -> int:
    """The CLI twin of an operator DAG (failover, failback): load the config (``--config``,
    ``$KAFKA_DR_CONFIG`` or the lab's), run the steps, print the summary text and its JSON.
    A refusal or a failed gate is one line on stderr and exit code 1."""
    import json
    import os

    from kafka_dr.lab.lab import Lab

    path = config or Path(os.environ.get("KAFKA_DR_CONFIG") or Lab().config_file)
    try:
        summary = run(load_config(path))
    except stops as e:
        print(f"kafka-dr {name}: {verb}: {e}", file=sys.stderr)
        return 1
    print(format_summary(summary))
    print(json.dumps(summary, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

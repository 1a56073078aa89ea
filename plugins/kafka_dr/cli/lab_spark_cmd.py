"""``kafka-dr lab spark up|down|status``: the lab's Spark standalone cluster (:mod:`kafka_dr.lab.spark_cluster`).

While it runs, the lab config's ``spark.master`` is its master, so the DAGs' spark-submit and
``kafka-dr dq`` run their jobs there; ``down`` puts local Spark back.
"""

from __future__ import annotations

import argparse


def add_parser(verbs: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """``spark`` under ``kafka-dr lab`` (``verbs``: the lab's verbs, ``common``: their shared options)."""
    spark = verbs.add_parser("spark", help="the lab's Spark standalone cluster (master, workers)", parents=[common])
    sv = spark.add_subparsers(dest="spark_cmd", required=True, metavar="{up,down,status}")
    up = sv.add_parser(
        "up",
        help="start the master and workers (idempotent); the lab config's spark.master becomes the cluster",
        parents=[common],
    )
    up.add_argument("--workers", type=int, default=None, help="how many workers (default 2)")
    up.add_argument(
        "--cores",
        type=int,
        default=None,
        help="cores each worker offers (default 2: a job takes one unless it sets spark.cores.max)",
    )
    up.add_argument("--memory", default=None, help="memory each worker offers its executors (default 1g per core)")
    up.add_argument(
        "--port", type=int, default=None, help="the master's port (default $KAFKA_DR_LAB_SPARK_PORT or 7077)"
    )
    up.add_argument(
        "--webui-port",
        type=int,
        default=None,
        help="the master's web UI; worker i's is this + i (default $KAFKA_DR_LAB_SPARK_WEBUI_PORT or 8080)",
    )
    sv.add_parser("down", help="stop the workers and the master; the lab config says local[2] again", parents=[common])
    sv.add_parser("status", help="show the master and each worker (exit 0 only when all are alive)", parents=[common])


def run(args: argparse.Namespace) -> int:
    from kafka_dr.lab.lab import Lab
    from kafka_dr.lab.spark_cluster import SparkCluster, point_lab_config

    lab = Lab(args.dir)
    cluster = SparkCluster(lab.root / "spark")
    if args.spark_cmd == "up":
        layout = cluster.up(_layout(args, cluster))
        ok = print_status(cluster)
        print(f"\nmaster:     {layout.master_url}   web UI: {layout.ui_url()}")
        if point_lab_config(lab.config_file, layout.master_url):
            print(f"lab config: {lab.config_file} (spark.master: {layout.master_url})")
        return 0 if ok else 1
    if args.spark_cmd == "down":
        cluster.down()
        point_lab_config(lab.config_file, None)
        print(f"Spark cluster stopped: {cluster.folder}")
        return 0
    if cluster.layout() is None:
        print(f"no Spark cluster in {cluster.folder} (run `kafka-dr lab spark up`)")
        return 1
    return 0 if print_status(cluster) else 1


def _layout(args: argparse.Namespace, cluster):
    """The layout asked for: each option given, else the running cluster's, else the default;
    checked before anything starts."""
    from kafka_dr.core.inputs import InvalidInput
    from kafka_dr.lab.spark_cluster import SparkLayout, default_port, default_webui_port

    running = cluster.layout() if cluster.running_master() else None

    def pick(given, kept, default):
        return given if given is not None else (kept if running else default)

    cores = pick(args.cores, running and running.cores, 2)
    layout = SparkLayout(
        port=pick(args.port, running and running.port, default_port()),
        webui_port=pick(args.webui_port, running and running.webui_port, default_webui_port()),
        workers=pick(args.workers, running and running.workers, 2),
        cores=cores,
        memory=pick(args.memory, running and running.memory, f"{max(cores, 1)}g"),
    )
    problems = layout.problems()
    if problems:
        raise InvalidInput(problems)
    return layout


def print_status(cluster) -> bool:
    """One row per daemon; True when every one is alive."""
    rows = cluster.status()
    print(f"{'daemon':<11}{'pid':<9}{'state':<10}{'cores':<7}web UI")
    for r in rows:
        print(f"{r.name:<11}{r.pid or '-':<9}{r.state:<10}{'-' if r.cores is None else r.cores:<7}{r.ui}")
    return bool(rows) and all(r.alive for r in rows)

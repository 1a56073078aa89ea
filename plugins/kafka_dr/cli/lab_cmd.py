"""``kafka-dr lab ...``: the local lab of real Apache Kafka clusters."""

from __future__ import annotations

import argparse
from pathlib import Path

from kafka_dr.cli import lab_monitoring_cmd, lab_spark_cmd


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    lab = sub.add_parser("lab", help="the local lab of real Apache Kafka clusters", parents=[common])
    lab.add_argument("--dir", type=Path, default=None, help="lab folder (default: $KAFKA_DR_LAB_DIR or ./.lab)")
    # --dir before or after the verb: `lab --dir X up` and `lab up --dir X` are the same
    here = argparse.ArgumentParser(add_help=False, parents=[common])
    here.add_argument(
        "--dir", type=Path, default=argparse.SUPPRESS, help="lab folder (default: $KAFKA_DR_LAB_DIR or ./.lab)"
    )
    common = here
    ls = lab.add_subparsers(dest="lab_cmd", required=True, metavar="{up,down,status,stop,start,kill,spark,monitoring}")
    up = ls.add_parser("up", help="start the clusters (idempotent) and write the lab config", parents=[common])
    up.add_argument("--clusters", type=int, default=2, help="how many clusters (default 2: east, west)")
    up.add_argument(
        "--brokers",
        type=int,
        default=1,
        help="brokers per cluster, 1-5 (default 1); brokers are named east-1, east-2... and form one KRaft quorum",
    )
    up.add_argument(
        "--base-port",
        type=int,
        default=None,
        help="first broker port; broker j of cluster i uses base+100*i+10*j (default $KAFKA_DR_LAB_BASE_PORT or 19092)",
    )
    up.add_argument(
        "--secure",
        action="store_true",
        help="SASL_SSL (SCRAM-SHA-512) listeners with generated certificates; secrets in <dir>/secrets.env",
    )
    down = ls.add_parser("down", help="stop every lab broker this lab started", parents=[common])
    down.add_argument("--wipe", action="store_true", help="also delete the lab folder and its data")
    ls.add_parser(
        "status",
        help="show each broker's state and each cluster's partition health (exit 0 only when every broker answers)",
        parents=[common],
    )
    for verb, text in (
        ("stop", "stop a cluster (all its brokers) or one broker, keeping the data"),
        ("start", "start a stopped cluster or broker; waits until it is back in the cluster's metadata"),
        ("kill", "SIGKILL a cluster's brokers or one broker (a crash)"),
    ):
        p = ls.add_parser(verb, help=text, parents=[common])
        p.add_argument("name", metavar="cluster|broker", help="a cluster (east) or one of its brokers (east-2)")
    lab_spark_cmd.add_parser(ls, common)
    lab_monitoring_cmd.add_parser(ls, common)
    lab.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kafka_dr.core.inputs import InvalidInput
    from kafka_dr.lab.lab import Lab
    from kafka_dr.lab.topology import MAX_BROKERS, find_named

    if args.lab_cmd == "spark":
        return lab_spark_cmd.run(args)
    if args.lab_cmd == "monitoring":
        return lab_monitoring_cmd.run(args)
    lab = Lab(args.dir)
    if args.lab_cmd == "up":
        if args.clusters < 1:
            raise InvalidInput([f"--clusters {args.clusters}: must be at least 1"])
        if not 1 <= args.brokers <= MAX_BROKERS:
            raise InvalidInput([f"--brokers {args.brokers}: must be between 1 and {MAX_BROKERS}"])
        path = lab.up(count=args.clusters, base_port=args.base_port, secure=args.secure, brokers=args.brokers)
        print_status(lab)
        print_proxy_notes(lab)
        print(f"\nlab config: {path}")
        if args.secure:
            print(f"secrets:    source {lab.root / 'secrets.env'}   (kafka-dr's login, for ${{env:...}})")
            print("admin:      KAFKA_DR_LAB_ADMIN_USERNAME/_PASSWORD there: the lab's only super user")
        print(f"use it:     export KAFKA_DR_CONFIG={path}")
    elif args.lab_cmd == "down":
        monitoring, exporter = lab_monitoring_cmd.services(lab, lab_monitoring_cmd.recorded_port(lab))
        monitoring.down()
        exporter.down()
        lab.down(wipe=args.wipe)
        print(f"lab stopped{' and wiped' if args.wipe else ''}: {lab.root}")
    elif args.lab_cmd == "status":
        if not lab.clusters():
            print(f"no lab in {lab.root} (run `kafka-dr lab up`)")
            return 1
        ok = print_status(lab)
        print_proxy_notes(lab)
        return 0 if ok else 1
    else:
        if find_named(lab.clusters(), args.name) is None:
            raise InvalidInput(
                [f"no cluster or broker named {args.name!r} in the lab in {lab.root} (known: {lab.names() or 'none'})"]
            )
        getattr(lab, args.lab_cmd)(args.name)
        print(
            {
                "stop": f"stopped {args.name} (data kept)",
                "start": f"started {args.name}",
                "kill": f"killed {args.name}",
            }[args.lab_cmd]
        )
    return 0


def print_status(lab) -> bool:
    """One row per broker; a cluster of several brokers first gets a row of its own. The
    cluster's columns (topics, under-replicated and offline partitions, id) are on the
    cluster's row, which for a one-broker cluster is its broker's. True when every broker answers."""
    clusters = lab.cluster_status()
    print(_row("name", "address", "pid", "state", ("topics", "under-replicated", "offline", "cluster id")))
    for c in clusters:
        figures = tuple("-" if v is None else v for v in (c.topics, c.under_replicated, c.offline, c.cluster_id))
        if len(c.brokers) == 1:
            b = c.brokers[0]
            print(_row(b.name, b.bootstrap, b.pid or "-", _state(b), figures))
            continue
        up = sum(b.answering for b in c.brokers)
        state = "healthy" if up == len(c.brokers) else ("degraded" if up else "down")
        print(_row(c.name, f"{len(c.brokers)} brokers", "", state, figures))
        for b in c.brokers:
            print(_row(f"  {b.name}", b.bootstrap, b.pid or "-", _state(b)))
    return all(c.answering for c in clusters)


def print_proxy_notes(lab) -> None:
    """A cluster of a game day's or a drill's lab sends its clients to a TCP proxy that only
    that run serves: without it, only the plaintext listener past the proxy answers."""
    for c in lab.clusters():
        if c.proxy_port:
            direct = ",".join(b.direct for b in c.nodes)
            print(
                f"\nnote: {c.name} sends its clients to a proxy that only a running `kafka-dr gameday` or "
                f"`kafka-dr drill` serves; meanwhile its brokers answer past the proxy at {direct}"
            )


def _row(name, address, pid, state, cluster: tuple = ()) -> str:
    row = f"{name:<12}{address:<18}{pid:<9}{state:<10}"
    if cluster:
        topics, under, offline, cluster_id = cluster
        row += f"{topics:<8}{under:<18}{offline:<9}{cluster_id}"
    return row.rstrip()


def _state(b) -> str:
    return "healthy" if b.answering else ("starting" if b.running else "stopped")

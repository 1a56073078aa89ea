"""``kafka-dr lab ...``: the local lab of real Apache Kafka clusters."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    lab = sub.add_parser("lab", help="the local lab of real Apache Kafka clusters", parents=[common])
    lab.add_argument("--dir", type=Path, default=None, help="lab folder (default: $KAFKA_DR_LAB_DIR or ./.lab)")
    # --dir before or after the verb: `lab --dir X up` and `lab up --dir X` are the same
    here = argparse.ArgumentParser(add_help=False, parents=[common])
    here.add_argument(
        "--dir", type=Path, default=argparse.SUPPRESS, help="lab folder (default: $KAFKA_DR_LAB_DIR or ./.lab)"
    )
    common = here
    ls = lab.add_subparsers(dest="lab_cmd", required=True, metavar="{up,down,status,stop,start,kill}")
    up = ls.add_parser("up", help="start the clusters (idempotent) and write the lab config", parents=[common])
    up.add_argument("--clusters", type=int, default=2, help="how many clusters (default 2: east, west)")
    up.add_argument(
        "--base-port",
        type=int,
        default=None,
        help="first broker port; cluster i uses base+100*i (default $KAFKA_DR_LAB_BASE_PORT or 19092)",
    )
    up.add_argument(
        "--secure",
        action="store_true",
        help="SASL_SSL (SCRAM-SHA-512) listeners with generated certificates; secrets in <dir>/secrets.env",
    )
    down = ls.add_parser("down", help="stop every lab broker this lab started", parents=[common])
    down.add_argument("--wipe", action="store_true", help="also delete the lab folder and its data")
    ls.add_parser("status", help="show each cluster's state (exit 0 only when every cluster answers)", parents=[common])
    for verb, text in (
        ("stop", "stop one cluster, keeping its data"),
        ("start", "start one stopped cluster"),
        ("kill", "SIGKILL one cluster's broker"),
    ):
        p = ls.add_parser(verb, help=text, parents=[common])
        p.add_argument("cluster")
    lab.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kafka_dr.core.inputs import InvalidInput
    from kafka_dr.lab.lab import Lab

    lab = Lab(args.dir)
    if args.lab_cmd == "up":
        if args.clusters < 1:
            raise InvalidInput([f"--clusters {args.clusters}: must be at least 1"])
        path = lab.up(count=args.clusters, base_port=args.base_port, secure=args.secure)
        print_status(lab)
        print(f"\nlab config: {path}")
        if args.secure:
            print(
                f"secrets:    source {lab.root / 'secrets.env'}   (SCRAM user and password for ${{env:...}} references)"
            )
        print(f"use it:     export KAFKA_DR_CONFIG={path}")
    elif args.lab_cmd == "down":
        lab.down(wipe=args.wipe)
        print(f"lab stopped{' and wiped' if args.wipe else ''}: {lab.root}")
    elif args.lab_cmd == "status":
        if not lab.clusters():
            print(f"no lab in {lab.root} (run `kafka-dr lab up`)")
            return 1
        return 0 if print_status(lab) else 1
    else:
        known = [c.name for c in lab.clusters()]
        if args.cluster not in known:
            raise InvalidInput(
                [f"no cluster named {args.cluster!r} in the lab in {lab.root} (clusters: {', '.join(known) or 'none'})"]
            )
        getattr(lab, args.lab_cmd)(args.cluster)
        print(
            {
                "stop": f"stopped {args.cluster} (data kept)",
                "start": f"started {args.cluster}",
                "kill": f"killed {args.cluster}",
            }[args.lab_cmd]
        )
    return 0


def print_status(lab) -> bool:
    rows = lab.status()
    print(f"{'cluster':<10}{'bootstrap':<18}{'pid':<9}{'state':<10}{'topics':<8}cluster id")
    for r in rows:
        state = "healthy" if r.answering else ("starting" if r.running else "stopped")
        print(
            f"{r.name:<10}{r.bootstrap:<18}{r.pid or '-':<9}{state:<10}"
            f"{'' if r.topics is None else r.topics:<8}{r.cluster_id or '-'}"
        )
    return all(r.answering for r in rows)

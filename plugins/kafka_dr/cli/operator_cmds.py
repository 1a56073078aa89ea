"""``kafka-dr failover``, ``kafka-dr failback`` and ``kafka-dr drain``: the CLI twins of the operator DAGs.

The config is ``--config``, ``$KAFKA_DR_CONFIG`` or the lab's. Every input is checked before
the first step changes anything. The summary is text for a person; ``--json`` prints it as
one JSON line instead, for scripts.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path


def add_parsers(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    fo = sub.add_parser(
        "failover", parents=[common], help="fail over from a failed cluster to a survivor (the dr_failover DAG's steps)"
    )
    fo.add_argument("--from", dest="failed", required=True, help="the failed cluster")
    fo.add_argument("--to", dest="survivor", required=True, help="the surviving cluster")
    fo.add_argument("--groups", default=".*", help="consumer groups to move (regex, default all)")
    fo.add_argument("--dry-run", action="store_true", help="report what would happen, change nothing")
    fo.add_argument(
        "--force", action="store_true", help="even if the failed cluster still answers, or the survivor is not ready"
    )
    fo.add_argument("--config", type=Path, default=None, help="config file (default $KAFKA_DR_CONFIG or the lab's)")
    fo.set_defaults(handler=failover)
    fb = sub.add_parser(
        "failback",
        parents=[common],
        help="fail back to a recovered cluster: resync or reseed (the dr_failback DAG's steps)",
    )
    fb.add_argument("--recovered", required=True, help="the cluster that is back (resync) or rebuilt empty (reseed)")
    fb.add_argument("--survivor", required=True, help="the cluster that served during the outage")
    fb.add_argument("--mode", choices=["resync", "reseed"], required=True)
    fb.add_argument("--topics", default=".*", help="narrow the topics copied back (regex)")
    fb.add_argument("--groups", default=".*", help="consumer groups to move back (regex, default all)")
    fb.add_argument(
        "--since-ms",
        type=int,
        default=None,
        help="resync without a configured flow back: copy survivor records from this time",
    )
    fb.add_argument("--until-ms", type=int, default=None, help="... and before this time")
    fb.add_argument("--dry-run", action="store_true", help="report what would happen, change nothing")
    fb.add_argument(
        "--no-data-quality",
        action="store_true",
        help="the gate compares records only, without the Spark + GX comparison (the next data-quality run judges)",
    )
    fb.add_argument("--force", action="store_true", help="even if not recorded as failed, or (reseed) not empty")
    fb.add_argument("--config", type=Path, default=None, help="config file (default $KAFKA_DR_CONFIG or the lab's)")
    fb.set_defaults(handler=failback)
    dr = sub.add_parser(
        "drain",
        parents=[common],
        help="after a failback, with the producers stopped on the survivor: wait until all it holds is on the "
        "recovered cluster (the dr_drain DAG)",
    )
    dr.add_argument("--recovered", required=True, help="the cluster the producers move back to")
    dr.add_argument("--survivor", required=True, help="the cluster whose producers are stopped")
    dr.add_argument("--timeout", type=float, default=600.0, help="seconds to wait (default 600)")
    dr.add_argument("--config", type=Path, default=None, help="config file (default $KAFKA_DR_CONFIG or the lab's)")
    dr.set_defaults(handler=drain)


def _config(path: Path | None):
    from kafka_dr.core.config_load import load_config
    from kafka_dr.lab.lab import Lab

    return load_config(path or Path(os.environ.get("KAFKA_DR_CONFIG") or Lab().config_file))


def _print(summary: dict, format_summary, as_json: bool) -> None:
    print(json.dumps(summary, default=str) if as_json else format_summary(summary), flush=True)


def failover(a: argparse.Namespace) -> int:
    from kafka_dr.core.inputs import failover_problems, require_valid
    from kafka_dr.workflows.dr_run_record import recorded
    from kafka_dr.workflows.failover import FailoverRun, format_summary, run_failover

    cfg = _config(a.config)
    require_valid(failover_problems(cfg, a.failed, a.survivor, a.groups))
    run = FailoverRun(cfg, a.failed, a.survivor, groups=a.groups, dry_run=a.dry_run, force=a.force)
    with recorded(cfg, "failover", {"failed": a.failed, "survivor": a.survivor}, a.dry_run) as rec:
        rec.summary = run_failover(run)
    _print(rec.summary, format_summary, a.json)
    return 0


def failback(a: argparse.Namespace) -> int:
    from kafka_dr.core.inputs import failback_problems, require_valid
    from kafka_dr.workflows.dr_run_record import recorded
    from kafka_dr.workflows.failback import format_summary, run_failback
    from kafka_dr.workflows.failback_flows import FailbackRun

    cfg = _config(a.config)
    require_valid(failback_problems(cfg, a.recovered, a.survivor, a.groups, a.topics, a.since_ms, a.until_ms))
    run = FailbackRun(
        cfg,
        a.recovered,
        a.survivor,
        a.mode,
        topics=a.topics,
        groups=a.groups,
        dry_run=a.dry_run,
        force=a.force,
        since_ms=a.since_ms,
        until_ms=a.until_ms,
        data_quality=not a.no_data_quality,
    )
    with recorded(cfg, "failback", {"recovered": a.recovered, "survivor": a.survivor}, a.dry_run) as rec:
        rec.summary = run_failback(run)
    _print(rec.summary, format_summary, a.json)
    return 0


def drain(a: argparse.Namespace) -> int:
    from kafka_dr.core.inputs import drain_problems, require_valid
    from kafka_dr.workflows.drain import drain as run_drain
    from kafka_dr.workflows.drain import format_summary
    from kafka_dr.workflows.failback_flows import FailbackRun

    cfg = _config(a.config)
    require_valid(drain_problems(cfg, a.recovered, a.survivor, a.timeout))
    run = FailbackRun(cfg, a.recovered, a.survivor, "resync", dry_run=False)
    _print(run_drain(run, a.timeout), format_summary, a.json)
    return 0

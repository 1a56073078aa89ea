"""``kafka-dr acl-sync`` and ``kafka-dr quota-sync``: the CLI twins of ``dr_acl_sync`` and
``dr_quota_sync``.

Each syncs every enabled flow (or the ones ``--flow`` names) and prints each drift report;
``acl-sync`` ends with one line naming the flows whose bindings were refused (exit 1).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_parsers(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    acl = sub.add_parser(
        "acl-sync",
        parents=[common],
        help="copy ACL bindings of replicated topics, selected groups and transactional ids to each target",
    )
    _common(acl)
    acl.set_defaults(handler=acl_sync)
    quota = sub.add_parser(
        "quota-sync", parents=[common], help="copy client quotas by user and client id to each target"
    )
    _common(quota)
    quota.set_defaults(handler=quota_sync)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--flow", action="append", default=None, help="only this flow (repeatable; default all enabled)")
    p.add_argument("--dry-run", action="store_true", help="report what would change, change nothing")
    p.add_argument("--config", type=Path, default=None, help="config file (default $KAFKA_DR_CONFIG or the lab's)")


def _flows(a: argparse.Namespace):
    """(config, the flows to sync); unknown ``--flow`` names fail before anything is read."""
    from kafka_dr.cli.operator_cmds import _config
    from kafka_dr.core.inputs import InvalidInput

    cfg = _config(a.config)
    known = {f.name: f for f in cfg.flows}
    unknown = [n for n in a.flow or () if n not in known]
    if unknown:
        raise InvalidInput([f"--flow {n}: no such flow (flows: {', '.join(known)})" for n in unknown])
    return cfg, [known[n] for n in a.flow] if a.flow else [f for f in cfg.flows if f.enabled]


def quota_sync(a: argparse.Namespace) -> int:
    from kafka_dr.core.quota_sync import format_report
    from kafka_dr.kafka.quota_sync import sync_flow

    cfg, flows = _flows(a)
    for flow in flows:
        report = sync_flow(cfg, flow, dry_run=a.dry_run)
        print(json.dumps(report) if a.json else format_report(report), flush=True)
    return 0


def acl_sync(a: argparse.Namespace) -> int:
    from kafka_dr.core.acl_sync import format_report
    from kafka_dr.kafka.acl_sync import AclSyncFailed, sync_flow

    cfg, flows = _flows(a)
    failed = []
    for flow in flows:
        try:
            report = sync_flow(cfg, flow, dry_run=a.dry_run)
        except AclSyncFailed as e:
            report = e.report
            failed.append(flow.name)
        print(json.dumps(report) if a.json else format_report(report), flush=True)
        if not a.json:
            for note in report.get("notes", ()):
                print(f"  note: {note}", flush=True)
    if failed:
        raise RuntimeError(f"bindings refused in flow(s) {', '.join(failed)} (errors above)")
    return 0

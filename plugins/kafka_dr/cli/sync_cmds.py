"""``kafka-dr acl-sync``: the CLI twin of ``dr_acl_sync``.

Syncs each enabled flow (or the ones ``--flow`` names), prints each drift report, and ends
with one line naming the flows whose bindings were refused (exit 1).
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
    acl.add_argument("--flow", action="append", default=None, help="only this flow (repeatable; default all enabled)")
    acl.add_argument("--dry-run", action="store_true", help="report what would change, change nothing")
    acl.add_argument("--config", type=Path, default=None, help="config file (default $KAFKA_DR_CONFIG or the lab's)")
    acl.set_defaults(handler=acl_sync)


def acl_sync(a: argparse.Namespace) -> int:
    from kafka_dr.cli.operator_cmds import _config
    from kafka_dr.core.acl_sync import format_report
    from kafka_dr.core.inputs import InvalidInput
    from kafka_dr.kafka.acl_sync import AclSyncFailed, sync_flow

    cfg = _config(a.config)
    known = {f.name: f for f in cfg.flows}
    unknown = [n for n in a.flow or () if n not in known]
    if unknown:
        raise InvalidInput([f"--flow {n}: no such flow (flows: {', '.join(known)})" for n in unknown])
    flows = [known[n] for n in a.flow] if a.flow else [f for f in cfg.flows if f.enabled]
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

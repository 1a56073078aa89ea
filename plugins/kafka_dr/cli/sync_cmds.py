"""``kafka-dr acl-sync``, ``quota-sync`` (the CLI twins of ``dr_acl_sync``, ``dr_quota_sync``)
and ``kafka-dr parity``.

Each sync runs every enabled flow (or the ones ``--flow`` names) and prints each drift report;
``acl-sync`` ends with one line naming the flows whose bindings were refused (exit 1).
``parity`` prints the report and exits 1 when the target is not ready (or it cannot tell).
``acls`` prints the ``kafka-acls`` commands for kafka-dr's own principal, per cluster.
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
    parity = sub.add_parser(
        "parity",
        parents=[common],
        help="is a cluster ready for the applications after failover? topics, configs, ACLs, quotas, users, groups",
    )
    parity.add_argument("--from", dest="source", required=True, help="the cluster the applications leave")
    parity.add_argument("--to", dest="target", required=True, help="the cluster they would move to")
    parity.add_argument("--config", type=Path, default=None, help="config file (default $KAFKA_DR_CONFIG or the lab's)")
    parity.set_defaults(handler=parity_report)
    acls = sub.add_parser(
        "acls",
        parents=[common],
        help="print the kafka-acls commands that grant kafka-dr's own principal what it needs on each cluster",
    )
    acls.add_argument("--principal", required=True, help="the principal kafka-dr logs in as, e.g. User:kafka-dr")
    acls.add_argument("--config", type=Path, default=None, help="config file (default $KAFKA_DR_CONFIG or the lab's)")
    acls.set_defaults(handler=print_acls)


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


def parity_report(a: argparse.Namespace) -> int:
    from kafka_dr.cli.operator_cmds import _config
    from kafka_dr.core.failover import cluster_pair_problem
    from kafka_dr.core.inputs import InvalidInput
    from kafka_dr.core.parity import format_report
    from kafka_dr.workflows.parity import parity_report as report_of

    cfg = _config(a.config)
    problem = cluster_pair_problem(list(cfg.clusters), ("--from", a.source), ("--to", a.target))
    if problem is None and not any(f.enabled and (f.source, f.target) == (a.source, a.target) for f in cfg.flows):
        problem = f"no enabled flow {a.source} -> {a.target}: nothing replicates what the applications would need"
    if problem:
        raise InvalidInput([problem])
    report = report_of(cfg, a.source, a.target)
    print(json.dumps(report) if a.json else format_report(report), flush=True)
    if report["verdict"] in ("not ready", "unknown"):
        raise RuntimeError(f"{a.target} is {report['verdict']} for failover from {a.source}")
    return 0


def print_acls(a: argparse.Namespace) -> int:
    from kafka_dr.cli.operator_cmds import _config
    from kafka_dr.core.config_security import PRINCIPAL
    from kafka_dr.core.inputs import InvalidInput
    from kafka_dr.core.product_acls import kafka_acls_commands, product_acls, roles

    if not PRINCIPAL.fullmatch(a.principal):
        raise InvalidInput([f"--principal {a.principal!r}: Kafka's form <type>:<name>, e.g. User:kafka-dr"])
    cfg = _config(a.config)
    out = {}
    for name, role in roles(cfg).items():
        acls = product_acls(cfg, a.principal, name)
        out[name] = {"roles": list(role), "acls": [x.to_dict() for x in acls]}
        if not a.json:
            print(f"# {name} ({' and '.join(role) or 'no flow'}): {len(acls)} binding(s)")
            for line in kafka_acls_commands(acls, cfg.cluster(name).bootstrap_servers):
                print(line)
    if a.json:
        print(json.dumps(out))
    return 0


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

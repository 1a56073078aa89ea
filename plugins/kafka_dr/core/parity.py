"""Failover readiness: is the other cluster usable by the applications, and if not, what differs.

Each check turns one sync's plan (what the sync would still change) or one comparison into
:class:`Difference` rows; the verdict is the worst severity found:

- **not ready**: an application would fail after failover: a replicated topic missing or with
  fewer partitions; an ALLOW binding missing; a SCRAM user missing (it could not log in); a
  consumer group that commits on the source but has no position on the target (it would start
  from its reset policy); registry state that differs (records could not be deserialized);
- **degraded**: it would work, differently: topic-config drift, quota differences, a DENY
  binding missing or a binding the source dropped, a SCRAM mechanism on one side only, group
  positions older than ``thresholds.group_sync_max_age_seconds``;
- **note**: worth knowing, no effect on the verdict: users only on the target, a check that
  could not run (its reason).

Nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

from kafka_dr.core.acl_sync import AclPlan
from kafka_dr.core.formats import readable, stamped
from kafka_dr.core.quota_sync import QuotaPlan, describe_entity
from kafka_dr.core.topic_sync import FlowSyncPlan

NOT_READY, DEGRADED, NOTE = "not ready", "degraded", "note"
READY = "ready"
_RANK = {NOTE: 0, DEGRADED: 1, NOT_READY: 2}


@dataclass(frozen=True, order=True)
class Difference:
    area: str  #: topics, topic configs, acls, quotas, scram users, consumer groups, schema registry
    severity: str
    what: str

    def to_dict(self) -> dict:
        return asdict(self)


def verdict(diffs: Iterable[Difference]) -> str:
    worst = max((_RANK[d.severity] for d in diffs), default=0)
    return {0: READY, 1: DEGRADED, 2: NOT_READY}[worst]


def topic_differences(plan: FlowSyncPlan, internal_prefix: str) -> list[Difference]:
    out = []
    for t in plan.topics:
        if t.source_topic.startswith(internal_prefix):
            continue
        where = f"{plan.target}/{t.target_topic}"
        if t.create:
            out.append(Difference("topics", NOT_READY, f"{where} missing ({plan.source}/{t.source_topic} exists)"))
            continue
        if t.raise_partitions:
            a, b = t.raise_partitions
            out.append(Difference("topics", NOT_READY, f"{where} has {a} partitions, the source {b}"))
        for name, (before, after) in sorted(t.set_configs.items()):
            out.append(Difference("topic configs", DEGRADED, f"{where}: {name} is {before}, the source {after}"))
        for name, before in sorted(t.delete_configs.items()):
            out.append(Difference("topic configs", DEGRADED, f"{where}: {name} is {before}, unset on the source"))
        for name, (src, dst) in sorted(t.not_owned.items()):
            out.append(Difference("topic configs", DEGRADED, f"{where}: {name} is {dst}, the source {src}"))
    return out


def acl_differences(plan: AclPlan, target: str) -> list[Difference]:
    out = []
    for a in plan.create:
        severity = NOT_READY if a.permission == "ALLOW" else DEGRADED
        out.append(Difference("acls", severity, f"missing on {target}: {a}"))
    for a in plan.delete:
        out.append(Difference("acls", DEGRADED, f"on {target} only (dropped on the source): {a}"))
    return out


def quota_differences(plan: QuotaPlan, target: Mapping, target_name: str) -> list[Difference]:
    out = []
    for (e, key), value in plan.set_values.items():
        now = target.get((e, key))
        has = "none" if now is None else f"{now:g}"
        out.append(
            Difference("quotas", DEGRADED, f"{describe_entity(e)}: {key} on {target_name} {has}, source {value:g}")
        )
    for e, key in plan.delete:
        out.append(Difference("quotas", DEGRADED, f"{describe_entity(e)}: {key} on {target_name} only"))
    return out


def scram_differences(
    source: Mapping[str, set[str]], target: Mapping[str, set[str]], source_name: str, target_name: str
) -> list[Difference]:
    """``source``/``target``: user -> SCRAM mechanisms (target names already mapped)."""
    out = []
    for user in sorted(set(source) - set(target)):
        out.append(Difference("scram users", NOT_READY, f"{user} has no SCRAM credential on {target_name}"))
    for user in sorted(set(source) & set(target)):
        if missing := sorted(source[user] - target[user]):
            out.append(Difference("scram users", DEGRADED, f"{user} lacks {', '.join(missing)} on {target_name}"))
    for user in sorted(set(target) - set(source)):
        out.append(Difference("scram users", NOTE, f"{user} exists on {target_name} only, not on {source_name}"))
    return out


def group_differences(
    committed_on_source: Iterable[str], synced_age_s: Mapping[str, float], max_age_s: float, target: str
) -> list[Difference]:
    """Groups with commits on the source against the age of their last synced position."""
    out = []
    for g in sorted(set(committed_on_source)):
        age = synced_age_s.get(g)
        if age is None:
            out.append(Difference("consumer groups", NOT_READY, f"{g} has no synced position on {target}"))
        elif age > max_age_s:
            out.append(
                Difference("consumer groups", DEGRADED, f"{g}: position on {target} last synced {age:.0f} s ago")
            )
    return out


def build(source: str, target: str, diffs: Iterable[Difference], checked: Iterable[str], now_ms: int) -> dict:
    diffs = sorted(set(diffs), key=lambda d: (-_RANK[d.severity], d.area, d.what))
    return {
        "from": source,
        "to": target,
        "verdict": verdict(diffs),
        "checked": list(checked),
        "differences": [d.to_dict() for d in diffs],
        "at_ms": now_ms,
    }


def encode(report: dict) -> bytes:
    return json.dumps(stamped({"kind": "parity", **report})).encode()


def decode(value: bytes | None) -> dict | None:
    try:
        d = json.loads(value or b"")
        if d.get("kind") == "parity" and d.get("verdict") in (READY, DEGRADED, NOT_READY):
            return {k: v for k, v in readable(d, "a parity report").items() if k not in ("kind", "fmt")}
    except (ValueError, AttributeError):
        pass
    return None


def format_report(r: dict) -> str:
    lines = [f"parity {r['from']} -> {r['to']}: {r['verdict']}"]
    if r.get("recorded_age_s") is not None:
        lines[0] += f" (as recorded {r['recorded_age_s']:.0f} s ago: {r['from']} does not answer now)"
    lines.append(f"  checked: {', '.join(r['checked']) or 'nothing'}")
    for d in r["differences"]:
        lines.append(f"  {d['severity']:<9}  {d['area']}: {d['what']}")
    return "\n".join(lines)

"""Client-quota sync as a pure diff: source quotas, target quotas and what the product set there
-> quotas to set and delete, and a drift report.

A flow copies its source cluster's client quotas (``producer_byte_rate``, ``consumer_byte_rate``,
``request_percentage``) by user, client id, both, and their defaults, onto its target, so a
moved application is throttled there as it was at home. User names follow
``acl_sync.principals`` (``User:<name>``). IP quotas and other keys are each cluster's own.

Like ACL sync: a quota the source has is set on the target when it differs (the source is the
truth), and from then on the product owns it; only owned quotas are deleted when the source
drops them; quotas the product set on the source are not copied back. Nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from kafka_dr.core.config import DrConfig, FlowConfig

KEYS = frozenset({"producer_byte_rate", "consumer_byte_rate", "request_percentage"})
ENTITY_TYPES = frozenset({"user", "client-id"})

#: ((type, name or None for the type's default), ...), sorted: ``(("user", "alice"),)``
Entity = tuple[tuple[str, str | None], ...]
Quota = tuple[Entity, str]  #: (entity, key); sorted with key=repr (a default's name is None)


def entity(**names: str | None) -> Entity:
    """``entity(user="alice", client_id=None)``: the user alice with the default client id."""
    return tuple(sorted((k.replace("_", "-"), v) for k, v in names.items()))


def describe_entity(e: Entity) -> str:
    """For people: ``client-id app, user alice``; ``user (default)``."""
    return ", ".join(f"{k} {'(default)' if v is None else v}" for k, v in e)


def entity_mapper(cfg: DrConfig, flow: FlowConfig) -> Callable[[Entity], Entity | None]:
    """Source entity -> target entity (user renamed), or ``None`` when not synced."""

    def target(e: Entity) -> Entity | None:
        names = dict(e)
        if not set(names) <= ENTITY_TYPES:
            return None
        user = names.get("user")
        if user is not None:
            principal = cfg.acl_sync.principal_on(f"User:{user}", flow.source, flow.target)
            if not principal.startswith("User:"):
                return None
            names["user"] = principal[len("User:") :]
        return tuple(sorted(names.items()))

    return target


@dataclass
class QuotaPlan:
    set_values: dict[Quota, float] = field(default_factory=dict)
    delete: list[Quota] = field(default_factory=list)
    owned: set[Quota] = field(default_factory=set)
    in_sync: int = 0
    target_only: list[Quota] = field(default_factory=list)

    @property
    def intent(self) -> set[Quota]:
        return self.owned | set(self.delete)


def plan_quotas(
    source: Mapping[Quota, float],
    source_owned: Iterable[Quota],
    target: Mapping[Quota, float],
    owned: Iterable[Quota],
    to_target: Callable[[Entity], Entity | None],
) -> QuotaPlan:
    not_ours = set(source_owned)
    owned = set(owned) & set(target)
    wanted: dict[Quota, float] = {}
    mirrored: set[Quota] = set()
    for (entity, key), value in source.items():
        mapped = to_target(entity)
        if key not in KEYS or mapped is None:
            continue
        if (entity, key) in not_ours:
            mirrored.add((mapped, key))
        else:
            wanted[(mapped, key)] = value
    plan = QuotaPlan()
    plan.set_values = {q: v for q, v in sorted(wanted.items(), key=repr) if target.get(q) != v}
    plan.delete = sorted(owned - set(wanted), key=repr)
    plan.in_sync = len(wanted) - len(plan.set_values)
    plan.owned = (owned & set(wanted)) | set(plan.set_values)
    plan.target_only = sorted(
        (q for q in target if q[1] in KEYS and q not in wanted and q not in owned | mirrored), key=repr
    )
    return plan


def encode_owned(flow: str, quotas: Iterable[Quota]) -> bytes:
    rows = [[[list(p) for p in e], k] for e, k in sorted(quotas, key=repr)]
    return json.dumps({"kind": "quota-owned", "flow": flow, "quotas": rows}).encode()


def decode_owned(value: bytes | None) -> tuple[str, set[Quota]] | None:
    try:
        d = json.loads(value or b"")
        if d.get("kind") == "quota-owned":
            quotas = {(tuple((str(t), None if n is None else str(n)) for t, n in e), str(k)) for e, k in d["quotas"]}
            return str(d["flow"]), quotas
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def report(flow: FlowConfig, plan: QuotaPlan, target: Mapping[Quota, float], dry_run: bool) -> dict:
    def line(q: Quota, value: float | None = None) -> str:
        """``entity: key = value (was old)``; without ``value``, what is deleted."""
        was = target.get(q)
        text = f"{describe_entity(q[0])}: {q[1]}"
        if value is not None:
            text += f" = {value:g}"
            return text if was is None or was == value else f"{text} (was {was:g})"
        return text if was is None else f"{text} (was {was:g})"

    return {
        "flow": flow.name,
        "source": flow.source,
        "target": flow.target,
        "dry_run": dry_run,
        "set": [line(q, v) for q, v in plan.set_values.items()],
        "deleted": [line(q) for q in plan.delete],
        "in_sync": plan.in_sync,
        "target_only": [line(q, target[q]) for q in plan.target_only],  # was == value: no "was"
    }


def format_report(r: dict) -> str:
    done = ("to set", "to delete") if r["dry_run"] else ("set", "deleted")
    lines = [
        f"quota sync of flow {r['flow']} ({r['source']} -> {r['target']}): "
        f"{len(r['set'])} {done[0]}, {len(r['deleted'])} {done[1]}, {r['in_sync']} in sync"
    ]
    for title, key in ((done[0], "set"), (done[1], "deleted"), ("only on the target (left alone)", "target_only")):
        if r[key]:
            lines.append(f"  {title}:")
            lines.extend(f"    {x}" for x in r[key])
    lines.extend(f"  error: {e}" for e in r.get("errors", ()))
    return "\n".join(lines)

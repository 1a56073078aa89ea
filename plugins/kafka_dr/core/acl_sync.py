"""ACL sync as a pure diff: source bindings, target bindings and what the product created there
-> bindings to create and delete, and a drift report.

What one flow copies from its source to its target:

- **topic** bindings on topics the flow replicates, under their target name (a ``prefix`` flow's
  ``orders`` binding lands on ``east.orders``). A ``PREFIXED`` binding is copied when its prefix
  is itself a name the flow selects. Remote topics (``prefix`` flows), and every topic when
  ``acl_sync.read_only`` is on, are read-only on the target: ALLOW bindings keep READ, DESCRIBE
  and DESCRIBE_CONFIGS, ALL becomes READ (MirrorMaker 2's rule) and WRITE-class operations are
  left out. DENY bindings are copied as they are: a deny never grants anything;
- **group** bindings on the consumer groups the config selects (``consumer_groups``);
- **transactional-id** bindings on ids ``acl_sync.transactional_ids`` selects, and **cluster**
  bindings for IDEMPOTENT_WRITE and DESCRIBE (what producers and clients need; administrative
  cluster operations are an operator's decision). Neither is copied in read-only mode;
- never the wildcard ``*`` (it would grant on topics and groups no flow replicates), never a
  binding on the product's own topics, groups or transactional ids, and never one of the
  principal kafka-dr itself runs as (what it needs depends on each cluster's role:
  :mod:`kafka_dr.core.product_acls`).

Principals are renamed with ``acl_sync.principals``. **Ownership**: the target's bindings that
the product created are recorded (:mod:`kafka_dr.kafka.sync_state`); only those are ever
deleted (when the source no longer has them), and bindings the product created on the
*source* are not copied back, so active/active flows cannot loop a binding back after an
operator removed it. Nothing here does I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

from kafka_dr.core.config import DrConfig, FlowConfig, LoopPolicy
from kafka_dr.core.formats import readable, stamped
from kafka_dr.core.loop import router_for

#: operations an ALLOW binding keeps on a read-only target topic
READ_OPS = frozenset({"READ", "DESCRIBE", "DESCRIBE_CONFIGS"})
#: cluster-level operations applications need (idempotent producers, metadata)
CLIENT_CLUSTER_OPS = frozenset({"IDEMPOTENT_WRITE", "DESCRIBE"})


@dataclass(frozen=True, order=True)
class Acl:
    """One ACL binding, in Kafka's own words (enum names as strings)."""

    resource_type: str  #: TOPIC, GROUP, TRANSACTIONAL_ID, CLUSTER, ...
    name: str
    pattern: str  #: LITERAL or PREFIXED
    principal: str
    host: str
    operation: str
    permission: str  #: ALLOW or DENY

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Acl:
        return cls(**{k: str(d[k]) for k in cls.__dataclass_fields__})

    def __str__(self) -> str:
        pattern = "" if self.pattern == "LITERAL" else f" ({self.pattern.lower()})"
        host = "" if self.host == "*" else f" from {self.host}"
        return (
            f"{self.permission} {self.principal} {self.operation} on "
            f"{self.resource_type.lower()} {self.name}{pattern}{host}"
        )


@dataclass(frozen=True)
class AclScope:
    """What one flow copies and how it renames: built by :func:`scope_for`."""

    source: str
    target: str
    target_topic: Callable[[str], str | None]  #: source topic -> target topic (the flow's router)
    group_selected: Callable[[str], bool]
    txn_selected: Callable[[str], bool]
    internal_prefix: str
    remote_read_only: bool  #: every copied topic binding is read-only
    principal_on: Callable[[str, str, str], str]  #: (principal, source, target) -> principal
    read_only: bool  #: acl_sync.read_only: topic bindings only, read-only
    own_principals: frozenset[str] = frozenset()  #: kafka-dr's own: granted per cluster role


def _matcher(allow: Iterable[str], deny: Iterable[str]):
    allow_re = [re.compile(p) for p in allow]
    deny_re = [re.compile(p) for p in deny]
    return lambda name: any(r.fullmatch(name) for r in allow_re) and not any(r.fullmatch(name) for r in deny_re)


def scope_for(cfg: DrConfig, flow: FlowConfig, own_principals: Iterable[str] = ()) -> AclScope:
    router = router_for(cfg, flow)
    groups = _matcher(cfg.consumer_groups.allow, cfg.consumer_groups.deny)
    txns = _matcher(cfg.acl_sync.transactional_ids_allow, cfg.acl_sync.transactional_ids_deny)
    return AclScope(
        source=flow.source,
        target=flow.target,
        target_topic=router.target_topic,
        group_selected=lambda g: not g.startswith("_") and groups(g),
        txn_selected=txns,
        internal_prefix=cfg.internal_prefix,
        remote_read_only=flow.loop_policy is LoopPolicy.PREFIX or cfg.acl_sync.read_only,
        principal_on=cfg.acl_sync.principal_on,
        read_only=cfg.acl_sync.read_only,
        own_principals=frozenset(own_principals),
    )


def _read_only(acl: Acl) -> Acl | None:
    if acl.permission == "DENY" or acl.operation in READ_OPS:
        return acl
    if acl.operation == "ALL":
        return Acl(**{**acl.to_dict(), "operation": "READ"})
    return None


def target_acl(acl: Acl, scope: AclScope) -> tuple[Acl | None, str | None]:
    """``acl`` as the flow writes it on its target; or ``None`` and why it is not copied
    (``None`` reason: not this flow's business at all, e.g. a topic it does not replicate)."""
    if acl.name == "*" and acl.pattern == "LITERAL" and acl.resource_type != "CLUSTER":
        return None, "wildcard: grant it on the target by hand if wanted"
    if acl.pattern not in ("LITERAL", "PREFIXED"):
        return None, f"{acl.pattern.lower()} pattern"
    if acl.name.startswith(scope.internal_prefix):
        return None, None
    if acl.principal in scope.own_principals:
        return None, "kafka-dr's own principal: its bindings follow each cluster's role"
    principal = scope.principal_on(acl.principal, scope.source, scope.target)
    kind = acl.resource_type
    if kind == "TOPIC":
        name = scope.target_topic(acl.name)
        if name is None:
            return None, None
        out = Acl(**{**acl.to_dict(), "name": name, "principal": principal})
        if scope.remote_read_only:
            out = _read_only(out)
            if out is None:
                return None, f"{acl.operation} on a read-only target topic"
        return out, None
    if kind == "GROUP":
        if not scope.group_selected(acl.name):
            return None, None
    elif kind == "TRANSACTIONAL_ID":
        if not scope.txn_selected(acl.name):
            return None, None
        if scope.read_only:
            return None, "read-only sync: no producers on the target"
    elif kind == "CLUSTER":
        if acl.operation not in CLIENT_CLUSTER_OPS:
            return None, f"cluster {acl.operation} is administrative"
        if scope.read_only:
            return None, "read-only sync: no producers on the target"
    else:
        return None, f"{kind.lower()} bindings are not synced"
    return Acl(**{**acl.to_dict(), "principal": principal}), None


@dataclass
class AclPlan:
    create: list[Acl] = field(default_factory=list)
    delete: list[Acl] = field(default_factory=list)
    owned: set[Acl] = field(default_factory=set)  #: what the product owns on the target afterwards
    in_sync: int = 0
    target_only: list[Acl] = field(default_factory=list)  #: the operator's own: reported, never touched
    skipped: list[tuple[Acl, str]] = field(default_factory=list)

    @property
    def intent(self) -> set[Acl]:
        """Recorded before creating: a crash between create and record cannot orphan a binding."""
        return self.owned | set(self.delete)


def plan_acls(
    source: Iterable[Acl],
    source_owned: Iterable[Acl],
    target: Iterable[Acl],
    owned: Iterable[Acl],
    scope: AclScope,
) -> AclPlan:
    """The actions that make the target's synced bindings equal the source's, mapped.

    ``source_owned``: bindings the product created on the source (not copied back);
    ``owned``: bindings the product created on the target (the only ones it deletes)."""
    not_ours = set(source_owned)
    target = set(target)
    owned = set(owned) & target
    plan = AclPlan()
    wanted: set[Acl] = set()
    for acl in sorted(set(source) - not_ours):
        mapped, why = target_acl(acl, scope)
        if mapped is not None:
            wanted.add(mapped)
        elif why is not None:
            plan.skipped.append((acl, why))
    plan.create = sorted(wanted - target)
    plan.delete = sorted(owned - wanted)
    plan.in_sync = len(wanted & target)
    plan.owned = (owned & wanted) | set(plan.create)
    # the source's own copies (active/active) came from these target bindings: not drift
    mirrored = {target_acl(a, scope)[0] for a in set(source) & not_ours}
    ours = {a for a in target if a.principal in scope.own_principals}
    plan.target_only = sorted(target - wanted - owned - mirrored - ours)
    return plan


def encode_owned(flow: str, acls: Iterable[Acl]) -> bytes:
    """The record of what a flow created on its target (key: the flow's name)."""
    return json.dumps(
        stamped({"kind": "acl-owned", "flow": flow, "acls": [a.to_dict() for a in sorted(acls)]})
    ).encode()


def decode_owned(value: bytes | None) -> tuple[str, set[Acl]] | None:
    """``(flow, bindings)``, or ``None`` for a record this version cannot read."""
    try:
        d = json.loads(value or b"")
        if d.get("kind") == "acl-owned" and readable(d, "an ACL sync's ownership record"):
            return str(d["flow"]), {Acl.from_dict(a) for a in d["acls"]}
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def report(flow: FlowConfig, plan: AclPlan, dry_run: bool) -> dict:
    """The drift report (a plain dict: XCom, JSON)."""
    return {
        "flow": flow.name,
        "source": flow.source,
        "target": flow.target,
        "dry_run": dry_run,
        "created": [str(a) for a in plan.create],
        "deleted": [str(a) for a in plan.delete],
        "in_sync": plan.in_sync,
        "target_only": [str(a) for a in plan.target_only],
        "not_synced": [f"{a}: {why}" for a, why in plan.skipped],
    }


def format_report(r: dict) -> str:
    done = ("to create", "to delete") if r["dry_run"] else ("created", "deleted")
    lines = [
        f"ACL sync of flow {r['flow']} ({r['source']} -> {r['target']}): "
        f"{len(r['created'])} {done[0]}, {len(r['deleted'])} {done[1]}, {r['in_sync']} in sync"
    ]
    for title, key in (
        ("create" if r["dry_run"] else "created", "created"),
        ("delete" if r["dry_run"] else "deleted", "deleted"),
        ("only on the target (not the product's; left alone)", "target_only"),
        ("not synced", "not_synced"),
    ):
        if r[key]:
            lines.append(f"  {title}:")
            lines.extend(f"    {x}" for x in r[key])
    lines.extend(f"  error: {e}" for e in r.get("errors", ()))
    return "\n".join(lines)

"""The ACL bindings kafka-dr's own principal needs on each cluster, by the cluster's role.

A cluster is a **source** (a flow reads from it), a **target** (a flow writes to it), or both
(active/active). On every cluster the product keeps its own topics, groups and transactional
ids under ``internal_prefix`` and gets all operations there, and nothing wider than it needs
elsewhere:

- every cluster: its own namespace (prefixed topic, group, transactional id); on the cluster
  resource DESCRIBE (metadata, ACLs, SCRAM users), DESCRIBE_CONFIGS (client quotas) and
  IDEMPOTENT_WRITE;
- source: READ, DESCRIBE and DESCRIBE_CONFIGS on the replicated topics; DESCRIBE on the
  selected consumer groups (their committed offsets); for a continuous flow READ and DESCRIBE
  on ``__consumer_offsets`` (its job's group-offset sync tails the groups' commits there);
- target: on the target topics what replication and the topic-config sync do (CREATE, WRITE,
  READ, DESCRIBE, DESCRIBE_CONFIGS, ALTER for partitions, ALTER_CONFIGS); READ and DESCRIBE on
  the selected groups (committing translated offsets); on the cluster resource ALTER (ACL
  sync) and ALTER_CONFIGS (quota sync);
- schema mirror: READ and DESCRIBE on the primary's registry topic, the target topic
  operations on each mirror target's.

Topic and group selections that are literal names become literal bindings; a selection with
regular expressions needs the wildcard ``*`` (Kafka's ACLs know names and prefixes, not
regexes); ``prefix`` flows' remote topics are one prefixed binding (``east.``). Nothing here
does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_dr.core.acl_sync import Acl
from kafka_dr.core.config import DrConfig, FlowMode, LoopPolicy, literal_topic
from kafka_dr.core.group_commits import COMMITS_TOPIC

CLUSTER = ("CLUSTER", "kafka-cluster", "LITERAL")
SOURCE_TOPIC_OPS = ("READ", "DESCRIBE", "DESCRIBE_CONFIGS")
TARGET_TOPIC_OPS = ("CREATE", "WRITE", "READ", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER", "ALTER_CONFIGS")


def roles(cfg: DrConfig) -> dict[str, tuple[str, ...]]:
    """Each cluster's roles: ``("source",)``, ``("target",)``, both, or none."""
    out = {}
    for name in cfg.clusters:
        r = []
        if any(f.enabled and f.source == name for f in cfg.flows):
            r.append("source")
        if any(f.enabled and f.target == name for f in cfg.flows):
            r.append("target")
        out[name] = tuple(r)
    return out


def _names(patterns: Iterable[str], deny: Iterable[str]) -> list[tuple[str, str]]:
    """(name, pattern type) resources for a selection: its literal names, or ``*``."""
    literal = [literal_topic(p) for p in patterns]
    if any(n is None for n in literal) or list(deny):
        return [("*", "LITERAL")]
    return [(n, "LITERAL") for n in literal]


def _grant(principal: str, kind: str, names: Iterable[tuple[str, str]], ops: Iterable[str]) -> list[Acl]:
    return [Acl(kind, n, pattern, principal, "*", op, "ALLOW") for n, pattern in names for op in ops]


def product_acls(cfg: DrConfig, principal: str, cluster: str) -> list[Acl]:
    """The bindings ``principal`` (kafka-dr's own) needs on ``cluster``."""
    own = [(cfg.internal_prefix, "PREFIXED")]
    out = _grant(principal, "TOPIC", own, ("ALL",))
    out += _grant(principal, "GROUP", own, ("ALL",))
    out += _grant(principal, "TRANSACTIONAL_ID", own, ("WRITE", "DESCRIBE"))
    out += _grant(principal, CLUSTER[0], [CLUSTER[1:]], ("DESCRIBE", "DESCRIBE_CONFIGS", "IDEMPOTENT_WRITE"))
    groups = _names(cfg.consumer_groups.allow, cfg.consumer_groups.deny)
    for f in cfg.flows:
        if not f.enabled:
            continue
        topics = _names(f.topics.allow, f.topics.deny)
        if f.source == cluster:
            out += _grant(principal, "TOPIC", topics, SOURCE_TOPIC_OPS)
            out += _grant(principal, "GROUP", groups, ("DESCRIBE",))
            if f.mode is FlowMode.CONTINUOUS:  # its job tails the groups' commits
                out += _grant(principal, "TOPIC", [(COMMITS_TOPIC, "LITERAL")], ("READ", "DESCRIBE"))
        if f.target == cluster:
            if f.loop_policy is LoopPolicy.PREFIX:
                remote = [(f"{f.source}{f.prefix_separator}", "PREFIXED")]
                out += _grant(principal, "TOPIC", remote, TARGET_TOPIC_OPS)
            else:
                out += _grant(principal, "TOPIC", topics, TARGET_TOPIC_OPS)
            out += _grant(principal, "GROUP", groups, ("READ", "DESCRIBE"))
            out += _grant(principal, CLUSTER[0], [CLUSTER[1:]], ("ALTER", "ALTER_CONFIGS"))
    return sorted(set(out + _schema_mirror(cfg, principal, cluster)))


def _schema_mirror(cfg: DrConfig, principal: str, cluster: str) -> list[Acl]:
    sm = cfg.schema_mirror
    if sm is None or cluster not in (sm.primary, *sm.targets):
        return []
    registry = [(cfg.cluster(cluster).schema_registry.topic, "LITERAL")]
    ops = ("READ", "DESCRIBE") if cluster == sm.primary else TARGET_TOPIC_OPS
    return _grant(principal, "TOPIC", registry, ops)


def kafka_acls_commands(acls: Iterable[Acl], bootstrap: str) -> list[str]:
    """``kafka-acls.sh --add`` lines granting ``acls`` (one per resource and principal)."""
    by_resource: dict[tuple, list[str]] = {}
    for a in sorted(acls):
        by_resource.setdefault((a.resource_type, a.name, a.pattern, a.principal), []).append(a.operation)
    flag = {"TOPIC": "--topic", "GROUP": "--group", "TRANSACTIONAL_ID": "--transactional-id"}
    lines = []
    for (kind, name, pattern, principal), ops in by_resource.items():
        resource = "--cluster" if kind == "CLUSTER" else f"{flag[kind]} '{name}'"
        if pattern == "PREFIXED":
            resource += " --resource-pattern-type prefixed"
        operations = " ".join(f"--operation {op.title().replace('_', '')}" for op in ops)
        lines.append(
            f"kafka-acls.sh --bootstrap-server {bootstrap} --command-config admin.properties "
            f"--add --allow-principal {principal} {operations} {resource}"
        )
    return lines

"""Parse the ``acl_sync`` section: what the ACL sync copies and how principals map."""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Any

from kafka_dr.core.config import AclSync, ClusterConfig
from kafka_dr.core.parse_context import ParseContext

#: Kafka's principal form, ``<type>:<name>`` (``User:alice``)
PRINCIPAL = re.compile(r"[A-Za-z][A-Za-z0-9_]*:.+")


def parse_acl_sync(ctx: ParseContext, raw: Any, clusters: dict[str, ClusterConfig]) -> AclSync:
    a = ctx.mapping(raw, "acl_sync", {"read_only", "transactional_ids", "principals"})
    tx = ctx.mapping(a.get("transactional_ids"), "acl_sync.transactional_ids", {"allow", "deny"})
    return AclSync(
        read_only=ctx.typed(a.get("read_only"), "acl_sync.read_only", bool, False, "true or false"),
        transactional_ids_allow=ctx.patterns(
            tx.get("allow"), "acl_sync.transactional_ids.allow", (".*",), "transactional id"
        ),
        transactional_ids_deny=ctx.patterns(tx.get("deny"), "acl_sync.transactional_ids.deny", (), "transactional id"),
        principals=_principals(ctx, a.get("principals"), clusters),
    )


def _principals(ctx: ParseContext, raw: Any, clusters: dict[str, ClusterConfig]) -> MappingProxyType:
    """``{logical name: {cluster: principal}}``; a principal may stand for one name per cluster."""
    out: dict[str, MappingProxyType] = {}
    if raw is None:
        return MappingProxyType(out)
    if not isinstance(raw, dict):
        ctx.err("acl_sync.principals", f"expected a mapping, got {type(raw).__name__}")
        return MappingProxyType(out)
    seen: dict[tuple[str, str], str] = {}
    for name, by_cluster in raw.items():
        path = f"acl_sync.principals.{name}"
        m = ctx.mapping(by_cluster, path, set(clusters))
        entry = {}
        for cluster, principal in m.items():
            if cluster not in clusters:
                continue  # reported by mapping() as an unknown key
            where = f"{path}.{cluster}"
            if not isinstance(principal, str) or not PRINCIPAL.fullmatch(principal):
                ctx.err(where, f"bad principal {principal!r}", "Kafka's form <type>:<name>, e.g. User:billing")
                continue
            other = seen.setdefault((cluster, principal), str(name))
            if other != str(name):
                ctx.err(where, f"{principal} on {cluster} is already named {other!r}", "one name per principal")
                continue
            entry[cluster] = principal
        out[str(name)] = MappingProxyType(entry)
    return MappingProxyType(out)

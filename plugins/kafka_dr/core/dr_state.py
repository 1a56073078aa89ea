"""The product's own state: which cluster is active, which is the schema-registry primary,
which clusters are failed (their outgoing flows stopped), and the last failover/failback.

Kept as a small JSON document, versioned by a counter, in the compacted topic
``<prefix>.state`` on every reachable cluster (the newest version wins when they disagree,
so a cluster that was down catches up when it comes back). Pure here; reading and writing
is :mod:`kafka_dr.kafka.state_store`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from kafka_dr.core.formats import readable, stamped


@dataclass(frozen=True)
class DrState:
    version: int = 0
    active_cluster: str | None = None
    schema_primary: str | None = None
    failed_clusters: tuple[str, ...] = ()
    last_event: dict = field(default_factory=dict)

    def encode(self) -> bytes:
        return json.dumps(
            stamped(
                {
                    "version": self.version,
                    "active_cluster": self.active_cluster,
                    "schema_primary": self.schema_primary,
                    "failed_clusters": list(self.failed_clusters),
                    "last_event": self.last_event,
                }
            ),
            sort_keys=True,
            separators=(",", ":"),
        ).encode()

    @classmethod
    def decode(cls, raw: bytes | None) -> DrState | None:
        try:
            d = readable(json.loads(raw or b""), "the DR state")
            return cls(
                int(d["version"]),
                d.get("active_cluster"),
                d.get("schema_primary"),
                tuple(d.get("failed_clusters") or ()),
                dict(d.get("last_event") or {}),
            )
        except (ValueError, KeyError, TypeError):
            return None

    def flow_stopped(self, source: str, target: str | None = None) -> bool:
        """Flows reading from or writing to a failed cluster are stopped until a failback
        clears it: the failback copies between the two itself, with its own rules."""
        return source in self.failed_clusters or (target is not None and target in self.failed_clusters)

    def stopping(self, source: str, target: str) -> str | None:
        """The failed cluster that stops the flow ``source -> target`` (its source first), or None."""
        return next((c for c in (source, target) if c in self.failed_clusters), None)

    def after_failover(self, failed: str, survivor: str, event: dict) -> DrState:
        failed_set = tuple(sorted({*self.failed_clusters, failed} - {survivor}))
        return replace(
            self,
            version=self.version + 1,
            active_cluster=survivor,
            schema_primary=survivor,
            failed_clusters=failed_set,
            last_event=event,
        )


def newest(states: list[DrState | None]) -> DrState:
    """The newest of the copies read from the clusters (an empty state if none)."""
    found = [s for s in states if s is not None]
    return max(found, key=lambda s: s.version) if found else DrState()

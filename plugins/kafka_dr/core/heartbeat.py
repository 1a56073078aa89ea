"""Heartbeats: a small record emitted on every cluster and replicated like data.

On the target of a flow ``S -> T``, the newest heartbeat whose origin is ``S`` tells how far
behind the flow is, end to end (producer on S, replication job, broker on T): its age is the
replication latency plus at most one emission interval. Heartbeats cross the flows under the
flow's loop policy, so a heartbeat that came *back* to its own cluster also proves a loop.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from kafka_dr.core.formats import readable, stamped


@dataclass(frozen=True)
class Heartbeat:
    cluster: str
    emitted_ms: int

    def encode(self) -> bytes:
        return json.dumps(
            stamped({"cluster": self.cluster, "emitted_ms": self.emitted_ms}), separators=(",", ":")
        ).encode()

    @classmethod
    def decode(cls, raw: bytes | None) -> Heartbeat | None:
        try:
            d = readable(json.loads(raw or b""), "a heartbeat")
            return cls(str(d["cluster"]), int(d["emitted_ms"]))
        except (ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True)
class FlowLatency:
    """What the heartbeats say about one flow."""

    flow: str
    source: str
    target: str
    newest_emitted_ms: int | None
    age_seconds: float | None
    status: str  # "ok" | "late" | "missing" | "waiting" (none arrived yet; the first left < threshold ago)
    loops: int = 0  #: heartbeats of the target's own that came back to it (must be 0)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def flow_latency(
    flow: str,
    source: str,
    target: str,
    seen: list[tuple[str | None, Heartbeat]],
    now_ms: int,
    max_age_seconds: float,
    first_emitted_ms: int | None = None,
) -> FlowLatency:
    """Judge one flow from the heartbeats read on its target: ``(origin header, heartbeat)``.

    ``origin`` is ``None`` for a heartbeat produced on the target itself. A heartbeat of the
    target's own that arrives *with* an origin header came back around a loop. With none of
    the source's on the target, the flow is ``waiting`` while the oldest heartbeat the source
    holds (``first_emitted_ms``) is younger than the threshold: the latency is at most that age
    (a new deployment's first check), else ``missing``.
    """
    newest = max((hb.emitted_ms for origin, hb in seen if origin == source and hb.cluster == source), default=None)
    loops = sum(1 for origin, hb in seen if origin is not None and hb.cluster == target)
    if newest is None:
        waited = None if first_emitted_ms is None else max(0.0, (now_ms - first_emitted_ms) / 1000.0)
        if waited is not None and waited <= max_age_seconds:
            return FlowLatency(flow, source, target, None, waited, "waiting", loops)
        return FlowLatency(flow, source, target, None, None, "missing", loops)
    age = max(0.0, (now_ms - newest) / 1000.0)
    return FlowLatency(flow, source, target, newest, age, "ok" if age <= max_age_seconds else "late", loops)

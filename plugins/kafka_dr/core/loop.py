"""Loop policies as pure decisions: which topics a flow copies, and what each record becomes.

A :class:`Router` is built once per flow from the config. For a source topic it answers the
target topic (or ``None``: not this flow's business); for a record's headers it answers the
headers to write (or ``None``: skip, it would loop or duplicate).

- ``provenance``: same topic names. ``not_to_origin`` skips records whose origin is the
  target cluster; ``local_only`` (the Redpanda seed's rule) skips any record that has an
  origin. Right for two clusters; with three or more in a mesh, ``not_to_origin`` forwards
  records over several paths, so use ``copy_flags`` there.
- ``prefix``: remote topics ``<source>.<topic>``; remote topics are never copied back into a
  cluster they came from (the cycle rule), so records need no inspection.
- ``copy_flags``: the Axual bitmask over a distribution tree; a record is copied by a level
  only while its bits for that level and below are clear.

All three add the provenance header (first hop only) because offset translation needs the
origin offset whatever the loop policy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kafka_dr.core.config import DrConfig, FlowConfig, LoopPolicy, ProvenanceRule
from kafka_dr.core.distribution import Level
from kafka_dr.core.naming import PrefixNaming
from kafka_dr.core.provenance import (
    COPY_FLAGS,
    ORIGIN_KEYS,
    Headers,
    origin_and_topic,
    provenance_appender,
    with_copy_flags,
)

#: (headers, source topic, partition, offset, now_ms) -> headers to write, or None to skip
Transform = Callable[[Headers, str, int, int, int], "list[tuple[str, bytes | None]] | None"]


@dataclass(frozen=True)
class Router:
    flow: FlowConfig
    policy: LoopPolicy
    naming: PrefixNaming | None
    level: Level | None
    heartbeat_topic: str

    def selects(self, topic: str) -> bool:
        return topic == self.heartbeat_topic or self.flow.topics.selects(topic)

    def target_topic(self, topic: str) -> str | None:
        """Where ``topic`` is copied on the target; ``None`` when the flow does not copy it."""
        if not self.selects(topic):
            return None
        if self.naming is not None:
            return self.naming.target_topic(self.flow.source, topic, self.flow.target)
        return topic

    def transform(self) -> Transform:
        """The per-record decision for this flow, as a closure with everything bound."""
        source, target = self.flow.source, self.flow.target
        if self.policy is LoopPolicy.PROVENANCE:
            local_only = self.flow.provenance_rule is ProvenanceRule.LOCAL_ONLY
            target_b = target.encode()
            add = provenance_appender(source)

            def provenance(headers: Headers, topic: str, partition: int, offset: int, now_ms: int):
                if headers:
                    for k, _ in headers:
                        if k in ORIGIN_KEYS:
                            return forwarded(headers, topic)
                return add(headers, topic, partition, offset, now_ms)

            def forwarded(headers: Headers, topic: str):
                """A record that was itself replicated to the source: copy it on, or not."""
                if local_only:
                    return None
                # Replicator's default: never write a record back to the topic it started in.
                origin, origin_topic = origin_and_topic(headers)
                if origin == target_b and (origin_topic is None or origin_topic == topic.encode()):
                    return None
                return list(headers)

            return provenance

        if self.policy is LoopPolicy.PREFIX:
            add = provenance_appender(source)

            def prefix(headers: Headers, topic: str, partition: int, offset: int, now_ms: int):
                if headers and any(k in ORIGIN_KEYS for k, _ in headers):
                    return list(headers)
                return add(headers, topic, partition, offset, now_ms)

            return prefix

        level = self.level
        assert level is not None, "copy_flags router without a level"
        mask, bit = level.mask, level.bit
        add = provenance_appender(source)

        def copy_flags(headers: Headers, topic: str, partition: int, offset: int, now_ms: int):
            flags = None
            has_origin = False
            for k, v in headers or ():
                if k == COPY_FLAGS and flags is None:  # the first one, as copy_flags() reads it
                    flags = int(v) if v else 0
                elif k in ORIGIN_KEYS:
                    has_origin = True
            flags = flags or 0
            if flags & mask:
                return None
            out = list(headers or ()) if has_origin else add(headers, topic, partition, offset, now_ms)
            return with_copy_flags(out, flags | bit)

        return copy_flags


def router_for(cfg: DrConfig, flow: FlowConfig) -> Router:
    naming = None
    level = None
    if flow.loop_policy is LoopPolicy.PREFIX:
        naming = PrefixNaming(frozenset(cfg.clusters), flow.prefix_separator)
    elif flow.loop_policy is LoopPolicy.COPY_FLAGS:
        if cfg.distribution is None:
            raise ValueError(f"flow {flow.name!r}: copy_flags needs a distribution tree")
        level = cfg.distribution.level_between(flow.source, flow.target)
        if level is None:
            raise ValueError(
                f"flow {flow.name!r}: {flow.source} and {flow.target} share no level of the distribution tree"
            )
    return Router(flow, flow.loop_policy, naming, level, cfg.names.heartbeat_topic)

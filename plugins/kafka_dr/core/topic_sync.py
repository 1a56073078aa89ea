"""Topic-config sync as a pure diff: source and target topic metadata -> actions + drift report.

For every topic a flow replicates (its :class:`~kafka_dr.core.loop.Router` says which, and
under which name on the target), compare the source topic with its target topic and plan:

- **create** a missing target topic with the source's partition count and replicable configs;
- **raise** the target's partition count when the source grew. Never lower it: a target with
  *more* partitions than its source is reported (``target_larger``) and left alone (Kafka
  cannot shrink a topic, and partition ``p`` still maps to ``p``);
- **alter configs incrementally**: ``SET`` every replicable config whose value differs,
  ``DELETE`` every replicable config explicitly set on the target but no longer set on the
  source (it was removed there: the target falls back to its cluster default too). Only
  explicitly set topic configs (``DYNAMIC_TOPIC_CONFIG``) take part on either side; broker
  defaults are each cluster's own business.

Excluded configs (:data:`~kafka_dr.core.topic_config.DEFAULT_EXCLUDES` plus the user's
``topic_config.exclude``) are never set nor deleted; a difference in them is reported as
``excluded`` and ignored.

**Config owner.** With identity topic names in active/active (``provenance``, ``copy_flags``),
``orders`` on east and ``orders`` on west are each the other's source and target. Synced both
ways, a change made on one side would be undone by the other direction whenever that ran
first. So each identity-named topic has one *config owner*: the source cluster of the first
enabled flow in the config that copies it under its own name (:func:`config_owner`). A flow
whose target is the owner still creates a missing topic and raises partitions (both only ever
grow, so the two directions agree), but does not write configs back into the owner: it
reports the differences as ``not_owned``. Prefix-named remote topics (``east.orders``) have
a single source and are always synced.

Nothing here does I/O; :mod:`kafka_dr.kafka.topic_sync` gathers the metadata and applies the
actions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.loop import router_for
from kafka_dr.core.topic_config import DEFAULT_EXCLUDES


@dataclass(frozen=True)
class TopicState:
    """What the diff needs to know about one topic on one cluster."""

    name: str
    partitions: int
    #: explicitly set topic-level configs only (ConfigSource DYNAMIC_TOPIC_CONFIG)
    configs: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class TopicPlan:
    """The actions for one replicated topic, and what they are about (the drift)."""

    source_topic: str
    target_topic: str
    #: create the target topic with these partitions and configs
    create: bool = False
    create_partitions: int | None = None
    create_configs: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: raise the target's partition count (from, to)
    raise_partitions: tuple[int, int] | None = None
    #: the target has more partitions than the source: (source, target); reported, never lowered
    target_larger: tuple[int, int] | None = None
    #: incremental SET: name -> (target value before or None, new value)
    set_configs: Mapping[str, tuple[str | None, str]] = field(default_factory=lambda: MappingProxyType({}))
    #: incremental DELETE: name -> target value before
    delete_configs: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: excluded configs that differ: name -> (source value, target value), None = not set
    excluded: Mapping[str, tuple[str | None, str | None]] = field(default_factory=lambda: MappingProxyType({}))
    #: differences left alone because the target owns this topic's configs
    not_owned: Mapping[str, tuple[str | None, str | None]] = field(default_factory=lambda: MappingProxyType({}))
    config_owner: str | None = None

    @property
    def changes(self) -> bool:
        """Does applying this plan write anything to the target?"""
        return bool(self.create or self.raise_partitions or self.set_configs or self.delete_configs)

    @property
    def drift(self) -> bool:
        """Is there anything to report (written or not)?"""
        return self.changes or bool(self.target_larger or self.excluded or self.not_owned)

    def to_dict(self) -> dict:
        """A JSON-serialisable view (the XCom and log shape)."""
        out: dict = {"source_topic": self.source_topic, "target_topic": self.target_topic}
        if self.create:
            out["created"] = {
                "partitions": self.create_partitions,
                "configs": dict(sorted(self.create_configs.items())),
            }
        if self.raise_partitions:
            out["partitions_raised"] = {"from": self.raise_partitions[0], "to": self.raise_partitions[1]}
        if self.target_larger:
            out["target_larger"] = {"source": self.target_larger[0], "target": self.target_larger[1]}
        if self.set_configs:
            out["configs_set"] = {k: {"from": a, "to": b} for k, (a, b) in sorted(self.set_configs.items())}
        if self.delete_configs:
            out["configs_deleted"] = {k: {"from": v} for k, v in sorted(self.delete_configs.items())}
        if self.excluded:
            out["excluded_ignored"] = {k: {"source": a, "target": b} for k, (a, b) in sorted(self.excluded.items())}
        if self.not_owned:
            out["not_owned"] = {
                "owner": self.config_owner,
                "configs": {k: {"source": a, "target": b} for k, (a, b) in sorted(self.not_owned.items())},
            }
        return out


@dataclass(frozen=True)
class FlowSyncPlan:
    flow: str
    source: str
    target: str
    topics: tuple[TopicPlan, ...]

    def to_report(self, applied: bool = True) -> dict:
        """The drift report: one entry per topic with something to say, the rest in ``in_sync``."""
        drifted = [t for t in self.topics if t.drift]
        return {
            "flow": self.flow,
            "source": self.source,
            "target": self.target,
            "applied": applied,
            "topics": [t.to_dict() for t in drifted],
            "in_sync": sorted(t.source_topic for t in self.topics if not t.drift),
            "summary": {
                "topics": len(self.topics),
                "created": sum(1 for t in self.topics if t.create),
                "partitions_raised": sum(1 for t in self.topics if t.raise_partitions),
                "target_larger": sum(1 for t in self.topics if t.target_larger),
                "configs_set": sum(len(t.set_configs) for t in self.topics),
                "configs_deleted": sum(len(t.delete_configs) for t in self.topics),
                "excluded_ignored": sum(len(t.excluded) for t in self.topics),
                "not_owned": sum(len(t.not_owned) for t in self.topics),
            },
        }


def excluder(extra: Iterable[str] = ()):
    """A predicate: is this config name excluded (built-in list plus ``extra``, full match)?"""
    patterns = [re.compile(p) for p in (*DEFAULT_EXCLUDES, *extra)]
    return lambda name: any(p.fullmatch(name) for p in patterns)


def plan_topic(
    source: TopicState,
    target: TopicState | None,
    target_topic: str,
    excludes: Iterable[str] = (),
    sync_configs: bool = True,
    config_owner: str | None = None,
) -> TopicPlan:
    """The actions that make ``target`` (``None``: missing) follow ``source``.

    :param excludes: config-name regexes excluded on top of the built-in list
    :param sync_configs: ``False`` when the target cluster owns this topic's configs; the
        differences are then reported as ``not_owned`` instead of being written
    """
    excluded = excluder(excludes)
    wanted = {k: v for k, v in source.configs.items() if not excluded(k)}
    if target is None:
        return TopicPlan(
            source.name,
            target_topic,
            create=True,
            create_partitions=source.partitions,
            create_configs=MappingProxyType(dict(wanted)),
            config_owner=config_owner,
        )

    raise_p = (target.partitions, source.partitions) if source.partitions > target.partitions else None
    larger = (source.partitions, target.partitions) if target.partitions > source.partitions else None

    sets: dict[str, tuple[str | None, str]] = {}
    deletes: dict[str, str] = {}
    ignored: dict[str, tuple[str | None, str | None]] = {}
    for name in sorted(set(source.configs) | set(target.configs)):
        s, t = source.configs.get(name), target.configs.get(name)
        if s == t:
            continue
        if excluded(name):
            ignored[name] = (s, t)
        elif s is None:
            deletes[name] = t  # type: ignore[assignment]  # t is set: s != t
        else:
            sets[name] = (t, s)

    not_owned: dict[str, tuple[str | None, str | None]] = {}
    if not sync_configs:
        not_owned = {k: (b, a) for k, (a, b) in sets.items()} | {k: (None, v) for k, v in deletes.items()}
        sets, deletes = {}, {}
    return TopicPlan(
        source.name,
        target_topic,
        raise_partitions=raise_p,
        target_larger=larger,
        set_configs=MappingProxyType(sets),
        delete_configs=MappingProxyType(deletes),
        excluded=MappingProxyType(ignored),
        not_owned=MappingProxyType(not_owned),
        config_owner=config_owner,
    )


def config_owner(cfg: DrConfig, topic: str) -> str | None:
    """The cluster whose configs an identity-named ``topic`` follows everywhere: the source of
    the first enabled flow (config order) that copies ``topic`` under its own name; ``None``
    when no flow does (prefix naming: every remote topic has exactly one source)."""
    for flow in cfg.flows:
        if flow.enabled and router_for(cfg, flow).target_topic(topic) == topic:
            return flow.source
    return None


def plan_flow(
    cfg: DrConfig,
    flow: FlowConfig,
    source_topics: Mapping[str, TopicState],
    target_topics: Mapping[str, TopicState],
) -> FlowSyncPlan:
    """Plan every topic of ``flow``: the source topics its router selects, against the
    target's topics under their target names. Topics the router does not select are not
    looked at (nor touched)."""
    router = router_for(cfg, flow)
    plans = []
    for name in sorted(source_topics):
        target_name = router.target_topic(name)
        if target_name is None:
            continue
        owner = config_owner(cfg, name) if target_name == name else None
        plans.append(
            plan_topic(
                source_topics[name],
                target_topics.get(target_name),
                target_name,
                cfg.topic_config.exclude,
                sync_configs=owner != flow.target,
                config_owner=owner,
            )
        )
    return FlowSyncPlan(flow.name, flow.source, flow.target, tuple(plans))


def format_report(report: Mapping) -> str:
    """A drift report as readable lines for the task log."""
    s = report["summary"]
    head = (
        f"flow {report['flow']} ({report['source']} -> {report['target']})"
        f"{'' if report.get('applied', True) else ' [dry run]'}: "
        f"{s['topics']} topics, {s['created']} created, {s['partitions_raised']} partition counts raised, "
        f"{s['configs_set']} configs set, {s['configs_deleted']} deleted, {s['target_larger']} target larger, "
        f"{s['excluded_ignored']} excluded differences ignored, {s['not_owned']} not owned"
    )
    lines = [head]
    for t in report["topics"]:
        where = f"  {report['source']}/{t['source_topic']} -> {report['target']}/{t['target_topic']}:"
        if "created" in t:
            c = t["created"]
            cfgs = ", ".join(f"{k}={v}" for k, v in c["configs"].items()) or "no explicit configs"
            lines.append(f"{where} created with {c['partitions']} partitions ({cfgs})")
        if "partitions_raised" in t:
            p = t["partitions_raised"]
            lines.append(f"{where} partitions raised {p['from']} -> {p['to']}")
        if "target_larger" in t:
            p = t["target_larger"]
            lines.append(
                f"{where} target has {p['target']} partitions, source {p['source']}: left as is (never lowered)"
            )
        for k, v in t.get("configs_set", {}).items():
            lines.append(f"{where} set {k}: {v['from'] if v['from'] is not None else '(default)'} -> {v['to']}")
        for k, v in t.get("configs_deleted", {}).items():
            lines.append(f"{where} deleted {k} (was {v['from']}; not set on the source any more)")
        for k, v in t.get("excluded_ignored", {}).items():
            lines.append(f"{where} excluded {k} differs (source {v['source']}, target {v['target']}): ignored")
        if "not_owned" in t:
            no = t["not_owned"]
            for k, v in no["configs"].items():
                lines.append(
                    f"{where} {k} differs (source {v['source']}, target {v['target']}): not written back, "
                    f"{no['owner']} owns this topic's configs (change them there)"
                )
    if report.get("in_sync"):
        lines.append(f"  in sync: {', '.join(report['in_sync'])}")
    return "\n".join(lines)

"""Pre-flight validation: is the replication topology what the operator meant? (the AMPS seed)

Pure rules over the config and plain dicts of topic metadata gathered from the clusters
(:mod:`kafka_dr.kafka.preflight` does the gathering)::

    metadata = {"east": {"orders": {"partitions": 3, "configs": {"cleanup.policy": "delete"}}},
                "west": {...}}

Only enabled flows take part. Each rule returns :class:`Violation` values naming the rule,
the flow and the topic; :func:`validate` runs them all and drops violations about topics
that ``preflight.exclude_topics`` names (full-match regexes, checked against every topic name
the violation is about: source name, target name, origin name).

``replicate``
    Active/active (enabled flows both ways between two clusters): a topic that exists on
    ``A`` and is copied ``A -> B`` must also be copied ``B -> A``, or writes to it on ``B``
    never reach ``A``. For ``prefix`` flows the question is whether ``B``'s local topic of
    the same name comes back (as ``B.<topic>``); remote topics (``B.orders`` on ``A``) are
    copies, not produced to, and are skipped.
``filter``
    Active/active: both directions select the same topics. Checked on every topic name known
    on either cluster plus the literal names in the allow lists; a name already reported under
    ``replicate`` (it exists on the selecting flow's source) is not reported again, so
    ``filter`` is the latent asymmetry: a topic that would flow one way only once created.
``config``
    Source topic and existing target topic have the same partition count and the same
    ``cleanup.policy`` (effective value, order-insensitive). In active/active with identity
    names the pair is reported once, under the first flow.
``cascade``
    A record's journey through every flow, simulated with each flow's real loop-policy
    decision (:meth:`~kafka_dr.core.loop.Router.transform`), starting from every existing
    topic that some flow copies. A record must (1) never come back to the cluster it was
    written on, nor pass a cluster twice (**loop**); (2) reach each cluster at most once, in
    any topic (**duplicate**: e.g. ``not_to_origin`` over a triangle, or ``prefix`` where
    ``A -> B`` and ``A -> X -> B`` both deliver, as ``A.t`` and ``X.A.t``); (3) not be dropped
    by a forwarding flow when no other path brings it to that flow's target (**not
    forwarded**: ``local_only`` in a chain ``A -> X -> B`` without a direct ``A -> B``, where
    ``B`` silently gets only ``X``'s own records). Dropping a record on its way back to its
    origin is the loop policy working and is never reported. ``copy_flags`` over a correct
    distribution tree passes by construction.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka_dr.core.config import DrConfig, FlowConfig, LoopPolicy, literal_topic
from kafka_dr.core.loop import Router, router_for

#: cluster -> topic -> {"partitions": int, "configs": {name: value}}
Metadata = Mapping[str, Mapping[str, Mapping[str, Any]]]

RULES = ("replicate", "filter", "config", "cascade")


@dataclass(frozen=True)
class Violation:
    """One pre-flight error: which rule, on which flow and topic, and why."""

    rule: str
    flow: str
    topic: str
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] flow {self.flow}, topic {self.topic}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "flow": self.flow, "topic": self.topic, "message": self.message}


class PreflightFailed(RuntimeError):
    """Raised with every violation at once."""

    def __init__(self, violations: Iterable[Violation]) -> None:
        self.violations = tuple(violations)
        super().__init__(format_violations(self.violations))


def format_violations(violations: Iterable[Violation]) -> str:
    vs = list(violations)
    lines = [f"pre-flight validation found {len(vs)} violation(s); no flow should start until they are fixed:"]
    lines += [f"  {v}" for v in vs]
    lines.append(
        "A deliberate exception (e.g. a one-way topic) is silenced with preflight.exclude_topics: [<topic regex>]."
    )
    return "\n".join(lines)


class _Ctx:
    """Routers and helpers shared by the rules."""

    def __init__(self, cfg: DrConfig, metadata: Metadata) -> None:
        self.cfg = cfg
        self.metadata = metadata
        self.flows = [f for f in cfg.flows if f.enabled]
        self.routers: dict[str, Router] = {f.name: router_for(cfg, f) for f in self.flows}

    def reverse(self, flow: FlowConfig) -> list[FlowConfig]:
        return [f for f in self.flows if (f.source, f.target) == (flow.target, flow.source)]

    def same_direction(self, flow: FlowConfig) -> list[FlowConfig]:
        return [f for f in self.flows if (f.source, f.target) == (flow.source, flow.target)]

    def topics(self, cluster: str) -> Mapping[str, Mapping[str, Any]]:
        return self.metadata.get(cluster, {})

    def is_remote(self, flow: FlowConfig, topic: str) -> bool:
        """A prefix flow's remote topic (a copy named after another cluster)."""
        naming = self.routers[flow.name].naming
        return naming is not None and naming.topic_source(topic) is not None

    def copies(self, flows: Iterable[FlowConfig], topic: str) -> list[FlowConfig]:
        return [f for f in flows if self.routers[f.name].target_topic(topic) is not None]


def _selection(flows: Iterable[FlowConfig]) -> str:
    return "; ".join(f"{f.name}: allow {list(f.topics.allow)}, deny {list(f.topics.deny)}" for f in flows)


# --- replicate ------------------------------------------------------------------------------


def check_replicate(ctx: _Ctx) -> list[Violation]:
    out = []
    for flow in ctx.flows:
        reverse = ctx.reverse(flow)
        if not reverse:
            continue  # one-way (active/passive): nothing is expected back
        router = ctx.routers[flow.name]
        for topic in sorted(ctx.topics(flow.source)):
            target_topic = router.target_topic(topic)
            if target_topic is None or ctx.is_remote(flow, topic):
                continue
            if not ctx.copies(reverse, topic):
                back = (
                    topic
                    if target_topic == topic
                    else f"{flow.target}/{topic} (as {flow.source}/{flow.target}{flow.prefix_separator}{topic})"
                )
                out.append(
                    Violation(
                        "replicate",
                        flow.name,
                        topic,
                        f"{flow.source}/{topic} is replicated to {flow.target}/{target_topic}, but no flow "
                        f"{flow.target} -> {flow.source} ({_selection(reverse)}) replicates {back} back: "
                        f"records written on {flow.target} would never reach {flow.source}",
                    )
                )
    return out


# --- filter ---------------------------------------------------------------------------------


def check_filter(ctx: _Ctx) -> list[Violation]:
    out = []
    for flow in ctx.flows:
        reverse = ctx.reverse(flow)
        if not reverse:
            continue
        here, there = ctx.topics(flow.source), ctx.topics(flow.target)
        names = set(here) | set(there)
        for f in (*ctx.same_direction(flow), *reverse):
            names |= {n for p in f.topics.allow if (n := literal_topic(p))}
        for topic in sorted(names):
            if topic in here or ctx.is_remote(flow, topic):
                continue  # existing on the source: the replicate rule's business
            if ctx.routers[flow.name].target_topic(topic) is None or ctx.copies(reverse, topic):
                continue
            where = f"exists only on {flow.target}" if topic in there else "exists on neither cluster yet"
            out.append(
                Violation(
                    "filter",
                    flow.name,
                    topic,
                    f"selected {flow.source} -> {flow.target} but not {flow.target} -> {flow.source}: "
                    f"the two directions select different topics ({_selection([flow])} | {_selection(reverse)}); "
                    f"{topic} {where}, and once written on {flow.source} it would be copied one way only",
                )
            )
    return out


# --- config parity --------------------------------------------------------------------------


def _policy(value: str | None) -> frozenset[str] | None:
    if value is None:
        return None
    return frozenset(p.strip() for p in value.split(",") if p.strip())


def check_config(ctx: _Ctx) -> list[Violation]:
    out = []
    seen: set[frozenset] = set()
    for flow in ctx.flows:
        router = ctx.routers[flow.name]
        targets = ctx.topics(flow.target)
        for topic, meta in sorted(ctx.topics(flow.source).items()):
            target_topic = router.target_topic(topic)
            if target_topic is None or target_topic not in targets:
                continue  # a missing target is created with the source's settings
            pair = frozenset({(flow.source, topic), (flow.target, target_topic)})
            if pair in seen:
                continue  # the reverse flow of an identity pair: reported once
            seen.add(pair)
            tmeta = targets[target_topic]
            src, dst = f"{flow.source}/{topic}", f"{flow.target}/{target_topic}"
            sp, tp = meta.get("partitions"), tmeta.get("partitions")
            if sp is not None and tp is not None and sp != tp:
                fix = (
                    "dr_topic_config_sync raises the target"
                    if tp < sp
                    else "Kafka cannot lower a partition count: raise the source's, or exclude the topic"
                )
                out.append(
                    Violation(
                        "config",
                        flow.name,
                        topic,
                        f"{src} has {sp} partitions but {dst} has {tp}: partition p must map to partition p ({fix})",
                    )
                )
            sc = (meta.get("configs") or {}).get("cleanup.policy")
            tc = (tmeta.get("configs") or {}).get("cleanup.policy")
            if _policy(sc) is not None and _policy(tc) is not None and _policy(sc) != _policy(tc):
                out.append(
                    Violation(
                        "config",
                        flow.name,
                        topic,
                        f"{src} has cleanup.policy={sc} but {dst} has cleanup.policy={tc}: "
                        f"the two copies would keep different records",
                    )
                )
    return out


# --- cascade --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Hop:
    flow: str
    source: str
    source_topic: str
    target: str
    target_topic: str


def _path_text(origin: str, topic: str, hops: tuple[_Hop, ...]) -> str:
    text = f"{origin}/{topic}"
    for h in hops:
        text += f" -[{h.flow}]-> {h.target}/{h.target_topic}"
    return text


def _journeys(ctx: _Ctx, origin: str, topic: str):
    """Follow one record written to ``origin``/``topic`` through every flow.

    Returns (arrivals: cluster -> [paths], loops: [paths], drops: [(path, hop)]).
    """
    transforms = {name: r.transform() for name, r in ctx.routers.items()}
    arrivals: dict[str, list[tuple[_Hop, ...]]] = defaultdict(list)
    loops: list[tuple[_Hop, ...]] = []
    drops: list[tuple[tuple[_Hop, ...], _Hop]] = []
    stack: list[tuple[str, str, list, tuple[_Hop, ...]]] = [(origin, topic, [], ())]
    while stack:
        cluster, t, headers, path = stack.pop()
        visited = {origin, *(h.target for h in path)}
        for flow in ctx.flows:
            if flow.source != cluster:
                continue
            t2 = ctx.routers[flow.name].target_topic(t)
            if t2 is None:
                continue
            hop = _Hop(flow.name, cluster, t, flow.target, t2)
            out = transforms[flow.name](headers, t, 0, 0, 0)
            if out is None:
                drops.append((path, hop))
                continue
            p2 = (*path, hop)
            if flow.target in visited:
                loops.append(p2)
                continue
            arrivals[flow.target].append(p2)
            stack.append((flow.target, t2, out, p2))
    return arrivals, loops, drops


def check_cascade(ctx: _Ctx) -> list[Violation]:
    out: dict[tuple[str, str, str], Violation] = {}

    def add(kind: str, hop: _Hop, message: str) -> None:
        out.setdefault((kind, hop.flow, hop.source_topic), Violation("cascade", hop.flow, hop.source_topic, message))

    for origin in sorted(ctx.metadata):
        for topic in sorted(ctx.topics(origin)):
            if not any(f.source == origin and ctx.routers[f.name].target_topic(topic) for f in ctx.flows):
                continue
            arrivals, loops, drops = _journeys(ctx, origin, topic)
            for path in loops:
                last = path[-1]
                again = (
                    "back to the cluster it was written on"
                    if last.target == origin
                    else f"through {last.target} a second time"
                )
                add(
                    "loop",
                    last,
                    f"records written to {origin}/{topic} travel {_path_text(origin, topic, path)}: {again} (a loop); "
                    f"{last.flow}'s loop policy ({_policy_text(ctx, last.flow)}) does not stop them",
                )
            for cluster, paths in sorted(arrivals.items()):
                if len(paths) < 2:
                    continue
                paths = sorted(paths, key=len)
                routes = " and ".join(_path_text(origin, topic, p) for p in paths)
                for p in paths[1:]:
                    last = p[-1]
                    why = (
                        f"{last.flow} forwards what {p[-2].flow} copied into {last.source}, "
                        f"and {_policy_text(ctx, last.flow)} does not stop it"
                        if len(p) > 1
                        else "more than one flow copies it directly"
                    )
                    add(
                        "dup",
                        last,
                        f"records written to {origin}/{topic} reach {cluster} {len(paths)} times: "
                        f"{routes} (a duplicate: {why})",
                    )
            reached = set(arrivals) | {origin}
            for path, hop in drops:
                if hop.target in reached:
                    continue
                add(
                    "gap",
                    hop,
                    f"records written to {origin}/{topic} reach {hop.source}/{hop.source_topic} "
                    f"({_path_text(origin, topic, path)}) but {hop.flow} ({_policy_text(ctx, hop.flow)}) "
                    f"does not forward them to {hop.target}/{hop.target_topic}, "
                    f"and no other flow brings them there: {hop.target} gets only part of the topic",
                )
    return list(out.values())


def _policy_text(ctx: _Ctx, flow_name: str) -> str:
    f = ctx.routers[flow_name].flow
    if f.loop_policy is LoopPolicy.PROVENANCE:
        return f"provenance/{f.provenance_rule.value}"
    return f.loop_policy.value


# --- all ------------------------------------------------------------------------------------

_CHECKS: dict[str, Callable[[_Ctx], list[Violation]]] = {
    "replicate": check_replicate,
    "filter": check_filter,
    "config": check_config,
    "cascade": check_cascade,
}


def _related_names(ctx: _Ctx, v: Violation) -> set[str]:
    """Every name the violation is about: its topic and the topic's name on the flow's target."""
    names = {v.topic}
    router = ctx.routers.get(v.flow)
    if router is not None and (t := router.target_topic(v.topic)) is not None:
        names.add(t)
    if router is not None and router.naming is not None:
        names.add(router.naming.original_topic(v.topic))
    return names


def validate(cfg: DrConfig, metadata: Metadata, rules: Iterable[str] = RULES) -> list[Violation]:
    """Run ``rules`` (all by default) and return every violation not silenced by
    ``preflight.exclude_topics``, ordered by rule, flow and topic."""
    ctx = _Ctx(cfg, metadata)
    patterns = [re.compile(p) for p in cfg.preflight.exclude_topics]
    found: list[Violation] = []
    for rule in rules:
        if rule not in _CHECKS:
            raise ValueError(f"unknown pre-flight rule {rule!r} (known: {', '.join(RULES)})")
        for v in _CHECKS[rule](ctx):
            if not any(p.fullmatch(n) for p in patterns for n in _related_names(ctx, v)):
                found.append(v)
    order = {r: i for i, r in enumerate(RULES)}
    return sorted(found, key=lambda v: (order[v.rule], v.flow, v.topic, v.message))

"""Parse the YAML config into :class:`~kafka_dr.core.config.DrConfig`, reporting every problem.

Why hand-rolled instead of a schema library: the messages are the product here. Each problem
carries its path (``flows[1].source``), what is wrong and a hint, and all of them are reported
together, so an operator fixes a config in one pass. Unknown keys are errors (a typo such as
``alow`` would otherwise silently replicate everything), and duplicate YAML keys, which
PyYAML silently overwrites, are caught with their line numbers.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from kafka_dr.core.config import (
    MAX_GROUP_SYNC_SECONDS,
    MIN_GROUP_SYNC_SECONDS,
    ConsumerGroups,
    DataQuality,
    DrConfig,
    Preflight,
    TopicConfigSync,
)
from kafka_dr.core.config_sections import (
    TOPIC_CHARS,
    check_copy_flags,
    parse_alerts,
    parse_clusters,
    parse_flows,
    parse_schedules,
    parse_schema_mirror,
    parse_spark,
    parse_thresholds,
)
from kafka_dr.core.config_security import parse_acl_sync
from kafka_dr.core.distribution import parse_tree
from kafka_dr.core.parse_context import ParseContext, Problem


class ConfigError(ValueError):
    """The config is invalid. ``problems`` lists every problem found, in file order."""

    def __init__(self, problems: list[Problem], source: str | None = None) -> None:
        self.problems = list(problems)
        self.source = source
        where = f" in {source}" if source else ""
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} problem(s){where}:\n{lines}")


# --- YAML with duplicate-key detection --------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    duplicates: list[Problem]


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # `<<: *anchor`: merged keys may be overridden, that is the point
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        try:
            hash(key)
        except TypeError:
            continue  # SafeLoader reports "found unhashable key" with its position
        if key in seen:
            loader.duplicates.append(
                Problem(
                    f"line {line}",
                    f"duplicate key {key!r} (first at line {seen[key]})",
                    "names must be unique; the later one would silently win",
                )
            )
        else:
            seen[key] = line
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_config(path: str | Path) -> DrConfig:
    """Read and parse a config file. Raises :class:`ConfigError` listing every problem."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError([Problem(str(p), f"cannot read the config file: {e.strerror}")], str(p)) from None
    return parse_config_text(text, source=str(p))


def parse_config_text(text: str, source: str | None = None) -> DrConfig:
    loader = _StrictLoader(text)
    loader.duplicates = []
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(document)"
        raise ConfigError([Problem(where, f"not valid YAML: {getattr(e, 'problem', e)}")], source) from None
    finally:
        loader.dispose()
    return parse_config(data, source=source, _pre=loader.duplicates)


# --- the parser ---------------------------------------------------------------------------

TOP_KEYS = {
    "clusters",
    "flows",
    "schedules",
    "thresholds",
    "alerts",
    "spark",
    "schema_mirror",
    "distribution",
    "internal_prefix",
    "topic_config",
    "preflight",
    "consumer_groups",
    "data_quality",
    "acl_sync",
}


def parse_config(data: Any, source: str | None = None, _pre: list[Problem] | None = None) -> DrConfig:
    """Build a :class:`DrConfig` from plain data (as loaded from YAML)."""
    ctx = ParseContext()
    ctx.problems.extend(_pre or [])
    top = ctx.mapping(data, "", TOP_KEYS, required={"clusters", "flows"})

    internal_prefix = ctx.typed(top.get("internal_prefix"), "internal_prefix", str, "_kafka_dr")
    if not TOPIC_CHARS.match(internal_prefix):
        ctx.err(
            "internal_prefix",
            f"bad prefix {internal_prefix!r}",
            "a non-empty topic-name prefix: letters, digits, '.', '_', '-'",
        )
        internal_prefix = "_kafka_dr"
    clusters = parse_clusters(ctx, top.get("clusters"))
    flows = parse_flows(ctx, top.get("flows"), clusters, internal_prefix)
    schedules = parse_schedules(ctx, top.get("schedules"))
    thresholds = parse_thresholds(ctx, top.get("thresholds"))
    alerts = parse_alerts(ctx, top.get("alerts"))
    spark = parse_spark(ctx, top.get("spark"))
    tc = ctx.mapping(top.get("topic_config"), "topic_config", {"exclude"})
    topic_config = TopicConfigSync(exclude=ctx.patterns(tc.get("exclude"), "topic_config.exclude", ()))
    pf = ctx.mapping(top.get("preflight"), "preflight", {"exclude_topics"})
    preflight = Preflight(exclude_topics=ctx.patterns(pf.get("exclude_topics"), "preflight.exclude_topics", ()))
    cg = ctx.mapping(top.get("consumer_groups"), "consumer_groups", {"allow", "deny", "sync_interval_seconds"})
    where = "consumer_groups.sync_interval_seconds"
    interval = ctx.typed(cg.get("sync_interval_seconds"), where, float, 5.0, "a number")
    if not MIN_GROUP_SYNC_SECONDS <= interval <= MAX_GROUP_SYNC_SECONDS:
        ctx.err(
            where,
            f"must be between {MIN_GROUP_SYNC_SECONDS:g} and {MAX_GROUP_SYNC_SECONDS:g} seconds, got {interval:g}",
        )
    consumer_groups = ConsumerGroups(
        allow=ctx.patterns(cg.get("allow"), "consumer_groups.allow", (".*",), "group name"),
        deny=ctx.patterns(cg.get("deny"), "consumer_groups.deny", (), "group name"),
        sync_interval_seconds=interval,
    )
    dq = ctx.mapping(top.get("data_quality"), "data_quality", {"dir", "incremental", "full_sweep_hours"})
    sweep = ctx.typed(dq.get("full_sweep_hours"), "data_quality.full_sweep_hours", float, 24.0, "a number")
    if sweep < 0:
        ctx.err("data_quality.full_sweep_hours", f"must not be negative, got {sweep}")
    data_quality = DataQuality(
        dir=ctx.typed(dq.get("dir"), "data_quality.dir", str),
        incremental=ctx.typed(dq.get("incremental"), "data_quality.incremental", bool, True, "true or false"),
        full_sweep_hours=sweep,
    )
    acl_sync = parse_acl_sync(ctx, top.get("acl_sync"), clusters)
    schema_mirror = parse_schema_mirror(ctx, top.get("schema_mirror"), clusters)
    distribution = None
    if "distribution" in top:
        dist = ctx.mapping(top["distribution"], "distribution", {"tree"}, required={"tree"})
        if "tree" in dist:
            distribution, tree_problems = parse_tree(dist["tree"])
            for msg in tree_problems:
                ctx.err("distribution." + msg.split(":", 1)[0], msg.split(":", 1)[1].strip())
            if distribution is not None:
                unknown = sorted(distribution.clusters - set(clusters))
                for name in unknown:
                    ctx.err("distribution.tree", f"unknown cluster {name!r}", f"known: {', '.join(clusters) or 'none'}")
                if unknown:
                    distribution = None
    if distribution is not None or "distribution" not in top:
        # a tree that is there but broken is reported above; checking flows against it
        # would only add noise ("needs a distribution tree", coverage of a typo)
        check_copy_flags(ctx, flows, distribution)

    if ctx.problems:
        raise ConfigError(ctx.problems, source)
    return DrConfig(
        clusters=MappingProxyType(clusters),
        flows=tuple(flows),
        schedules=schedules,
        thresholds=thresholds,
        alerts=alerts,
        spark=spark,
        schema_mirror=schema_mirror,
        topic_config=topic_config,
        preflight=preflight,
        consumer_groups=consumer_groups,
        data_quality=data_quality,
        acl_sync=acl_sync,
        distribution=distribution,
        internal_prefix=internal_prefix,
        source_path=source,
    )

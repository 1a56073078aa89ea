"""Parse the YAML config into :class:`~kafka_dr.core.config.DrConfig`, reporting every problem.

Why hand-rolled instead of a schema library: the messages are the product here. Each problem
carries its path (``flows[1].source``), what is wrong and a hint, and all of them are reported
together, so an operator fixes a config in one pass. Unknown keys are errors (a typo such as
``alow`` would otherwise silently replicate everything), and duplicate YAML keys, which
PyYAML silently overwrites, are caught with their line numbers.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from kafka_dr.core.config import (
    BUILTIN_INTERNAL_PATTERNS,
    Alerts,
    ClusterConfig,
    ConsumerGroups,
    DataQuality,
    DrConfig,
    EmailAlert,
    FlowConfig,
    FlowMode,
    LoopPolicy,
    Preflight,
    ProvenanceRule,
    SchemaMirrorConfig,
    SchemaRegistryConfig,
    Schedules,
    SparkConfig,
    Thresholds,
    TopicConfigSync,
    TopicSelection,
    WebhookAlert,
)
from kafka_dr.core.distribution import parse_tree
from kafka_dr.core.secret_refs import SecretRef, is_secret_key, parse_ref

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,62}$")
_CRON_PRESETS = {"@once", "@hourly", "@daily", "@weekly", "@monthly", "@quarterly", "@yearly", "@continuous"}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
#: (lowest, highest, names numbered from lowest) per cron field: minute hour day month weekday
_CRON_FIELDS = ((0, 59, ()), (0, 23, ()), (1, 31, ()), (1, 12, _MONTHS), (0, 7, _DAYS))
_TOPIC_CHARS = re.compile(r"^[A-Za-z0-9._-]+$")
_REF_LIKE = re.compile(r"\s*\$\{.*\}\s*")  #: what parse_ref accepts, and its typos
_REF_HINT = "${env:NAME}, ${airflow:CONN_ID} or ${airflow:CONN_ID.FIELD}"


def _cron_ok(expr: str) -> bool:
    """A five-field cron expression as croniter (Airflow's parser) accepts it."""
    fields = expr.split()
    return len(fields) == 5 and all(
        _cron_item_ok(item, i, *_CRON_FIELDS[i]) for i, field in enumerate(fields) for item in field.lower().split(",")
    )


def _cron_item_ok(item: str, index: int, lo: int, hi: int, names: tuple[str, ...]) -> bool:
    if index == 2 and re.fullmatch(r"l|\d{1,2}w", item):  # last day / nearest weekday
        return item == "l" or lo <= int(item[:-1]) <= hi
    if index == 4 and re.fullmatch(r"([0-7]|[a-z]{3})#[1-5]", item):  # n-th weekday of the month
        return _cron_value(item.split("#")[0], lo, hi, names) is not None
    base, slash, step = item.partition("/")
    if slash and not (step.isdigit() and int(step) > 0):
        return False
    if base == "*" or (base == "?" and index in (2, 4) and not slash):
        return True
    first, dash, last = base.partition("-")
    return all(_cron_value(v, lo, hi, names) is not None for v in ((first, last) if dash else (first,)))


def _cron_value(text: str, lo: int, hi: int, names: tuple[str, ...]) -> int | None:
    value = names.index(text) + lo if text in names else int(text) if text.isdigit() else None
    return value if value is not None and lo <= value <= hi else None


@dataclass(frozen=True)
class Problem:
    path: str
    message: str
    hint: str | None = None

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" + (f" (hint: {self.hint})" if self.hint else "")


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
                Problem(f"line {line}", f"duplicate key {key!r} (first at line {seen[key]})", "names must be unique; the later one would silently win")
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


class _Ctx:
    """Collects problems while walking the document."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def err(self, path: str, message: str, hint: str | None = None) -> None:
        self.problems.append(Problem(path, message, hint))

    def mapping(self, value: Any, path: str, allowed: set[str], required: set[str] = frozenset()) -> dict:
        if value is None:
            value = {}
        if not isinstance(value, dict):
            self.err(path or "config", f"expected a mapping, got {type(value).__name__}")
            return {}
        prefix = f"{path}." if path else ""
        for key in value:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), sorted(allowed), n=1)
                self.err(f"{prefix}{key}", "unknown key", f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(sorted(allowed))}")
        for key in sorted(required - set(value)):
            self.err(f"{prefix}{key}", "missing required key")
        return value

    def typed(self, value: Any, path: str, kind: type | tuple, default: Any = None, what: str | None = None) -> Any:
        if value is None:
            return default
        if kind in (int, float) and isinstance(value, bool):
            self.err(path, f"expected {what or kind.__name__}, got a boolean")
            return default
        if kind is float and isinstance(value, int):
            return float(value)
        if not isinstance(value, kind):
            self.err(path, f"expected {what or getattr(kind, '__name__', kind)}, got {type(value).__name__} {value!r}")
            return default
        return value

    def enum(self, value: Any, path: str, enum_cls: type, default: Any) -> Any:
        if value is None:
            return default
        try:
            return enum_cls(value)
        except ValueError:
            choices = ", ".join(e.value for e in enum_cls)
            self.err(path, f"unknown value {value!r}", f"one of: {choices}")
            return default

    def patterns(self, value: Any, path: str, default: tuple[str, ...], what: str = "topic name") -> tuple[str, ...]:
        if value is None:
            return default
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            self.err(path, "expected a list of regular expressions")
            return default
        out = []
        for i, pat in enumerate(value):
            if not isinstance(pat, str):
                self.err(f"{path}[{i}]", f"expected a regular expression string, got {type(pat).__name__}")
                continue
            try:
                re.compile(pat)
            except re.error as e:
                self.err(f"{path}[{i}]", f"bad regular expression {pat!r}: {e}", f"patterns are Python regexes matched against the whole {what}")
                continue
            out.append(pat)
        return tuple(out)

    def schedule(self, value: Any, path: str, default: str | None) -> str | None:
        if value is None:
            return default
        if value in ("none", "None", "manual"):
            return None
        if not isinstance(value, str):
            self.err(path, f"expected a cron expression or preset, got {type(value).__name__}")
            return default
        v = value.strip()
        if v in _CRON_PRESETS:
            return v
        if not _cron_ok(v):
            self.err(path, f"not a cron expression: {value!r}", "five fields like '*/5 * * * *', a preset like '@hourly', or 'none'")
            return default
        return v


_TOP_KEYS = {"clusters", "flows", "schedules", "thresholds", "alerts", "spark", "schema_mirror", "distribution", "internal_prefix",
             "topic_config", "preflight", "consumer_groups", "data_quality"}
_CLUSTER_KEYS = {"bootstrap_servers", "client", "connection", "cluster_id", "schema_registry"}
_FLOW_KEYS = {
    "name", "source", "target", "topics", "loop_policy", "provenance_rule", "prefix_separator",
    "mode", "schedule", "max_duration_seconds", "topic_refresh_seconds", "dead_letter_topic", "enabled",
}


def parse_config(data: Any, source: str | None = None, _pre: list[Problem] | None = None) -> DrConfig:
    """Build a :class:`DrConfig` from plain data (as loaded from YAML)."""
    ctx = _Ctx()
    ctx.problems.extend(_pre or [])
    top = ctx.mapping(data, "", _TOP_KEYS, required={"clusters", "flows"})

    internal_prefix = ctx.typed(top.get("internal_prefix"), "internal_prefix", str, "_kafka_dr")
    if not _TOPIC_CHARS.match(internal_prefix):
        ctx.err("internal_prefix", f"bad prefix {internal_prefix!r}", "a non-empty topic-name prefix: letters, digits, '.', '_', '-'")
        internal_prefix = "_kafka_dr"
    clusters = _clusters(ctx, top.get("clusters"))
    flows = _flows(ctx, top.get("flows"), clusters, internal_prefix)
    schedules = _schedules(ctx, top.get("schedules"))
    thresholds = _thresholds(ctx, top.get("thresholds"))
    alerts = _alerts(ctx, top.get("alerts"))
    spark = _spark(ctx, top.get("spark"))
    tc = ctx.mapping(top.get("topic_config"), "topic_config", {"exclude"})
    topic_config = TopicConfigSync(exclude=ctx.patterns(tc.get("exclude"), "topic_config.exclude", ()))
    pf = ctx.mapping(top.get("preflight"), "preflight", {"exclude_topics"})
    preflight = Preflight(exclude_topics=ctx.patterns(pf.get("exclude_topics"), "preflight.exclude_topics", ()))
    cg = ctx.mapping(top.get("consumer_groups"), "consumer_groups", {"allow", "deny"})
    consumer_groups = ConsumerGroups(allow=ctx.patterns(cg.get("allow"), "consumer_groups.allow", (".*",), "group name"),
                                     deny=ctx.patterns(cg.get("deny"), "consumer_groups.deny", (), "group name"))
    dq = ctx.mapping(top.get("data_quality"), "data_quality", {"dir"})
    data_quality = DataQuality(dir=ctx.typed(dq.get("dir"), "data_quality.dir", str))
    schema_mirror = _schema_mirror(ctx, top.get("schema_mirror"), clusters)
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
        _check_copy_flags(ctx, flows, distribution)

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
        distribution=distribution,
        internal_prefix=internal_prefix,
        source_path=source,
    )


def _clusters(ctx: _Ctx, raw: Any) -> dict[str, ClusterConfig]:
    out: dict[str, ClusterConfig] = {}
    if raw is None:
        return out
    if not isinstance(raw, dict) or not raw:
        ctx.err("clusters", "expected a non-empty mapping of cluster name to settings", "clusters: {east: {bootstrap_servers: ...}}")
        return out
    for name, body in raw.items():
        path = f"clusters.{name}"
        if not isinstance(name, str) or not _NAME.match(name):
            ctx.err(path, f"bad cluster name {name!r}", "letters, digits, '_' and '-', starting with a letter")
            continue
        c = ctx.mapping(body, path, _CLUSTER_KEYS, required={"bootstrap_servers"})
        bootstrap = ctx.typed(c.get("bootstrap_servers"), f"{path}.bootstrap_servers", str, "")
        if "bootstrap_servers" in c and isinstance(c["bootstrap_servers"], (str, type(None))) and not (bootstrap or "").strip():
            ctx.err(f"{path}.bootstrap_servers", "must not be empty", "host:port[,host:port...]")
        client = _client_settings(ctx, c.get("client"), f"{path}.client")
        connection = ctx.typed(c.get("connection"), f"{path}.connection", str)
        if connection:
            # sugar: the SASL credentials come from the Airflow connection unless set here
            client.setdefault("sasl.username", SecretRef("airflow", f"{connection}.login"))
            client.setdefault("sasl.password", SecretRef("airflow", connection))
        sr = ctx.mapping(c.get("schema_registry"), f"{path}.schema_registry", {"url", "topic"})
        out[name] = ClusterConfig(
            name=name,
            bootstrap_servers=(bootstrap or "").strip(),
            client=MappingProxyType(client),
            connection=connection,
            cluster_id=ctx.typed(c.get("cluster_id"), f"{path}.cluster_id", str),
            schema_registry=SchemaRegistryConfig(
                url=ctx.typed(sr.get("url"), f"{path}.schema_registry.url", str),
                topic=ctx.typed(sr.get("topic"), f"{path}.schema_registry.topic", str, "_schemas"),
            ),
        )
    return out


def _client_settings(ctx: _Ctx, raw: Any, path: str) -> dict[str, str | SecretRef]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        ctx.err(path, "expected a mapping of librdkafka settings")
        return {}
    out: dict[str, str | SecretRef] = {}
    for key, value in raw.items():
        kpath = f"{path}.{key}"
        if not isinstance(key, str):
            ctx.err(kpath, "expected a setting name (a string)")
            continue
        if key in ("bootstrap.servers", "metadata.broker.list"):
            ctx.err(kpath, "set the cluster's bootstrap_servers instead", "one place for the address avoids two disagreeing")
            continue
        ref = parse_ref(value)
        if ref is not None:
            out[key] = ref
        elif isinstance(value, str) and _REF_LIKE.fullmatch(value):
            # e.g. ${evn:X} or ${vault:X}: taken literally it would be a wrong password
            ctx.err(kpath, "looks like a secret reference but is not one", _REF_HINT)
        elif isinstance(value, (dict, list)) or value is None:
            ctx.err(kpath, "expected a scalar value")
        elif is_secret_key(key) and isinstance(value, str) and value:
            # Literal secrets are allowed (the lab uses them) but never echoed back.
            out[key] = value
        else:
            out[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def _flows(ctx: _Ctx, raw: Any, clusters: dict[str, ClusterConfig], internal_prefix: str) -> list[FlowConfig]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        ctx.err("flows", "expected a list of flows", "flows: [{source: east, target: west}]")
        return []
    known = ", ".join(clusters) or "none"
    flows: list[FlowConfig] = []
    names: dict[str, int] = {}
    pairs: dict[tuple[str, str], int] = {}
    internal = BUILTIN_INTERNAL_PATTERNS + (re.escape(internal_prefix) + r".*",)
    for i, body in enumerate(raw):
        path = f"flows[{i}]"
        f = ctx.mapping(body, path, _FLOW_KEYS, required={"source", "target"})
        source = ctx.typed(f.get("source"), f"{path}.source", str)
        target = ctx.typed(f.get("target"), f"{path}.target", str)
        for role, value in (("source", source), ("target", target)):
            if value is not None and value not in clusters:
                close = difflib.get_close_matches(value, list(clusters), n=1)
                ctx.err(f"{path}.{role}", f"unknown cluster {value!r} (known: {known})", f"did you mean {close[0]!r}?" if close else None)
        if source is not None and source == target:
            ctx.err(path, f"source and target are both {source!r}", "a flow copies between two different clusters")
        name = ctx.typed(f.get("name"), f"{path}.name", str) or (f"{source}_to_{target}" if source and target else f"flow{i}")
        if not _NAME.match(name):
            ctx.err(f"{path}.name", f"bad flow name {name!r}", "letters, digits, '_' and '-', starting with a letter")
        if source and target and (source, target) in pairs and "name" not in f:
            ctx.err(path, f"second flow {source} -> {target} (also flows[{pairs[(source, target)]}])", "merge their topic selections, or name both flows")
        elif name in names:
            ctx.err(f"{path}.name", f"duplicate flow name {name!r} (also flows[{names[name]}])", "give each flow a unique name")
        names.setdefault(name, i)
        if source and target:
            pairs.setdefault((source, target), i)

        t = ctx.mapping(f.get("topics"), f"{path}.topics", {"allow", "deny"})
        topics = TopicSelection(
            allow=ctx.patterns(t.get("allow"), f"{path}.topics.allow", (".*",)),
            deny=ctx.patterns(t.get("deny"), f"{path}.topics.deny", ()),
            internal=internal,
        )
        loop_policy = ctx.enum(f.get("loop_policy"), f"{path}.loop_policy", LoopPolicy, LoopPolicy.PROVENANCE)
        rule = ctx.enum(f.get("provenance_rule"), f"{path}.provenance_rule", ProvenanceRule, ProvenanceRule.NOT_TO_ORIGIN)
        if "provenance_rule" in f and loop_policy is not LoopPolicy.PROVENANCE:
            ctx.err(f"{path}.provenance_rule", f"only applies to loop_policy 'provenance', not {loop_policy.value!r}")
        sep = ctx.typed(f.get("prefix_separator"), f"{path}.prefix_separator", str, ".")
        if not sep or re.search(r"[^A-Za-z0-9._-]", sep):
            ctx.err(f"{path}.prefix_separator", f"bad separator {sep!r}", "a non-empty string of characters legal in topic names: letters, digits, '.', '_', '-'")
        mode = ctx.enum(f.get("mode"), f"{path}.mode", FlowMode, FlowMode.CONTINUOUS)
        schedule = ctx.schedule(f.get("schedule"), f"{path}.schedule", "*/5 * * * *" if mode is FlowMode.INCREMENTAL else None)
        max_dur = ctx.typed(f.get("max_duration_seconds"), f"{path}.max_duration_seconds", int)
        refresh = ctx.typed(f.get("topic_refresh_seconds"), f"{path}.topic_refresh_seconds", int, 30)
        for key, value in (("max_duration_seconds", max_dur), ("topic_refresh_seconds", refresh)):
            if value is not None and value <= 0:
                ctx.err(f"{path}.{key}", f"must be positive, got {value}")
        flows.append(
            FlowConfig(
                name=name,
                source=source or "",
                target=target or "",
                topics=topics,
                loop_policy=loop_policy,
                provenance_rule=rule,
                prefix_separator=sep,
                mode=mode,
                schedule=schedule,
                max_duration_seconds=max_dur,
                topic_refresh_seconds=refresh,
                dead_letter_topic=ctx.typed(f.get("dead_letter_topic"), f"{path}.dead_letter_topic", str),
                enabled=ctx.typed(f.get("enabled"), f"{path}.enabled", bool, True),
            )
        )
    _check_policy_mix(ctx, flows)
    return flows


def _check_policy_mix(ctx: _Ctx, flows: list[FlowConfig]) -> None:
    """Two flows between the same pair must agree on the loop policy.

    A ``prefix`` flow one way and a ``provenance`` flow back would copy the remote topic
    back under the original name with no header to stop it: a loop.
    """
    for i, a in enumerate(flows):
        for j, b in enumerate(flows[i + 1 :], start=i + 1):
            if (a.source, a.target) == (b.target, b.source) and a.loop_policy is not b.loop_policy:
                ctx.err(
                    f"flows[{j}].loop_policy",
                    f"{b.loop_policy.value!r} contradicts flows[{i}] ({a.source} -> {a.target}, {a.loop_policy.value!r})",
                    "both directions between two clusters must use the same loop policy",
                )


def _check_copy_flags(ctx: _Ctx, flows: list[FlowConfig], tree: Any) -> None:
    cf = [(i, f) for i, f in enumerate(flows) if f.loop_policy is LoopPolicy.COPY_FLAGS]
    if not cf:
        return
    if tree is None:
        ctx.err(f"flows[{cf[0][0]}].loop_policy", "copy_flags needs a distribution tree", "add distribution: {tree: [[east, west], [north, south]]}")
        return
    for i, f in cf:
        outside = [(role, c) for role, c in (("source", f.source), ("target", f.target)) if c and c not in tree.clusters]
        for role, c in outside:
            ctx.err(f"flows[{i}].{role}", f"cluster {c!r} is not in the distribution tree", "add it to distribution.tree, or use another loop_policy")
        if not outside and tree.level_between(f.source, f.target) is None:
            ctx.err(f"flows[{i}]", f"{f.source} and {f.target} are not on different sides of any level of the distribution tree")
    for msg in tree.coverage_problems([(f.source, f.target) for _, f in cf]):
        ctx.err("distribution.tree", msg)


def _schedules(ctx: _Ctx, raw: Any) -> Schedules:
    defaults = Schedules()
    keys = set(defaults.__dataclass_fields__)
    s = ctx.mapping(raw, "schedules", keys)
    return Schedules(**{k: ctx.schedule(s[k], f"schedules.{k}", getattr(defaults, k)) if k in s else getattr(defaults, k) for k in keys})


def _thresholds(ctx: _Ctx, raw: Any) -> Thresholds:
    defaults = Thresholds()
    fields = defaults.__dataclass_fields__
    t = ctx.mapping(raw, "thresholds", set(fields))
    values = {}
    for key, f in fields.items():
        kind = int if f.type in ("int", int) else float
        v = ctx.typed(t.get(key), f"thresholds.{key}", kind, getattr(defaults, key), what="an integer" if kind is int else "a number")
        if v is not None and v < 0:
            ctx.err(f"thresholds.{key}", f"must not be negative, got {v}")
        values[key] = v
    return Thresholds(**values)


def _alerts(ctx: _Ctx, raw: Any) -> Alerts:
    a = ctx.mapping(raw, "alerts", {"email", "webhook"})
    email = None
    if a.get("email") is not None:
        e = ctx.mapping(a["email"], "alerts.email", {"smtp_host", "smtp_port", "from", "to", "username", "password", "starttls"}, required={"smtp_host", "to"})
        to = e.get("to")
        to = [to] if isinstance(to, str) else to
        if to is not None and (not isinstance(to, list) or not all(isinstance(x, str) and "@" in x for x in to)):
            ctx.err("alerts.email.to", "expected one or more e-mail addresses")
            to = []
        password = e.get("password")
        if isinstance(password, str) and _REF_LIKE.fullmatch(password) and parse_ref(password) is None:
            ctx.err("alerts.email.password", "looks like a secret reference but is not one", _REF_HINT)
        email = EmailAlert(
            smtp_host=ctx.typed(e.get("smtp_host"), "alerts.email.smtp_host", str, ""),
            smtp_port=ctx.typed(e.get("smtp_port"), "alerts.email.smtp_port", int, 25),
            sender=ctx.typed(e.get("from"), "alerts.email.from", str, "kafka-dr@localhost"),
            to=tuple(to or ()),
            username=ctx.typed(e.get("username"), "alerts.email.username", str),
            password=parse_ref(password) or (str(password) if password is not None else None),
            starttls=ctx.typed(e.get("starttls"), "alerts.email.starttls", bool, False),
        )
    webhook = None
    if a.get("webhook") is not None:
        w = ctx.mapping(a["webhook"], "alerts.webhook", {"url"}, required={"url"})
        url = ctx.typed(w.get("url"), "alerts.webhook.url", str, "")
        if url and not re.match(r"^https?://", url):
            ctx.err("alerts.webhook.url", "not an http(s) URL", "https://...; the value is not shown, webhook URLs often carry a token")
        webhook = WebhookAlert(url=url)
    return Alerts(email=email, webhook=webhook)


def _spark(ctx: _Ctx, raw: Any) -> SparkConfig:
    s = ctx.mapping(raw, "spark", {"master", "connection", "conf"})
    conf = ctx.mapping(s.get("conf"), "spark.conf", set(s.get("conf") or {}) if isinstance(s.get("conf"), dict) else set())
    return SparkConfig(
        master=ctx.typed(s.get("master"), "spark.master", str, "local[*]"),
        connection=ctx.typed(s.get("connection"), "spark.connection", str, "kafka_dr_spark"),
        conf=MappingProxyType({str(k): str(v) for k, v in conf.items()}),
    )


def _schema_mirror(ctx: _Ctx, raw: Any, clusters: dict[str, ClusterConfig]) -> SchemaMirrorConfig | None:
    if raw is None:
        return None
    s = ctx.mapping(raw, "schema_mirror", {"primary", "targets", "subject_template"}, required={"primary"})
    primary = ctx.typed(s.get("primary"), "schema_mirror.primary", str, "")
    if primary and primary not in clusters:
        ctx.err("schema_mirror.primary", f"unknown cluster {primary!r} (known: {', '.join(clusters)})")
    targets = s.get("targets")
    if targets is None:
        targets = [c for c in clusters if c != primary]
    if not isinstance(targets, list):
        ctx.err("schema_mirror.targets", "expected a list of cluster names")
        targets = []
    for i, t in enumerate(targets):
        if not isinstance(t, str):
            ctx.err(f"schema_mirror.targets[{i}]", "expected a cluster name")
        elif t not in clusters:
            ctx.err(f"schema_mirror.targets[{i}]", f"unknown cluster {t!r} (known: {', '.join(clusters)})")
        elif t == primary:
            ctx.err(f"schema_mirror.targets[{i}]", f"{t!r} is the primary", "the primary is the source, not a target")
    template = ctx.typed(s.get("subject_template"), "schema_mirror.subject_template", str, "{subject}")
    if "{subject}" not in template:
        ctx.err("schema_mirror.subject_template", f"{template!r} does not contain '{{subject}}'", "e.g. 'dr-{subject}'")
    return SchemaMirrorConfig(primary=primary, targets=tuple(targets), subject_template=template)


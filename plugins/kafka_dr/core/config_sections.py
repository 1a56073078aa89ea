"""The config's sections, each parsed into its frozen model with every problem reported
through the :class:`~kafka_dr.core.parse_context.ParseContext` (``flows[1].source: ...``).
"""

from __future__ import annotations

import difflib
import re
from types import MappingProxyType
from typing import Any

from kafka_dr.core.config import (
    BUILTIN_INTERNAL_PATTERNS,
    DRIVER_COPY_MAX_RECORDS,
    Alerts,
    ClusterConfig,
    EmailAlert,
    FlowConfig,
    FlowMode,
    LoopPolicy,
    ProvenanceRule,
    Schedules,
    SchemaMirrorConfig,
    SchemaRegistryConfig,
    SparkConfig,
    Thresholds,
    TopicSelection,
    WebhookAlert,
)
from kafka_dr.core.parse_context import ParseContext
from kafka_dr.core.secret_refs import SecretRef, is_secret_key, parse_ref

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,62}$")
TOPIC_CHARS = re.compile(r"^[A-Za-z0-9._-]+$")
_REF_LIKE = re.compile(r"\s*\$\{.*\}\s*")  #: what parse_ref accepts, and its typos
_REF_HINT = "${env:NAME}, ${airflow:CONN_ID} or ${airflow:CONN_ID.FIELD}"
CLUSTER_KEYS = {"bootstrap_servers", "client", "connection", "cluster_id", "schema_registry"}
FLOW_KEYS = {
    "name",
    "source",
    "target",
    "topics",
    "loop_policy",
    "provenance_rule",
    "prefix_separator",
    "mode",
    "schedule",
    "max_duration_seconds",
    "topic_refresh_seconds",
    "transaction_timeout_seconds",
    "dead_letter_topic",
    "enabled",
}


def parse_clusters(ctx: ParseContext, raw: Any) -> dict[str, ClusterConfig]:
    out: dict[str, ClusterConfig] = {}
    if raw is None:
        return out
    if not isinstance(raw, dict) or not raw:
        ctx.err(
            "clusters",
            "expected a non-empty mapping of cluster name to settings",
            "clusters: {east: {bootstrap_servers: ...}}",
        )
        return out
    for name, body in raw.items():
        path = f"clusters.{name}"
        if not isinstance(name, str) or not NAME.match(name):
            ctx.err(path, f"bad cluster name {name!r}", "letters, digits, '_' and '-', starting with a letter")
            continue
        c = ctx.mapping(body, path, CLUSTER_KEYS, required={"bootstrap_servers"})
        bootstrap = ctx.typed(c.get("bootstrap_servers"), f"{path}.bootstrap_servers", str, "")
        if (
            "bootstrap_servers" in c
            and isinstance(c["bootstrap_servers"], (str, type(None)))
            and not (bootstrap or "").strip()
        ):
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


def _client_settings(ctx: ParseContext, raw: Any, path: str) -> dict[str, str | SecretRef]:
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
            ctx.err(
                kpath, "set the cluster's bootstrap_servers instead", "one place for the address avoids two disagreeing"
            )
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


def parse_flows(
    ctx: ParseContext, raw: Any, clusters: dict[str, ClusterConfig], internal_prefix: str
) -> list[FlowConfig]:
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
        f = ctx.mapping(body, path, FLOW_KEYS, required={"source", "target"})
        source = ctx.typed(f.get("source"), f"{path}.source", str)
        target = ctx.typed(f.get("target"), f"{path}.target", str)
        for role, value in (("source", source), ("target", target)):
            if value is not None and value not in clusters:
                close = difflib.get_close_matches(value, list(clusters), n=1)
                ctx.err(
                    f"{path}.{role}",
                    f"unknown cluster {value!r} (known: {known})",
                    f"did you mean {close[0]!r}?" if close else None,
                )
        if source is not None and source == target:
            ctx.err(path, f"source and target are both {source!r}", "a flow copies between two different clusters")
        name = ctx.typed(f.get("name"), f"{path}.name", str) or (
            f"{source}_to_{target}" if source and target else f"flow{i}"
        )
        if not NAME.match(name):
            ctx.err(f"{path}.name", f"bad flow name {name!r}", "letters, digits, '_' and '-', starting with a letter")
        if source and target and (source, target) in pairs and "name" not in f:
            ctx.err(
                path,
                f"second flow {source} -> {target} (also flows[{pairs[(source, target)]}])",
                "merge their topic selections, or name both flows",
            )
        elif name in names:
            ctx.err(
                f"{path}.name",
                f"duplicate flow name {name!r} (also flows[{names[name]}])",
                "give each flow a unique name",
            )
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
        rule = ctx.enum(
            f.get("provenance_rule"), f"{path}.provenance_rule", ProvenanceRule, ProvenanceRule.NOT_TO_ORIGIN
        )
        if "provenance_rule" in f and loop_policy is not LoopPolicy.PROVENANCE:
            ctx.err(f"{path}.provenance_rule", f"only applies to loop_policy 'provenance', not {loop_policy.value!r}")
        sep = ctx.typed(f.get("prefix_separator"), f"{path}.prefix_separator", str, ".")
        if not sep or re.search(r"[^A-Za-z0-9._-]", sep):
            ctx.err(
                f"{path}.prefix_separator",
                f"bad separator {sep!r}",
                "a non-empty string of characters legal in topic names: letters, digits, '.', '_', '-'",
            )
        mode = ctx.enum(f.get("mode"), f"{path}.mode", FlowMode, FlowMode.CONTINUOUS)
        schedule = ctx.schedule(
            f.get("schedule"), f"{path}.schedule", "*/5 * * * *" if mode is FlowMode.INCREMENTAL else None
        )
        max_dur = ctx.typed(f.get("max_duration_seconds"), f"{path}.max_duration_seconds", int)
        refresh = ctx.typed(f.get("topic_refresh_seconds"), f"{path}.topic_refresh_seconds", int, 30)
        txn = ctx.typed(f.get("transaction_timeout_seconds"), f"{path}.transaction_timeout_seconds", int, 60)
        for key, value in (
            ("max_duration_seconds", max_dur),
            ("topic_refresh_seconds", refresh),
            ("transaction_timeout_seconds", txn),
        ):
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
                transaction_timeout_seconds=txn,
                dead_letter_topic=ctx.typed(f.get("dead_letter_topic"), f"{path}.dead_letter_topic", str),
                enabled=ctx.typed(f.get("enabled"), f"{path}.enabled", bool, True),
            )
        )
    _check_policy_mix(ctx, flows)
    return flows


def _check_policy_mix(ctx: ParseContext, flows: list[FlowConfig]) -> None:
    """Two flows between the same pair must agree on the loop policy.

    A ``prefix`` flow one way and a ``provenance`` flow back would copy the remote topic
    back under the original name with no header to stop it: a loop.
    """
    for i, a in enumerate(flows):
        for j, b in enumerate(flows[i + 1 :], start=i + 1):
            if (a.source, a.target) == (b.target, b.source) and a.loop_policy is not b.loop_policy:
                ctx.err(
                    f"flows[{j}].loop_policy",
                    f"{b.loop_policy.value!r} contradicts flows[{i}] "
                    f"({a.source} -> {a.target}, {a.loop_policy.value!r})",
                    "both directions between two clusters must use the same loop policy",
                )


def check_copy_flags(ctx: ParseContext, flows: list[FlowConfig], tree: Any) -> None:
    cf = [(i, f) for i, f in enumerate(flows) if f.loop_policy is LoopPolicy.COPY_FLAGS]
    if not cf:
        return
    if tree is None:
        ctx.err(
            f"flows[{cf[0][0]}].loop_policy",
            "copy_flags needs a distribution tree",
            "add distribution: {tree: [[east, west], [north, south]]}",
        )
        return
    for i, f in cf:
        outside = [
            (role, c) for role, c in (("source", f.source), ("target", f.target)) if c and c not in tree.clusters
        ]
        for role, c in outside:
            ctx.err(
                f"flows[{i}].{role}",
                f"cluster {c!r} is not in the distribution tree",
                "add it to distribution.tree, or use another loop_policy",
            )
        if not outside and tree.level_between(f.source, f.target) is None:
            ctx.err(
                f"flows[{i}]",
                f"{f.source} and {f.target} are not on different sides of any level of the distribution tree",
            )
    for msg in tree.coverage_problems([(f.source, f.target) for _, f in cf]):
        ctx.err("distribution.tree", msg)


def parse_schedules(ctx: ParseContext, raw: Any) -> Schedules:
    defaults = Schedules()
    keys = set(defaults.__dataclass_fields__)
    s = ctx.mapping(raw, "schedules", keys)
    return Schedules(
        **{
            k: ctx.schedule(s[k], f"schedules.{k}", getattr(defaults, k)) if k in s else getattr(defaults, k)
            for k in keys
        }
    )


def parse_thresholds(ctx: ParseContext, raw: Any) -> Thresholds:
    defaults = Thresholds()
    fields = defaults.__dataclass_fields__
    t = ctx.mapping(raw, "thresholds", set(fields))
    values = {}
    for key, f in fields.items():
        kind = int if f.type in ("int", int) else float
        v = ctx.typed(
            t.get(key),
            f"thresholds.{key}",
            kind,
            getattr(defaults, key),
            what="an integer" if kind is int else "a number",
        )
        if v is not None and v < 0:
            ctx.err(f"thresholds.{key}", f"must not be negative, got {v}")
        values[key] = v
    return Thresholds(**values)


def parse_alerts(ctx: ParseContext, raw: Any) -> Alerts:
    a = ctx.mapping(raw, "alerts", {"email", "webhook"})
    email = None
    if a.get("email") is not None:
        e = ctx.mapping(
            a["email"],
            "alerts.email",
            {"smtp_host", "smtp_port", "from", "to", "username", "password", "starttls", "ca_file"},
            required={"smtp_host", "to"},
        )
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
            ca_file=ctx.typed(e.get("ca_file"), "alerts.email.ca_file", str),
        )
    webhook = None
    if a.get("webhook") is not None:
        w = ctx.mapping(a["webhook"], "alerts.webhook", {"url"}, required={"url"})
        url = ctx.typed(w.get("url"), "alerts.webhook.url", str, "")
        if url and not re.match(r"^https?://", url):
            ctx.err(
                "alerts.webhook.url",
                "not an http(s) URL",
                "https://...; the value is not shown, webhook URLs often carry a token",
            )
        webhook = WebhookAlert(url=url)
    return Alerts(email=email, webhook=webhook)


def parse_spark(ctx: ParseContext, raw: Any) -> SparkConfig:
    s = ctx.mapping(
        raw,
        "spark",
        {
            "master",
            "connection",
            "conf",
            "executor_env",
            "executor_python",
            "driver_copy_max_records",
            "driver_copy_processes",
        },
    )
    conf = ctx.mapping(
        s.get("conf"), "spark.conf", set(s.get("conf") or {}) if isinstance(s.get("conf"), dict) else set()
    )
    return SparkConfig(
        master=ctx.typed(s.get("master"), "spark.master", str, "local[*]"),
        connection=ctx.typed(s.get("connection"), "spark.connection", str, "kafka_dr_spark"),
        conf=MappingProxyType({str(k): str(v) for k, v in conf.items()}),
        executor_env=ctx.typed(s.get("executor_env"), "spark.executor_env", str) or None,
        executor_python=ctx.typed(s.get("executor_python"), "spark.executor_python", str) or None,
        driver_copy_max_records=_driver_copy_max(ctx, s.get("driver_copy_max_records")),
        driver_copy_processes=_driver_copy_processes(ctx, s.get("driver_copy_processes")),
    )


def _driver_copy_max(ctx: ParseContext, raw: Any) -> int:
    value = ctx.typed(raw, "spark.driver_copy_max_records", int, DRIVER_COPY_MAX_RECORDS, "a whole number")
    if value < 0:
        ctx.err("spark.driver_copy_max_records", f"{value} is negative", "0 copies every backlog with Spark")
        return DRIVER_COPY_MAX_RECORDS
    return value


def _driver_copy_processes(ctx: ParseContext, raw: Any) -> int:
    value = ctx.typed(raw, "spark.driver_copy_processes", int, 2, "1 or 2")
    if value not in (1, 2):
        ctx.err("spark.driver_copy_processes", f"{value} is not 1 or 2", "1: the driver alone; 2: with a helper")
        return 2
    return value


def parse_schema_mirror(ctx: ParseContext, raw: Any, clusters: dict[str, ClusterConfig]) -> SchemaMirrorConfig | None:
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

"""config_load: a valid config parses into typed values; every broken one yields ONE
ConfigError that lists every problem with its exact path."""

from __future__ import annotations

import copy
import dataclasses
import textwrap

import pytest

from kafka_dr.core.config import FlowMode, LoopPolicy, ProvenanceRule
from kafka_dr.core.config_load import ConfigError, load_config, parse_config, parse_config_text
from kafka_dr.core.secret_refs import SecretRef

FULL = textwrap.dedent(
    """\
    internal_prefix: _dr
    clusters:
      east:
        bootstrap_servers: " east-1:9092,east-2:9092 "
        cluster_id: AbCdEfGhIjKlMnOpQrStUv
        connection: kafka_east
        client:
          security.protocol: SASL_SSL
          sasl.mechanism: SCRAM-SHA-512
          sasl.username: dr-east
          sasl.password: ${env:EAST_PASSWORD}
          enable.ssl.certificate.verification: true
          socket.timeout.ms: 30000
        schema_registry:
          url: https://sr-east:8081
      west:
        bootstrap_servers: west-1:9092
        client:
          ssl.key.password: ${airflow:kafka_west.extra.key_password}
    flows:
      - name: orders_east_west
        source: east
        target: west
        topics:
          allow: ["orders\\\\..*", payments]
          deny: [".*\\\\.tmp"]
        loop_policy: provenance
        provenance_rule: local_only
        mode: incremental
        max_duration_seconds: 600
        topic_refresh_seconds: 15
        transaction_timeout_seconds: 20
        dead_letter_topic: _dr.dlq
      - source: west
        target: east
        enabled: false
    schedules:
      heartbeat: "*/2 * * * *"
      data_quality: "@daily"
      schema_mirror: none
    thresholds:
      heartbeat_max_age_seconds: 30
      replication_lag_max_records: 5000
    alerts:
      email:
        smtp_host: smtp.example.com
        smtp_port: 587
        from: dr@example.com
        to: oncall@example.com
        username: dr
        password: ${env:SMTP_PASSWORD}
        starttls: true
      webhook:
        url: https://hooks.example.com/dr
    spark:
      master: spark://spark:7077
      conf:
        spark.executor.memory: 2g
        spark.executor.cores: 2
    schema_mirror:
      primary: east
      subject_template: "dr-{subject}"
    """
)


def test_full_config_parses_into_typed_values():
    cfg = parse_config_text(FULL, source="full.yaml")

    assert cfg.source_path == "full.yaml"
    assert cfg.internal_prefix == "_dr"
    assert cfg.names.heartbeat_topic == "_dr.heartbeats"
    assert list(cfg.clusters) == ["east", "west"]

    east = cfg.cluster("east")
    assert east.bootstrap_servers == "east-1:9092,east-2:9092"  # stripped
    assert east.cluster_id == "AbCdEfGhIjKlMnOpQrStUv"
    assert east.connection == "kafka_east"
    assert east.schema_registry.url == "https://sr-east:8081"
    assert east.schema_registry.topic == "_schemas"
    assert dict(east.client) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "dr-east",
        "sasl.password": SecretRef("env", "EAST_PASSWORD"),
        "enable.ssl.certificate.verification": "true",  # YAML bool -> librdkafka string
        "socket.timeout.ms": "30000",
    }
    assert cfg.cluster("west").client["ssl.key.password"] == SecretRef("airflow", "kafka_west.extra.key_password")
    assert cfg.cluster("west").connection is None

    f0, f1 = cfg.flows
    assert (f0.name, f0.source, f0.target) == ("orders_east_west", "east", "west")
    assert f0.topics.allow == (r"orders\..*", "payments")
    assert f0.topics.deny == (r".*\.tmp",)
    assert f0.topics.internal[-1] == "_dr.*"  # the configured internal prefix, escaped
    assert f0.loop_policy is LoopPolicy.PROVENANCE
    assert f0.provenance_rule is ProvenanceRule.LOCAL_ONLY
    assert f0.mode is FlowMode.INCREMENTAL
    assert f0.schedule == "*/5 * * * *"  # default for incremental flows
    assert f0.max_duration_seconds == 600
    assert f0.topic_refresh_seconds == 15
    assert f0.transaction_timeout_seconds == 20
    assert f0.dead_letter_topic == "_dr.dlq"
    assert f0.enabled is True

    assert f1.name == "west_to_east"  # default name
    assert f1.topics.allow == (".*",) and f1.topics.deny == ()
    assert f1.loop_policy is LoopPolicy.PROVENANCE
    assert f1.provenance_rule is ProvenanceRule.NOT_TO_ORIGIN
    assert f1.prefix_separator == "."
    assert f1.mode is FlowMode.CONTINUOUS
    assert f1.schedule is None
    assert f1.max_duration_seconds is None
    assert f1.topic_refresh_seconds == 30
    assert f1.transaction_timeout_seconds == 60
    assert f1.enabled is False
    assert cfg.flows_from("east") == (f0,) and cfg.flows_into("east") == (f1,)

    assert cfg.schedules.heartbeat == "*/2 * * * *"
    assert cfg.schedules.data_quality == "@daily"
    assert cfg.schedules.schema_mirror is None  # "none": trigger only
    assert cfg.schedules.offset_sync == "* * * * *"  # default kept

    assert cfg.thresholds.heartbeat_max_age_seconds == 30.0
    assert isinstance(cfg.thresholds.heartbeat_max_age_seconds, float)
    assert cfg.thresholds.replication_lag_max_records == 5000
    assert cfg.thresholds.latency_p99_max_seconds == 60.0
    assert cfg.thresholds.latency_window_seconds == 900.0  # data quality judges the last 15 minutes of copies

    email = cfg.alerts.email
    assert email is not None
    assert (email.smtp_host, email.smtp_port, email.sender) == ("smtp.example.com", 587, "dr@example.com")
    assert email.to == ("oncall@example.com",)
    assert email.password == SecretRef("env", "SMTP_PASSWORD")
    assert email.starttls is True
    assert cfg.alerts.webhook is not None and cfg.alerts.webhook.url == "https://hooks.example.com/dr"

    assert cfg.spark.master == "spark://spark:7077"
    assert cfg.spark.connection == "kafka_dr_spark"
    assert dict(cfg.spark.conf) == {"spark.executor.memory": "2g", "spark.executor.cores": "2"}

    assert cfg.schema_mirror is not None
    assert cfg.schema_mirror.primary == "east"
    assert cfg.schema_mirror.targets == ("west",)  # default: every other cluster
    assert cfg.schema_mirror.subject_template == "dr-{subject}"
    assert cfg.distribution is None


def test_config_is_immutable():
    cfg = parse_config_text(FULL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.flows[0].source = "west"  # type: ignore[misc]
    with pytest.raises(TypeError):
        cfg.clusters["north"] = cfg.cluster("east")  # type: ignore[index]
    with pytest.raises(TypeError):
        cfg.cluster("east").client["sasl.password"] = "x"  # type: ignore[index]


def test_minimal_config_gets_defaults():
    cfg = parse_config(
        {"clusters": {"a": {"bootstrap_servers": "a:9092"}, "b": {"bootstrap_servers": "b:9092"}}, "flows": []}
    )
    assert cfg.flows == ()
    assert cfg.internal_prefix == "_kafka_dr"
    assert cfg.schedules.data_quality == "@hourly"
    assert cfg.alerts.email is None and cfg.alerts.webhook is None
    assert cfg.spark.master == "local[*]"
    assert cfg.schema_mirror is None


def test_yaml_anchors_and_merge_keys_are_accepted():
    cfg = parse_config_text(
        textwrap.dedent(
            """\
            clusters:
              east:
                bootstrap_servers: east:9092
                client: &sasl
                  security.protocol: SASL_SSL
                  sasl.mechanism: PLAIN
              west:
                bootstrap_servers: west:9092
                client:
                  <<: *sasl
                  sasl.mechanism: SCRAM-SHA-256
            flows: [{source: east, target: west}]
            """
        )
    )
    assert dict(cfg.cluster("east").client) == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}
    assert dict(cfg.cluster("west").client) == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256"}


def test_load_config_reads_a_file_and_names_it(tmp_path):
    p = tmp_path / "dr.yaml"
    p.write_text(FULL, encoding="utf-8")
    assert load_config(p).source_path == str(p)
    with pytest.raises(ConfigError) as e:
        load_config(tmp_path / "missing.yaml")
    assert [x.path for x in e.value.problems] == [str(tmp_path / "missing.yaml")]
    assert "cannot read the config file" in str(e.value)


# --- broken configs ------------------------------------------------------------------------


def base() -> dict:
    """A valid two-cluster active/active config as plain data."""
    return {
        "clusters": {
            "east": {"bootstrap_servers": "east:9092"},
            "west": {"bootstrap_servers": "west:9092"},
        },
        "flows": [
            {"source": "east", "target": "west"},
            {"source": "west", "target": "east"},
        ],
    }


def three() -> dict:
    """A valid three-cluster copy_flags config over the tree [[east, west], north]."""
    return {
        "clusters": {n: {"bootstrap_servers": f"{n}:9092"} for n in ("east", "west", "north")},
        "distribution": {"tree": [["east", "west"], "north"]},
        "flows": [
            {"source": s, "target": t, "loop_policy": "copy_flags"}
            for s, t in [("east", "west"), ("west", "east"), ("east", "north"), ("west", "north"), ("north", "east")]
        ],
    }


def problems(data) -> list:
    """The problems of the single ConfigError raised for ``data`` (a dict or YAML text)."""
    with pytest.raises(ConfigError) as e:
        if isinstance(data, str):
            parse_config_text(data)
        else:
            parse_config(data)
    err = e.value
    assert str(err).startswith(f"{len(err.problems)} problem(s)")
    for p in err.problems:  # every problem is in the message, one per line
        assert f"  - {p}" in str(err).splitlines()
    return err.problems


def paths(data) -> list[str]:
    return [p.path for p in problems(data)]


def with_(data: dict, edit) -> dict:
    d = copy.deepcopy(data)
    edit(d)
    return d


def test_the_base_configs_are_valid():
    assert len(parse_config(base()).flows) == 2
    assert len(parse_config(three()).flows) == 5


def test_unknown_cluster_in_a_flow_names_the_known_ones_and_the_closest():
    (p,) = problems(with_(base(), lambda d: d["flows"][0].update(source="eastt")))
    assert str(p) == "flows[0].source: unknown cluster 'eastt' (known: east, west) (hint: did you mean 'east'?)"
    (p,) = problems(with_(base(), lambda d: d["flows"][1].update(target="zzz")))
    assert (p.path, p.message, p.hint) == ("flows[1].target", "unknown cluster 'zzz' (known: east, west)", None)


def test_bad_regular_expressions_in_topics():
    d = with_(base(), lambda d: d["flows"][0].update(topics={"allow": ["orders.*", "(unclosed"], "deny": ["[z-a]"]}))
    ps = problems(d)
    assert [p.path for p in ps] == ["flows[0].topics.allow[1]", "flows[0].topics.deny[0]"]
    assert "bad regular expression '(unclosed'" in ps[0].message
    assert "whole topic name" in ps[0].hint
    # a single string is a one-element list
    assert paths(with_(base(), lambda d: d["flows"][1].update(topics={"allow": "("}))) == ["flows[1].topics.allow[0]"]


def test_missing_bootstrap_servers():
    (p,) = problems(with_(base(), lambda d: d["clusters"]["west"].pop("bootstrap_servers")))
    assert (p.path, p.message) == ("clusters.west.bootstrap_servers", "missing required key")


@pytest.mark.parametrize("value", ["", "   ", None])
def test_empty_bootstrap_servers(value):
    (p,) = problems(with_(base(), lambda d: d["clusters"]["east"].update(bootstrap_servers=value)))
    assert (p.path, p.message) == ("clusters.east.bootstrap_servers", "must not be empty")


def test_bootstrap_servers_of_the_wrong_type_is_one_problem():
    (p,) = problems(with_(base(), lambda d: d["clusters"]["east"].update(bootstrap_servers=9092)))
    assert p.path == "clusters.east.bootstrap_servers"
    assert p.message == "expected str, got int 9092"


def test_duplicate_cluster_names_are_reported_with_line_numbers():
    text = textwrap.dedent(
        """\
        clusters:
          east:
            bootstrap_servers: east:9092
          west:
            bootstrap_servers: west:9092
          east:
            bootstrap_servers: other:9092
        flows: []
        """
    )
    (p,) = problems(text)
    assert p.path == "line 6"
    assert p.message == "duplicate key 'east' (first at line 2)"


def test_duplicate_keys_anywhere_are_reported_alongside_other_problems():
    text = textwrap.dedent(
        """\
        clusters:
          east: {bootstrap_servers: east:9092, bootstrap_servers: e2:9092}
          west: {bootstrap_servers: west:9092}
        flows:
          - source: east
            target: west
            target: east
        """
    )
    ps = problems(text)
    assert [(p.path, p.message) for p in ps] == [
        ("line 2", "duplicate key 'bootstrap_servers' (first at line 2)"),
        ("line 7", "duplicate key 'target' (first at line 6)"),
        ("flows[0]", "source and target are both 'east'"),  # the later key won
    ]


def test_duplicate_flow_names():
    def edit(d):
        d["flows"][0]["name"] = "mirror"
        d["flows"][1]["name"] = "mirror"

    (p,) = problems(with_(base(), edit))
    assert (p.path, p.message) == ("flows[1].name", "duplicate flow name 'mirror' (also flows[0])")


def test_two_unnamed_flows_for_the_same_pair_are_one_problem():
    (p,) = problems(with_(base(), lambda d: d["flows"].append({"source": "east", "target": "west"})))
    assert p.path == "flows[2]"
    assert p.message == "second flow east -> west (also flows[0])"
    # named flows for the same pair are allowed (different topic selections)
    ok = with_(base(), lambda d: d["flows"].append({"name": "more", "source": "east", "target": "west"}))
    assert len(parse_config(ok).flows) == 3


def test_source_equal_to_target():
    (p,) = problems(with_(base(), lambda d: d["flows"][0].update(target="east")))
    assert (p.path, p.message) == ("flows[0]", "source and target are both 'east'")


def test_unknown_keys_name_the_closest_known_key():
    def edit(d):
        d["flows"][0]["topics"] = {"alow": ["orders"]}
        d["flows"][1]["loop_polcy"] = "prefix"
        d["clusters"]["east"]["clinet"] = {}
        d["thresholds"] = {"heartbeat_max_age": 10}
        d["schedule"] = {}

    ps = problems(with_(base(), edit))
    assert [(p.path, p.hint) for p in ps] == [
        ("schedule", "did you mean 'schedules'?"),
        ("clusters.east.clinet", "did you mean 'client'?"),
        ("flows[0].topics.alow", "did you mean 'allow'?"),
        ("flows[1].loop_polcy", "did you mean 'loop_policy'?"),
        ("thresholds.heartbeat_max_age", "did you mean 'heartbeat_max_age_seconds'?"),
    ]
    assert all(p.message == "unknown key" for p in ps)


def test_missing_top_level_keys_and_wrong_top_level_type():
    assert paths({}) == ["clusters", "flows"]
    assert paths(None) == ["clusters", "flows"]
    (p,) = problems([1, 2])
    assert (p.path, p.message) == ("config", "expected a mapping, got list")


def test_bad_enum_values_list_the_choices():
    def edit(d):
        d["flows"][0]["loop_policy"] = "provenace"
        d["flows"][0]["mode"] = "streaming"
        d["flows"][1]["provenance_rule"] = "never"

    ps = problems(with_(base(), edit))
    assert [(p.path, p.message, p.hint) for p in ps] == [
        ("flows[0].loop_policy", "unknown value 'provenace'", "one of: provenance, prefix, copy_flags"),
        ("flows[0].mode", "unknown value 'streaming'", "one of: continuous, incremental"),
        ("flows[1].provenance_rule", "unknown value 'never'", "one of: not_to_origin, local_only"),
    ]


@pytest.mark.parametrize(
    "schedule",
    [
        "every minute",
        "*/5 * * *",
        "* * * * * *",
        "61 * * * *",
        "0 24 * * *",
        "0 0 0 * *",
        "0 0 * 13 *",
        "0 0 * * 8",
        "*/0 * * * *",
        "a b c d e",
        "every 5 minutes on weekdays please",
        "@fortnightly",
        5,
    ],
)
def test_bad_cron_schedule(schedule):
    (p,) = problems(with_(base(), lambda d: d.update(schedules={"heartbeat": schedule})))
    assert p.path == "schedules.heartbeat"
    (p,) = problems(with_(base(), lambda d: d["flows"][0].update(mode="incremental", schedule=schedule)))
    assert p.path == "flows[0].schedule"


@pytest.mark.parametrize(
    "schedule",
    [
        "*/5 * * * *",
        "0 0 * * *",
        "0 22-2 * * *",
        "5/15 * * * *",
        "1-10/2,30 * * * *",
        "0 0 1,15 * *",
        "0 0 L * *",
        "0 0 15W * *",
        "0 0 ? * MON",
        "0 9 * jan-mar mon-fri",
        "0 0 * * 7",
        "0 0 * * 5#3",
        "@hourly",
        "@quarterly",
        "@once",
    ],
)
def test_valid_cron_schedules(schedule):
    cfg = parse_config(with_(base(), lambda d: d.update(schedules={"heartbeat": schedule})))
    assert cfg.schedules.heartbeat == schedule


def test_cron_check_agrees_with_croniter():
    """Airflow parses cron with croniter: accept what it accepts, reject what it rejects."""
    from croniter import croniter

    exprs = [
        "*/5 * * * *",
        "0 0 * * *",
        "61 * * * *",
        "0 24 * * *",
        "0 0 32 * *",
        "0 0 * 13 *",
        "0 0 * * 8",
        "*/0 * * * *",
        "0 0 L * *",
        "0 0 15W * *",
        "0 0 32W * *",
        "0 0 * * 5#3",
        "0 0 * * 5#6",
        "0 0 ? * *",
        "? * * * *",
        "0 0 * FOO *",
        "0 0 * * sun-sat",
        "-1 * * * *",
        "1- * * * *",
        "1,,2 * * * *",
        "0 0 * JAN/2 *",
        "0 22-2 * * *",
        "H * * * *",
        "0 0 * * L",
    ]
    for expr in exprs:
        try:
            parse_config(with_(base(), lambda d, expr=expr: d.update(schedules={"heartbeat": expr})))
            ours = True
        except ConfigError:
            ours = False
        assert ours == croniter.is_valid(expr), expr


def test_null_or_none_schedule():
    cfg = parse_config(with_(base(), lambda d: d.update(schedules={"heartbeat": "manual", "data_quality": None})))
    assert cfg.schedules.heartbeat is None
    assert cfg.schedules.data_quality == "@hourly"  # null = the default, as for every key


def test_contradictory_loop_policies_across_the_two_directions():
    (p,) = problems(with_(base(), lambda d: d["flows"][0].update(loop_policy="prefix")))
    assert p.path == "flows[1].loop_policy"
    assert p.message == "'provenance' contradicts flows[0] (east -> west, 'prefix')"


def test_provenance_rule_on_a_non_provenance_flow():
    def edit(d):
        for f in d["flows"]:
            f["loop_policy"] = "prefix"
        d["flows"][0]["provenance_rule"] = "local_only"

    (p,) = problems(with_(base(), edit))
    assert (p.path, p.message) == ("flows[0].provenance_rule", "only applies to loop_policy 'provenance', not 'prefix'")


@pytest.mark.parametrize("key", ["bootstrap.servers", "metadata.broker.list"])
def test_bootstrap_servers_inside_client(key):
    (p,) = problems(with_(base(), lambda d: d["clusters"]["east"].update(client={key: "x:1"})))
    assert p.path == f"clusters.east.client.{key}"
    assert p.message == "set the cluster's bootstrap_servers instead"


def test_client_settings_must_be_scalars_with_string_names():
    def edit(d):
        d["clusters"]["east"]["client"] = {"sasl.mechanism": ["PLAIN"], 1: "x", "linger.ms": None}

    assert paths(with_(base(), edit)) == [
        "clusters.east.client.sasl.mechanism",
        "clusters.east.client.1",
        "clusters.east.client.linger.ms",
    ]


def test_copy_flags_without_a_distribution_tree_is_reported_once():
    def edit(d):
        for f in d["flows"]:
            f["loop_policy"] = "copy_flags"

    (p,) = problems(with_(base(), edit))
    assert (p.path, p.message) == ("flows[0].loop_policy", "copy_flags needs a distribution tree")


def test_copy_flags_coverage_gap():
    (p,) = problems(with_(three(), lambda d: d["flows"].pop()))  # north -> east
    assert p.path == "distribution.tree"
    assert p.message == "cluster 'north' has no copy_flags flow into {east, west} (level 2)"


def test_copy_flags_coverage_duplicate():
    ps = problems(
        with_(three(), lambda d: d["flows"].append({"source": "north", "target": "west", "loop_policy": "copy_flags"}))
    )
    assert [(p.path, p.message) for p in ps] == [
        (
            "distribution.tree",
            "cluster 'north' has 2 copy_flags flows into {east, west} (level 2): "
            "east, west; keep one or records arrive twice",
        )
    ]


def test_copy_flags_flow_with_a_cluster_outside_the_tree():
    def edit(d):
        d["clusters"]["south"] = {"bootstrap_servers": "south:9092"}
        d["flows"].append({"source": "north", "target": "south", "loop_policy": "copy_flags"})

    (p,) = problems(with_(three(), edit))
    assert p.path == "flows[5].target"
    assert p.message == "cluster 'south' is not in the distribution tree"


def test_distribution_tree_problems():
    ps = problems(with_(three(), lambda d: d["distribution"].update(tree=[["east", "west"], ["north"]])))
    # the broken tree is reported where it is; no second "copy_flags needs a tree"
    assert [(p.path, p.message) for p in ps] == [
        ("distribution.tree[1]", "expected a cluster name or a list of at least two subtrees")
    ]
    ps = problems(with_(three(), lambda d: d["distribution"].update(tree=[["east", "west"], ["north", "east"]])))
    assert [(p.path, p.message) for p in ps] == [("distribution.tree", "clusters appear more than once: east")]
    ps = problems(with_(three(), lambda d: d["distribution"].update(tree=[["east", "west"], ["north", "nort"]])))
    assert [(p.path, p.message) for p in ps] == [("distribution.tree", "unknown cluster 'nort'")]
    assert paths(with_(three(), lambda d: d.update(distribution={}))) == ["distribution.tree"]


def test_invalid_yaml_reports_line_and_column():
    (p,) = problems("clusters:\n  east: {bootstrap_servers: east:9092\nflows: []\n")
    assert p.path == "line 3, column 6"
    assert p.message.startswith("not valid YAML: ")
    (p,) = problems("clusters:\n\teast: {}\n")
    assert p.path == "line 2, column 1"
    assert "cannot start any token" in p.message
    (p,) = problems("clusters: {}\n---\nflows: []\n")
    assert p.path.startswith("line 2, column 1")


def test_unhashable_yaml_key_is_a_config_error():
    (p,) = problems("clusters:\n  ? [a, b]\n  : {}\nflows: []\n")
    assert p.path.startswith("line 2")
    assert "unhashable" in p.message


def test_other_section_problems():
    def edit(d):
        d["internal_prefix"] = ""
        d["flows"][0].update(
            prefix_separator="/", max_duration_seconds=0, topic_refresh_seconds=True, transaction_timeout_seconds=-5
        )
        d["thresholds"] = {
            "replication_lag_max_records": 1.5,
            "latency_p99_max_seconds": -1,
            "heartbeat_max_age_seconds": "soon",
        }
        d["alerts"] = {"email": {"smtp_host": "smtp", "to": ["nobody"]}, "webhook": {"url": "ftp://x"}}
        d["spark"] = {"master": 1, "conf": ["a"]}
        d["schema_mirror"] = {"primary": "east", "targets": ["east", "nowhere", {"a": 1}], "subject_template": "dr"}

    ps = problems(with_(base(), edit))
    assert [(p.path, p.message) for p in ps] == [
        ("internal_prefix", "bad prefix ''"),
        ("flows[0].prefix_separator", "bad separator '/'"),
        ("flows[0].topic_refresh_seconds", "expected int, got a boolean"),
        ("flows[0].max_duration_seconds", "must be positive, got 0"),
        ("flows[0].transaction_timeout_seconds", "must be positive, got -5"),
        ("thresholds.heartbeat_max_age_seconds", "expected a number, got str 'soon'"),
        ("thresholds.replication_lag_max_records", "expected an integer, got float 1.5"),
        ("thresholds.latency_p99_max_seconds", "must not be negative, got -1.0"),
        ("alerts.email.to", "expected one or more e-mail addresses"),
        ("alerts.webhook.url", "not an http(s) URL"),
        ("spark.conf", "expected a mapping, got list"),
        ("spark.master", "expected str, got int 1"),
        ("schema_mirror.targets[0]", "'east' is the primary"),
        ("schema_mirror.targets[1]", "unknown cluster 'nowhere' (known: east, west)"),
        ("schema_mirror.targets[2]", "expected a cluster name"),
        ("schema_mirror.subject_template", "'dr' does not contain '{subject}'"),
    ]


def test_required_keys_of_sections():
    def edit(d):
        d["alerts"] = {"email": {}, "webhook": {}}
        d["schema_mirror"] = {}

    assert paths(with_(base(), edit)) == [
        "alerts.email.smtp_host",
        "alerts.email.to",
        "alerts.webhook.url",
        "schema_mirror.primary",
    ]


def test_several_problems_at_once_are_all_reported_in_file_order():
    text = textwrap.dedent(
        """\
        clusters:
          east:
            bootstrap_servers: ""
            client: {bootstrap.servers: "east:9092"}
          west: {bootstrap_server: west:9092}
        flows:
          - source: eest
            target: west
            topics: {allow: ["("]}
          - source: west
            target: west
            loop_policy: prefix
            provenance_rule: local_only
        schedules: {heartbeat: "every minute"}
        """
    )
    assert paths(text) == [
        "clusters.east.bootstrap_servers",
        "clusters.east.client.bootstrap.servers",
        "clusters.west.bootstrap_server",
        "clusters.west.bootstrap_servers",
        "flows[0].source",
        "flows[0].topics.allow[0]",
        "flows[1]",
        "flows[1].provenance_rule",
        "schedules.heartbeat",
    ]


# --- secrets never appear in messages --------------------------------------------------------


def test_secrets_never_appear_in_a_config_error(monkeypatch):
    monkeypatch.setenv("EAST_PASSWORD", "env-s3cret-value")
    text = textwrap.dedent(
        """\
        clusters:
          east:
            bootstrap_servers: east:9092
            client:
              sasl.password: literal-hunter2
              ssl.key.password: ${env:EAST_PASSWORD}
              sasl.oauthbearer.client.secret: [list-s3cret]
          west: {bootstrap_servers: west:9092}
        flows:
          - {source: east, target: wets}
        alerts:
          email: {smtp_host: smtp, to: [ops@example.com], password: mail-s3cret, smtp_port: nope}
          webhook: {url: "hooks.example.com/services/T0/B0/webhook-s3cret"}
        """
    )
    with pytest.raises(ConfigError) as e:
        parse_config_text(text)
    message = str(e.value) + repr(e.value) + "".join(repr(p) for p in e.value.problems)
    assert "flows[0].target" in message  # the unrelated error is reported
    assert "clusters.east.client.sasl.oauthbearer.client.secret" in message
    for secret in (
        "literal-hunter2",
        "${env:EAST_PASSWORD}",
        "EAST_PASSWORD",
        "env-s3cret-value",
        "list-s3cret",
        "mail-s3cret",
        "webhook-s3cret",
    ):
        assert secret not in message


def test_literal_secrets_do_not_appear_in_the_config_repr():
    d = base()
    d["clusters"]["east"]["client"] = {"sasl.username": "dr", "sasl.password": "literal-hunter2"}
    d["alerts"] = {"email": {"smtp_host": "smtp", "to": "ops@example.com", "password": "mail-s3cret"}}
    cfg = parse_config(d)
    assert cfg.cluster("east").client["sasl.password"] == "literal-hunter2"  # still usable
    text = repr(cfg) + str(cfg)
    assert "literal-hunter2" not in text and "mail-s3cret" not in text


def test_a_mistyped_secret_reference_is_not_taken_as_a_literal():
    d = with_(base(), lambda d: d["clusters"]["east"].update(client={"sasl.password": "${evn:EAST_PASSWORD}"}))
    (p,) = problems(d)
    assert p.path == "clusters.east.client.sasl.password"
    assert p.message == "looks like a secret reference but is not one"
    assert "EAST_PASSWORD" not in str(p)


def test_a_mistyped_secret_reference_for_the_smtp_password():
    d = with_(
        base(), lambda d: d.update(alerts={"email": {"smtp_host": "smtp", "to": "a@b.c", "password": "${env SMTP}"}})
    )
    (p,) = problems(d)
    assert (p.path, p.message) == ("alerts.email.password", "looks like a secret reference but is not one")


def test_topic_config_and_preflight_sections():
    from kafka_dr.core.config_load import ConfigError, parse_config

    base = {"clusters": {"east": {"bootstrap_servers": "a:1"}, "west": {"bootstrap_servers": "b:1"}}, "flows": []}
    cfg = parse_config(
        {**base, "topic_config": {"exclude": ["retention\\.bytes"]}, "preflight": {"exclude_topics": ["legacy\\..*"]}}
    )
    assert cfg.topic_config.exclude == ("retention\\.bytes",)
    assert cfg.preflight.exclude_topics == ("legacy\\..*",)
    assert parse_config(base).topic_config.exclude == () and parse_config(base).preflight.exclude_topics == ()
    try:
        parse_config({**base, "topic_config": {"exclude": ["("]}, "preflight": {"exclude_topic": []}})
    except ConfigError as e:
        paths = [p.path for p in e.problems]
        assert paths == ["topic_config.exclude[0]", "preflight.exclude_topic"], paths
    else:
        raise AssertionError("bad regex and unknown key must be reported")


def test_consumer_groups_section():
    from kafka_dr.core.config_load import ConfigError, parse_config

    base = {"clusters": {"east": {"bootstrap_servers": "a:1"}}, "flows": []}
    cfg = parse_config({**base, "consumer_groups": {"allow": ["orders-.*", "billing"], "deny": "orders-test-.*"}})
    assert (cfg.consumer_groups.allow, cfg.consumer_groups.deny) == (("orders-.*", "billing"), ("orders-test-.*",))
    assert (parse_config(base).consumer_groups.allow, parse_config(base).consumer_groups.deny) == ((".*",), ())
    try:
        parse_config({**base, "consumer_groups": {"allow": ["[a-"], "exclude": ["x"]}})
    except ConfigError as e:
        assert [p.path for p in e.problems] == ["consumer_groups.exclude", "consumer_groups.allow[0]"], e.problems
        assert "known keys: allow, deny, sync_interval_seconds" in str(e) and "'[a-'" in str(e)
    else:
        raise AssertionError("bad regex and unknown key must be reported")


def test_the_group_sync_interval_defaults_to_five_seconds_and_stays_within_one_to_sixty():
    from kafka_dr.core.config_load import ConfigError, parse_config

    base = {"clusters": {"east": {"bootstrap_servers": "a:1"}}, "flows": []}
    assert parse_config(base).consumer_groups.sync_interval_seconds == 5.0
    assert (
        parse_config({**base, "consumer_groups": {"sync_interval_seconds": 1}}).consumer_groups.sync_interval_seconds
        == 1.0
    )
    for bad, said in ((0.5, "got 0.5"), (61, "got 61"), ("5s", "expected a number")):
        with pytest.raises(ConfigError) as e:
            parse_config({**base, "consumer_groups": {"sync_interval_seconds": bad}})
        assert [p.path for p in e.value.problems] == ["consumer_groups.sync_interval_seconds"]
        assert said in str(e.value)


def test_cluster_connection_supplies_sasl_credentials_as_references():
    from kafka_dr.core.config_load import parse_config
    from kafka_dr.core.secret_refs import SecretRef

    cfg = parse_config(
        {
            "clusters": {
                "east": {
                    "bootstrap_servers": "a:1",
                    "connection": "kafka_east",
                    "client": {"security.protocol": "SASL_SSL"},
                },
                "west": {"bootstrap_servers": "b:1", "connection": "kafka_west", "client": {"sasl.username": "svc"}},
            },
            "flows": [],
        }
    )
    east = cfg.cluster("east").client
    assert east["sasl.username"] == SecretRef("airflow", "kafka_east.login")
    assert east["sasl.password"] == SecretRef("airflow", "kafka_east")
    assert east["security.protocol"] == "SASL_SSL"
    assert cfg.cluster("west").client["sasl.username"] == "svc"  # explicit settings win


def test_data_quality_run_settings():
    cfg = parse_config(with_(base(), lambda d: d.update(data_quality={"incremental": False, "full_sweep_hours": 6})))
    assert (cfg.data_quality.incremental, cfg.data_quality.full_sweep_hours) == (False, 6.0)
    default = parse_config(base()).data_quality
    assert (default.incremental, default.full_sweep_hours) == (True, 24.0)
    bad = problems(with_(base(), lambda d: d.update(data_quality={"incremental": "yes", "full_sweep_hours": -1})))
    assert [(p.path, p.message) for p in bad] == [
        ("data_quality.full_sweep_hours", "must not be negative, got -1.0"),
        ("data_quality.incremental", "expected true or false, got str 'yes'"),
    ]


def test_acl_sync_settings():
    principals = {"billing": {"east": "User:billing-east", "west": "User:billing-west"}}
    cfg = parse_config(
        with_(
            base(),
            lambda d: d.update(
                acl_sync={"read_only": True, "transactional_ids": {"deny": ["test-.*"]}, "principals": principals}
            ),
        )
    )
    a = cfg.acl_sync
    assert (a.read_only, a.transactional_ids_allow, a.transactional_ids_deny) == (True, (".*",), ("test-.*",))
    assert a.principal_on("User:billing-east", "east", "west") == "User:billing-west"
    assert a.principal_on("User:someone", "east", "west") == "User:someone"
    assert parse_config(base()).acl_sync.read_only is False
    bad = problems(
        with_(
            base(),
            lambda d: d.update(
                acl_sync={
                    "principals": {
                        "a": {"east": "billing", "north": "User:x"},
                        "b": {"west": "User:w"},
                        "c": {"west": "User:w"},
                    }
                }
            ),
        )
    )
    assert sorted((p.path, p.message) for p in bad) == [
        ("acl_sync.principals.a.east", "bad principal 'billing'"),
        ("acl_sync.principals.a.north", "unknown key"),
        ("acl_sync.principals.c.west", "User:w on west is already named 'b'"),
    ]


def test_the_driver_copy_settings_default_and_take_only_their_values():
    cfg = parse_config(base())
    assert (cfg.spark.driver_copy_max_records, cfg.spark.driver_copy_processes) == (2_000_000, 2)
    alone = parse_config(
        with_(base(), lambda d: d.setdefault("spark", {}).update(driver_copy_processes=1, driver_copy_max_records=0))
    )
    assert (alone.spark.driver_copy_max_records, alone.spark.driver_copy_processes) == (0, 1)
    bad = with_(base(), lambda d: d.setdefault("spark", {}).update(driver_copy_processes=3, driver_copy_max_records=-1))
    assert [(p.path, p.message) for p in problems(bad)] == [
        ("spark.driver_copy_max_records", "-1 is negative"),
        ("spark.driver_copy_processes", "3 is not 1 or 2"),
    ]
    for wrong in ("two", True):
        (p,) = problems(with_(base(), lambda d, w=wrong: d.setdefault("spark", {}).update(driver_copy_processes=w)))
        assert p.path == "spark.driver_copy_processes" and p.message.startswith("expected 1 or 2, got"), p

"""Operator inputs checked before a run changes anything: clusters, flows, regular expressions."""

from __future__ import annotations

import pytest

from kafka_dr.core.config_load import parse_config
from kafka_dr.core.inputs import (
    InvalidInput,
    failback_problems,
    failover_problems,
    flow_problems,
    regex_problem,
    require_valid,
)

CFG = parse_config(
    {
        "clusters": {
            "east": {"bootstrap_servers": "127.0.0.1:19092"},
            "west": {"bootstrap_servers": "127.0.0.1:19192"},
        },
        "flows": [{"source": "east", "target": "west"}, {"source": "west", "target": "east"}],
    }
)


def test_a_bad_regex_is_named_with_its_flag():
    assert regex_problem("--groups", ".*") is None and regex_problem("--groups", "") is None
    assert regex_problem("--groups", "(").startswith(
        "--groups '(' is not a regular expression: missing ), unterminated subpattern"
    )


def test_failover_inputs_report_every_problem_at_once():
    assert failover_problems(CFG, "east", "west", "billing-.*") == []
    assert failover_problems(CFG, "eest", "west", "(") == [
        "unknown failed cluster 'eest' (known: east, west)",
        "--groups '(' is not a regular expression: missing ), unterminated subpattern at position 0",
    ]
    assert failover_problems(CFG, "east", "east", None) == ["the failed and the surviving cluster are both 'east'"]


def test_failback_inputs_check_groups_topics_and_the_time_window():
    assert failback_problems(CFG, "east", "west", ".*", "orders.*", 10, 20) == []
    assert failback_problems(CFG, "east", "west", "[", "(", 20, 10) == [
        "--groups '[' is not a regular expression: unterminated character set at position 0",
        "--topics '(' is not a regular expression: missing ), unterminated subpattern at position 0",
        "--until-ms 10 is not after --since-ms 20",
    ]
    assert failback_problems(CFG, "east", "west", None, None, -1) == ["--since-ms -1 is negative"]


def test_unknown_flows_are_named_with_the_known_ones():
    assert flow_problems(CFG, ["east_to_west"]) == []
    assert flow_problems(CFG, ["nope"], "lab.yaml") == [
        "no flow named 'nope' in lab.yaml (flows: east_to_west, west_to_east)"
    ]


def test_require_valid_raises_one_error_with_every_problem():
    require_valid([])
    with pytest.raises(InvalidInput, match="^a; b$") as e:
        require_valid(["a", "b"])
    assert e.value.problems == ["a", "b"]

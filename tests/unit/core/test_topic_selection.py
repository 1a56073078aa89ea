"""TopicSelection.selects: full-match regexes, deny wins, internal topics only when named."""

from __future__ import annotations

import pytest

from kafka_dr.core.config import TopicSelection
from kafka_dr.core.config_load import parse_config

INTERNAL = [
    "__consumer_offsets",
    "__transaction_state",
    "_schemas",
    "_kafka_dr.heartbeats",
    "mm2-offsets.east.internal",
    "heartbeats",
    "east.heartbeats",
    "connect-configs.internal",
]


def test_default_selects_everything_but_internal_topics():
    sel = TopicSelection()
    assert sel.selects("orders") and sel.selects("payments.v2") and sel.selects("_private")
    for topic in INTERNAL:
        assert not sel.selects(topic), topic


def test_allow_is_a_full_match():
    sel = TopicSelection(allow=(r"orders\..*", "payments"))
    assert sel.selects("orders.eu")
    assert not sel.selects("orders")  # needs the dot
    assert not sel.selects("my.orders.eu")  # not a search
    assert sel.selects("payments")
    assert not sel.selects("payments-v2")


def test_deny_wins_over_allow():
    sel = TopicSelection(allow=(r"orders\..*",), deny=(r".*\.tmp", "orders.secret"))
    assert sel.selects("orders.eu")
    assert not sel.selects("orders.eu.tmp")
    assert not sel.selects("orders.secret")
    # deny wins even over a literal allow
    sel = TopicSelection(allow=("orders",), deny=("orders",))
    assert not sel.selects("orders")


def test_deny_is_a_full_match():
    sel = TopicSelection(deny=("tmp",))
    assert not sel.selects("tmp")
    assert sel.selects("tmp.orders")


@pytest.mark.parametrize("topic", INTERNAL)
def test_internal_topics_are_excluded_even_by_a_matching_pattern(topic):
    assert not TopicSelection(allow=(".*",)).selects(topic)
    assert not TopicSelection(allow=(r"_.*", r"mm2-.*", r".*heartbeats", r".*\.internal")).selects(topic)


@pytest.mark.parametrize("topic", INTERNAL)
def test_internal_topics_are_selected_when_named_literally(topic):
    assert TopicSelection(allow=(topic,)).selects(topic)


def test_a_literal_may_be_written_escaped():
    assert TopicSelection(allow=(r"mm2-offsets\.east\.internal",)).selects("mm2-offsets.east.internal")
    assert TopicSelection(allow=(r"_kafka_dr\.heartbeats",)).selects("_kafka_dr.heartbeats")


def test_named_internal_topic_is_still_subject_to_deny():
    assert not TopicSelection(allow=("_schemas",), deny=("_schemas",)).selects("_schemas")


def test_naming_one_internal_topic_does_not_open_the_others():
    sel = TopicSelection(allow=("_schemas", ".*"))
    assert sel.selects("_schemas")
    assert sel.selects("orders")
    assert not sel.selects("__consumer_offsets")


def test_the_configured_internal_prefix_is_internal():
    cfg = parse_config(
        {
            "internal_prefix": "_ops.dr",
            "clusters": {"east": {"bootstrap_servers": "e:1"}, "west": {"bootstrap_servers": "w:1"}},
            "flows": [{"source": "east", "target": "west"}],
        }
    )
    sel = cfg.flows[0].topics
    assert not sel.selects("_ops.dr.heartbeats")
    assert not sel.selects("_ops.dr.offsets")
    assert sel.selects("_opsXdr.orders")  # the prefix is escaped, not a regex
    assert not sel.selects("__consumer_offsets")


def test_a_pattern_with_metacharacters_does_not_name_a_topic():
    assert not TopicSelection(allow=(r"_schema.",)).selects("_schemas")
    assert not TopicSelection(allow=(r"_schema[s]",)).selects("_schemas")
    assert not TopicSelection(allow=(r"__consumer_offset\w",)).selects("__consumer_offsets")

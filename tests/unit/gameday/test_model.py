"""The game day's names and values."""

from __future__ import annotations

import pytest

from kafka_dr.gameday.model import ABORTED, ACKED, GamedayNames, Ledger, Produced, gd_id, identify, parse_id


def test_names_all_start_with_the_prefix():
    n = GamedayNames(prefix="gdx")
    assert n.topics == ("gdx.keyed", "gdx.second", "gdx.compacted", "gdx.txn")
    assert n.group("east") == "gdx-app-east" and n.transactional_id("west") == "gdx.txn.west"
    assert n.partitions(n.keyed_topic) == 4 and n.partitions(n.second_topic) == 2
    assert n.topic_config(n.compacted_topic)["cleanup.policy"] == "compact"
    assert n.topic_config(n.keyed_topic) == {}


def test_keys_cycle_through_a_small_key_space_per_app():
    n = GamedayNames(key_space=3, compacted_keys=2)
    assert [n.key("east", n.keyed_topic, s) for s in range(4)] == ["east-k0", "east-k1", "east-k2", "east-k0"]
    assert n.key("west", n.compacted_topic, 3) == "west-c1"


def test_ids_round_trip_and_a_bad_one_is_named():
    assert parse_id(gd_id("east", "gd.keyed", 42)) == ("east", "gd.keyed", 42)
    with pytest.raises(ValueError, match="'east:gd.keyed'"):
        parse_id("east:gd.keyed")


def test_identify_reads_the_id_and_the_origin():
    assert identify([("gd.id", b"east:gd.keyed:1"), ("gd.seq", b"1")], "east") == ("east:gd.keyed:1", "east")
    copied = [("gd.id", b"east:gd.keyed:1"), ("dr.origin", b"east"), ("dr.origin.part", b"0")]
    assert identify(copied, "west") == ("east:gd.keyed:1", "east")
    compact = [("gd.id", b"east:gd.keyed:1"), ("dr.prov", b"1 east gd.keyed 0 1 5")]
    assert identify(compact, "west") == ("east:gd.keyed:1", "east")
    assert identify(None, "west") == ("", "west")


def test_ledger_keeps_each_fate_and_a_bounded_error_list():
    ledger = Ledger()
    ledger.record(Produced("east:t:0", "east", "t", "east-k0", 0, "east", ACKED, 1.0, 1.1, 0, 0))
    ledger.record(Produced("east:t:1", "east", "t", "east-k1", 1, "east", ABORTED, 1.0))
    for i in range(1005):
        ledger.error("east", f"down {i}")
    view = ledger.view()
    assert view.counts() == {"acked": 1, "aborted": 1, "uncertain": 0}
    assert view.known("east:t:1") and not view.known("east:t:2")
    assert len(view.errors) == 1000 and ledger.error_count == 1005

"""The read log the game day's consumer groups share (no Kafka)."""

from __future__ import annotations

from kafka_dr.gameday.model import Move, Read
from kafka_dr.gameday.readers import ReadLog


def _read(gd: str, cluster: str, at: float, group: str = "gd-app-east") -> Read:
    return Read(gd, group, cluster, "gd.keyed", 0, 0, at, cluster)


def test_the_first_read_after_a_move_is_the_first_on_its_target():
    log = ReadLog()
    log.add("gd-app-east", [_read("east:gd.keyed:0", "east", 10.0)])
    log.moved(Move("gd-app-east", "east", "west", 19.0, 20.0))
    log.add("gd-app-west", [_read("west:gd.keyed:0", "west", 21.0, group="gd-app-west")])  # another group
    assert log.moves()[0].first_read_at is None
    log.add("gd-app-east", [_read("west:gd.keyed:0", "west", 22.0), _read("west:gd.keyed:1", "west", 23.0)])
    log.add("gd-app-east", [_read("west:gd.keyed:2", "west", 24.0)])
    assert log.moves()[0].first_read_at == 22.0


def test_unread_is_per_group():
    log = ReadLog()
    log.add("gd-app-east", [_read("east:gd.keyed:0", "east", 1.0)])
    assert log.unread("gd-app-east", ["east:gd.keyed:0", "east:gd.keyed:1"]) == {"east:gd.keyed:1"}
    assert log.unread("gd-app-west", ["east:gd.keyed:0"]) == {"east:gd.keyed:0"}

"""The suite's independent game-day check (tests/gameday_checks.py) fails where it must: a
cluster that lacks one acknowledged record, one that holds a record twice, an aborted record
visible, a group that was never handed one record; re-reads are counted per window."""

from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace

from gameday_checks import AppRecords, cluster_figures, gd_ids, group_figures, load_app_records, move_rereads

APPS = AppRecords(
    acked={"east:gd.keyed:0": "gd.keyed", "east:gd.keyed:1": "gd.keyed", "west:gd.txn:0": "gd.txn"},
    aborted=frozenset({"west:gd.txn:1"}),
    reads={
        "gd-app-east": [
            (1.0, "east:gd.keyed:0"),
            (2.0, "west:gd.txn:0"),
            (3.0, "east:gd.keyed:0"),  # handed again before the group moved
            (11.0, "east:gd.keyed:0"),  # and twice after its first move
            (12.0, "west:gd.txn:0"),
            (13.0, "east:gd.keyed:1"),
        ]
    },
    moves={"gd-app-east": [10.0, 20.0]},
)
WHOLE = Counter({"east:gd.keyed:0": 1, "east:gd.keyed:1": 1, "west:gd.txn:0": 1})


def test_a_cluster_holding_every_acknowledged_record_once_passes():
    assert cluster_figures(APPS, WHOLE) == {"acked": 3, "lost": 0, "duplicated": 0, "aborted_present": 0}


def test_a_cluster_lacking_one_acknowledged_record_fails():
    held = WHOLE - Counter({"west:gd.txn:0": 1})
    assert cluster_figures(APPS, held)["lost"] == 1


def test_a_cluster_holding_a_record_twice_fails():
    held = WHOLE + Counter({"east:gd.keyed:1": 1})
    assert cluster_figures(APPS, held)["duplicated"] == 1


def test_a_visible_aborted_record_fails():
    assert cluster_figures(APPS, WHOLE + Counter({"west:gd.txn:1": 1}))["aborted_present"] == 1


def test_a_group_handed_every_record_skipped_none_and_its_rereads_are_counted_per_window():
    figures = group_figures(APPS, "gd-app-east")
    assert figures == {"handed": 6, "skipped": 0, "aborted_delivered": 0, "rereads_by_window": [1, 2, 0]}


def test_a_group_never_handed_one_record_skipped_it():
    apps = AppRecords(APPS.acked, APPS.aborted, {"gd-app-east": APPS.reads["gd-app-east"][:-1]}, APPS.moves)
    assert group_figures(apps, "gd-app-east")["skipped"] == 1
    assert group_figures(apps, "gd-app-west")["skipped"] == 3  # a group that read nothing skipped everything


def test_a_group_handed_an_aborted_record_fails():
    apps = AppRecords(APPS.acked, APPS.aborted, {"g": [(1.0, "west:gd.txn:1")]}, {})
    assert group_figures(apps, "g")["aborted_delivered"] == 1


def test_records_are_identified_by_their_gd_id_header_and_the_game_days_files_load(tmp_path):
    records = [
        SimpleNamespace(headers=[("gd.id", b"east:gd.keyed:0"), ("dr.prov", b"x")]),
        SimpleNamespace(headers=[("gd.id", b"east:gd.keyed:0")]),
        SimpleNamespace(headers=None),
    ]
    assert gd_ids(records) == Counter({"east:gd.keyed:0": 2})

    produced = [
        {"gd_id": "east:gd.keyed:0", "topic": "gd.keyed", "fate": "acked"},
        {"gd_id": "east:gd.compacted:0", "topic": "gd.compacted", "fate": "acked"},
        {"gd_id": "west:gd.txn:1", "topic": "gd.txn", "fate": "aborted"},
        {"gd_id": "west:gd.keyed:5", "topic": "gd.keyed", "fate": "uncertain"},
    ]
    (tmp_path / "produced.jsonl").write_text("".join(json.dumps(p) + "\n" for p in produced))
    reads = [
        {"group": "g", "gd_id": "east:gd.keyed:0", "at": 2.0, "cluster": "east"},
        {"group": "g", "gd_id": "x", "at": 1.0, "cluster": "east"},
    ]
    (tmp_path / "reads.jsonl").write_text("".join(json.dumps(r) + "\n" for r in reads))
    (tmp_path / "moves.json").write_text(json.dumps([{"group": "g", "at": 5.0, "source": "east"}]))
    apps = load_app_records(tmp_path, compacted_topic="gd.compacted")
    assert apps.acked == {"east:gd.keyed:0": "gd.keyed"} and apps.aborted == {"west:gd.txn:1"}
    assert apps.reads == {"g": [(1.0, "x"), (2.0, "east:gd.keyed:0")]} and apps.moves == {"g": [5.0]}


def test_what_the_game_day_writes_is_what_the_check_reads(tmp_path):
    from kafka_dr.gameday.model import LedgerView, Move, Produced, Read
    from kafka_dr.gameday.records import write_app_records

    acked = Produced("east:gd.keyed:0", "east", "gd.keyed", "east-k0", 0, "east", "acked", 1.0, 1.1, 2, 7)
    aborted = Produced("west:gd.txn:3", "west", "gd.txn", "west-k3", 3, "west", "aborted", 1.0)
    view = LedgerView({acked.gd_id: acked}, {aborted.gd_id: aborted}, {})
    reads = [Read("east:gd.keyed:0", "gd-app-east", "east", "gd.keyed", 2, 7, 4.0, "east")]
    moves = [Move("gd-app-east", "east", "west", 5.0, 6.0, 7.0)]
    write_app_records(tmp_path, view, reads, moves)
    apps = load_app_records(tmp_path, compacted_topic="gd.compacted")
    assert apps == AppRecords(
        {"east:gd.keyed:0": "gd.keyed"},
        frozenset({"west:gd.txn:3"}),
        {"gd-app-east": [(4.0, "east:gd.keyed:0")]},
        {"gd-app-east": [6.0]},
        {"gd-app-east": [(4.0, "east:gd.keyed:0", "east")]},
        {"gd-app-east": ["east"]},
    )


def test_a_moves_rereads_are_set_against_what_the_group_read_in_the_window_before_it_left():
    reads = [
        (1.0, "a", "east"),
        (5.0, "b", "east"),
        (7.0, "c", "east"),  # the last read on east: a 3 s window holds b and c
        (12.0, "b", "west"),  # after the move at 10: read again
        (13.0, "c", "west"),
        (14.0, "d", "west"),
        (21.0, "d", "east"),  # after the move home at 20
    ]
    apps = AppRecords({}, frozenset(), {}, {"g": [10.0, 20.0]}, {"g": reads}, {"g": ["east", "west"]})
    assert move_rereads(apps, "g", window_s=3.0) == [
        {"observed": 2, "window_worth": 2},
        {"observed": 1, "window_worth": 1},
    ]

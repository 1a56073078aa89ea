"""Internal records carry their format; a reader stops with one line at a newer one."""

from __future__ import annotations

import json

import pytest

from kafka_dr import __version__
from kafka_dr.core import dr_runs, parity, progress
from kafka_dr.core.dr_state import DrState
from kafka_dr.core.formats import FORMAT, NewerFormat, readable, stamped
from kafka_dr.core.heartbeat import Heartbeat


def test_a_record_without_a_format_is_read_as_format_one():
    assert readable({"cluster": "east"}, "a heartbeat") == {"cluster": "east"}
    assert Heartbeat.decode(b'{"cluster":"east","emitted_ms":5}') == Heartbeat("east", 5)
    assert DrState.decode(b'{"version":3,"active_cluster":"west"}').version == 3


def test_every_writer_stamps_its_format_and_its_reader_reads_it_back():
    assert json.loads(Heartbeat("east", 5).encode())["fmt"] == FORMAT
    assert Heartbeat.decode(Heartbeat("east", 5).encode()) == Heartbeat("east", 5)
    state = DrState(4, "west", failed_clusters=("east",))
    assert DrState.decode(state.encode()) == state
    assert progress.decode_metadata(progress.encode_metadata("orders", 7)) == {"src": "orders", "ts": 7, "fmt": 1}
    report = {"from": "east", "to": "west", "verdict": parity.READY}
    assert parity.decode(parity.encode(report)) == report


@pytest.mark.parametrize(
    "read",
    [
        lambda v: Heartbeat.decode(v),
        lambda v: DrState.decode(v),
        lambda v: progress.decode_metadata(v.decode()),
        lambda v: dr_runs.newest_by_kind([json.loads(v)]),
    ],
    ids=["heartbeat", "state", "progress", "dr-runs"],
)
def test_a_newer_format_stops_the_reader_with_one_line_naming_both_versions(read):
    newer = json.dumps(
        {"fmt": FORMAT + 1, "cluster": "east", "emitted_ms": 1, "version": 1, "kind": "failover", "finished_ms": 1}
    ).encode()
    with pytest.raises(NewerFormat) as e:
        read(newer)
    line = str(e.value)
    assert "\n" not in line
    assert f"format {FORMAT + 1}" in line and f"({__version__}) reads format {FORMAT}" in line


def test_stamped_adds_the_format_and_keeps_the_fields():
    assert stamped({"a": 1}) == {"a": 1, "fmt": FORMAT}

"""Decoding ``__consumer_offsets`` records, from bytes laid out as the group coordinator writes
them (key type, then each field; every value version)."""

from __future__ import annotations

import struct

import pytest

from kafka_dr.core.group_commits import GroupCommit, decode_commit, positions_to_sync
from kafka_dr.core.offsets import sync_commit_metadata


def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def _compact(text: str) -> bytes:
    raw = text.encode()
    return bytes([len(raw) + 1]) + raw  # every length here is below 127: a one-byte varint


def key(group: str, topic: str, partition: int, kind: int = 1) -> bytes:
    return struct.pack(">h", kind) + _s(group) + _s(topic) + struct.pack(">i", partition)


def value(version: int, offset: int, metadata: str, ts: int) -> bytes:
    out = struct.pack(">hq", version, offset)
    if version >= 3:
        out += struct.pack(">i", 7)  # leader epoch
    out += _compact(metadata) if version >= 4 else _s(metadata)
    out += struct.pack(">q", ts)
    if version == 1:
        out += struct.pack(">q", ts + 1000)  # expire timestamp
    if version >= 4:
        out += b"\x00"  # no tagged fields
    return out


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_every_value_version_gives_offset_metadata_and_time(version):
    got = decode_commit(key("app", "orders", 3), value(version, 1234, "meta", 1_700_000_000_000))
    assert got == GroupCommit("app", "orders", 3, 1234, "meta", 1_700_000_000_000)


def test_the_nul_librdkafka_ends_its_metadata_with_is_not_part_of_it():
    assert decode_commit(key("g", "t", 0), value(4, 5, "first\x00", 1)).metadata == "first"


def test_the_legacy_key_type_is_a_commit_too():
    assert decode_commit(key("g", "t", 0, kind=0), value(3, 5, "", 1)).offset == 5


def test_a_tombstone_is_a_deleted_position():
    assert decode_commit(key("app", "orders", 1), None) == GroupCommit("app", "orders", 1, None)


@pytest.mark.parametrize("kind", [2, 3, 4, 11])
def test_records_of_other_types_are_not_commits(kind):
    assert decode_commit(struct.pack(">h", kind) + _s("app"), b"\x00\x03anything") is None


def test_a_record_shorter_than_its_fields_is_refused_with_where():
    with pytest.raises(ValueError, match=r"__consumer_offsets value of app/orders\[3\]: .* bytes end inside"):
        decode_commit(key("app", "orders", 3), value(3, 1, "meta", 2)[:-4])


def test_positions_to_sync_keep_selected_groups_on_copied_topics_written_by_consumers():
    commits = [
        GroupCommit("app", "orders", 0, 10, ""),
        GroupCommit("app", "orders", 1, 20, "consumer said so"),
        GroupCommit("app", "other", 0, 30, ""),  # a topic the flow does not copy
        GroupCommit("skip-me", "orders", 0, 40, ""),  # a group the config leaves out
        GroupCommit("app2", "orders", 0, None),  # deleted
        GroupCommit("app3", "orders", 0, 50, sync_commit_metadata("west_to_east", 49)),  # the sync's own
    ]
    got = positions_to_sync(commits, lambda t: t == "orders", lambda g: g != "skip-me")
    assert got == {"app": {("orders", 0): 10, ("orders", 1): 20}}

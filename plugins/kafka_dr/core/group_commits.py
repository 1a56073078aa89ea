"""Consumer-group commits as the group coordinator logs them in ``__consumer_offsets``.

The continuous offset sync tails that topic instead of asking every group for its offsets:
a group that commits nothing costs nothing, and a commit is seen within one poll. No
maintained Python library decodes these records, so this module does, for the record types
that carry offsets (the others, group metadata and the newer group types' records, are
skipped by their key type).

Key: int16 record type, then for types 0 and 1 (offset commit) ``group`` (string),
``topic`` (string), ``partition`` (int32). Value: int16 version, then ``offset`` (int64),
``leaderEpoch`` (int32, v3+), ``metadata`` (string), ``commitTimestamp`` (int64),
``expireTimestamp`` (int64, v1 only); v4+ are flexible (compact strings, tagged fields last).
A null value is a tombstone: the group's offset for that partition was deleted.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kafka_dr.core.offsets import is_sync_commit

OFFSET_COMMIT_KEY_TYPES = (0, 1)
COMMITS_TOPIC = "__consumer_offsets"


@dataclass(frozen=True)
class GroupCommit:
    """One group's committed position on one partition; ``offset`` is ``None`` once deleted."""

    group: str
    topic: str
    partition: int
    offset: int | None
    metadata: str = ""
    commit_ts_ms: int | None = None

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.group, self.topic, self.partition)


class _Reader:
    def __init__(self, data: bytes, what: str):
        self.data, self.pos, self.what = data, 0, what

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ValueError(f"{self.what}: {len(self.data)} bytes end inside a field at byte {self.pos}")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def varint(self) -> int:
        shift = value = 0
        while True:
            b = self.take(">B")
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ValueError(f"{self.what}: a varint longer than 5 bytes at byte {self.pos}")

    def string(self, compact: bool = False) -> str:
        n = self.varint() - 1 if compact else self.take(">h")
        if n < 0:
            return ""
        if self.pos + n > len(self.data):
            raise ValueError(f"{self.what}: a {n}-byte string runs past the record's end")
        s = self.data[self.pos : self.pos + n].decode("utf-8", errors="replace")
        self.pos += n
        return s


def decode_commit(key: bytes | None, value: bytes | None) -> GroupCommit | None:
    """The commit a ``__consumer_offsets`` record holds, or ``None`` for a record of another
    type. Raises ``ValueError`` for a record too short for its own fields."""
    if not key or len(key) < 2:
        return None
    k = _Reader(key, "__consumer_offsets key")
    if k.take(">h") not in OFFSET_COMMIT_KEY_TYPES:
        return None
    group, topic, partition = k.string(), k.string(), k.take(">i")
    if value is None:
        return GroupCommit(group, topic, partition, None)
    v = _Reader(value, f"__consumer_offsets value of {group}/{topic}[{partition}]")
    version = v.take(">h")
    offset = v.take(">q")
    if version >= 3:
        v.take(">i")  # leader epoch
    # librdkafka commits its metadata with the C string's terminating NUL: not part of the text
    metadata = v.string(compact=version >= 4).removesuffix("\x00")
    commit_ts = v.take(">q")
    return GroupCommit(group, topic, partition, offset, metadata, commit_ts)


def positions_to_sync(
    commits: Iterable[GroupCommit], topic_synced: Callable[[str], bool], group_synced: Callable[[str], bool]
) -> dict[str, dict[tuple[str, int], int]]:
    """Per group, the source positions to translate: commits of selected groups on topics the
    flow copies, left out those deleted and those the offset sync itself wrote (see
    :func:`kafka_dr.core.offsets.is_sync_commit`)."""
    out: dict[str, dict[tuple[str, int], int]] = {}
    for c in commits:
        if c.offset is None or c.offset < 0 or is_sync_commit(c.metadata):
            continue
        if group_synced(c.group) and topic_synced(c.topic):
            out.setdefault(c.group, {})[(c.topic, c.partition)] = c.offset
    return out

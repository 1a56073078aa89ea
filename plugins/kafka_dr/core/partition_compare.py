"""Whether two clusters hold the same records in one topic-partition: the failback gate's
comparison, pure.

A record is the same on both clusters when its data-quality digest (key, value, own headers,
timestamp) and its origin are the same (:func:`record_identity`). A partition of a delete-policy
topic must hold the same multiset of records; a compacted one only the same latest record per
key, since each cluster's cleaner drops superseded values on its own schedule. A key whose
latest record is a tombstone counts as absent: a cleaner removes the tombstone too, after
``delete.retention.ms``. A key with a record in flight on the survivor is not judged on a
compacted topic: its cleaner may already have dropped the values below the in-flight one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from typing import Protocol

from kafka_dr.core.dq import record_digest
from kafka_dr.core.provenance import Headers, origin_and_topic

Identity = tuple[int, bytes]


class RecordLike(Protocol):
    key: bytes | None
    value: bytes | None
    headers: Headers | None
    timestamp_ms: int
    offset: int


def record_identity(rec: RecordLike, here: str) -> Identity:
    """The record's digest and origin (a record without provenance is ``here``'s own)."""
    origin, _ = origin_and_topic(rec.headers)
    digest = record_digest(rec.key, rec.value, rec.headers, rec.timestamp_ms)
    return digest, origin if origin is not None else here.encode()


def split_in_flight(
    records: Iterable[RecordLike],
    here: str,
    upto: int | None = None,
    skip: Iterable[Identity] = (),
    own_only: bool = False,
) -> tuple[list[tuple[RecordLike, Identity]], list[tuple[RecordLike, Identity]]]:
    """(records compared, records in flight) of one partition, each with its identity.

    On the survivor, records at or past ``upto`` (the copied flow's committed progress) are in
    flight: its producers may still write, and the normal flows copy those after the failback.
    On the recovered cluster, ``skip`` (the survivor's in-flight identities) leaves out the
    originals of its own records that reached the survivor late, one per identity; in
    active/active its own records (``own_only``: not the copies it holds, which are compared
    wherever they are) at or past the flow back's progress are in flight too."""
    compared, in_flight = [], []
    left = Counter(skip)
    mine = here.encode()
    for r in records:
        d = record_identity(r, here)
        if upto is not None and r.offset >= upto and (not own_only or d[1] == mine):
            in_flight.append((r, d))
        elif left[d] > 0:
            left[d] -= 1
        else:
            compared.append((r, d))
    return compared, in_flight


def latest_by_key(
    records: Iterable[RecordLike], here: str, not_judged: Collection[bytes | None] = ()
) -> dict[bytes | None, tuple[Identity, int]]:
    """Key -> (identity, offset) of each key's latest record, keys whose latest is a tombstone
    and ``not_judged`` keys left out. ``records`` in offset order."""
    latest: dict[bytes | None, RecordLike] = {}
    for r in records:
        latest[r.key] = r
    return {
        k: (record_identity(r, here), r.offset)
        for k, r in latest.items()
        if r.value is not None and k not in not_judged
    }


def _show(key: bytes | None) -> str:
    if key is None:
        return "null"
    text = key.decode("utf-8", "backslashreplace")
    return repr(text if len(text) <= 40 else text[:40] + "...")


def latest_differences(
    where: str,
    survivor: str,
    recovered: str,
    s_latest: Mapping[bytes | None, tuple[Identity, int]],
    r_latest: Mapping[bytes | None, tuple[Identity, int]],
) -> list[str]:
    """One line per key whose latest record differs between the clusters (``where``: ``t[p]``)."""
    out = []
    for key in sorted(set(s_latest) | set(r_latest), key=lambda k: (k is not None, k or b"")):
        s, r = s_latest.get(key), r_latest.get(key)
        if s is not None and r is not None and s[0] == r[0]:
            continue
        if r is None:
            out.append(f"{where}: key {_show(key)}: latest {survivor}@{s[1]} missing on {recovered}")  # type: ignore[index]
        elif s is None:
            out.append(f"{where}: key {_show(key)}: {recovered}@{r[1]} not on {survivor} (extra)")
        else:
            out.append(f"{where}: key {_show(key)}: latest differs, {survivor}@{s[1]} vs {recovered}@{r[1]}")
    return out

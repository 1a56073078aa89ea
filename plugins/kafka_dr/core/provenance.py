"""Provenance: where a replicated record started, carried in one header.

Every record a flow writes carries ``dr.prov``, a plain ASCII value (readable with any Kafka
tool) of six space-separated fields::

    1 east orders 3 42 1700000000000

the format version (``1``), the cluster the record was first produced to (config name), its
topic there, its partition there, its offset there (offset translation keys on this) and when
it was first replicated (epoch milliseconds). Cluster and topic names cannot hold a space
(config and Kafka rules), so the fields need no quoting.

Records copied by earlier releases carry the same facts as five headers (``dr.origin``,
``dr.origin.topic``, ``dr.origin.part``, ``dr.origin.offset``, ``dr.origin.ts``); every
reader here takes both forms, so such records keep their meaning and are never given a
second provenance. One header instead of five is less than half the bytes and one value to
format per record in the copier (docs/benchmarks.md).

A record that already has provenance (a second hop in an N-cluster tree) keeps its original
value: provenance always names the first cluster, not the previous hop. ``dr.copy.flags`` is
the copy-flag bitmask of the ``copy_flags`` loop policy.

Header lists are handled as lists of ``(key, value)`` pairs because Kafka headers are
ordered and keys may repeat; the record's own headers are kept exactly, in order, and the
provenance header is appended after them.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

PROVENANCE = "dr.prov"
VERSION = b"1"
COPY_FLAGS = "dr.copy.flags"

# The five-header form, read only.
ORIGIN = "dr.origin"
ORIGIN_TOPIC = "dr.origin.topic"
ORIGIN_PARTITION = "dr.origin.part"
ORIGIN_OFFSET = "dr.origin.offset"
ORIGIN_TS = "dr.origin.ts"
LEGACY_KEYS = (ORIGIN, ORIGIN_TOPIC, ORIGIN_PARTITION, ORIGIN_OFFSET, ORIGIN_TS)

#: A record has provenance when it carries either of these.
ORIGIN_KEYS = frozenset({PROVENANCE, ORIGIN})
PROVENANCE_KEYS = frozenset({PROVENANCE, *LEGACY_KEYS})
#: Every header this product writes or wrote; ``strip_product_headers`` removes exactly these.
PRODUCT_KEYS = PROVENANCE_KEYS | {COPY_FLAGS}

Headers = Sequence[tuple[str, bytes | None]]
#: (cluster, topic, partition, offset, first replicated ms) as they are on the wire; a field
#: the record does not state is ``None``.
RawFields = tuple["bytes | None", "bytes | None", "bytes | None", "bytes | None", "bytes | None"]
#: What ``raw_fields`` gives for a ``dr.prov`` value it cannot read (another version or shape).
MALFORMED: RawFields = (b"?", None, None, None, None)


def encode(cluster: str, topic: str, partition: int, offset: int, first_replicated_ms: int) -> bytes:
    """The ``dr.prov`` value."""
    return b"%b %b %b %d %d %d" % (VERSION, cluster.encode(), topic.encode(), partition, offset, first_replicated_ms)


def _fields_of(value: bytes | None) -> list[bytes] | None:
    """A ``dr.prov`` value's six fields, or ``None`` when it is of another version or shape."""
    parts = (value or b"").split(b" ")
    return parts if len(parts) == 6 and parts[0] == VERSION else None


def raw_fields(headers: Headers | None) -> RawFields | None:
    """The record's provenance fields as bytes, from whichever form it carries, or ``None``
    when it has none. The first of ``dr.prov`` and ``dr.origin`` decides the form. ``dr.prov``:
    a value of another version or shape gives ``MALFORMED``. Five-header form: each key's
    first value."""
    legacy: dict[str, bytes | None] | None = None
    for k, v in headers or ():
        if k == PROVENANCE and (legacy is None or ORIGIN not in legacy):
            parts = _fields_of(v)
            return MALFORMED if parts is None else (parts[1], parts[2], parts[3], parts[4], parts[5])
        if k in PROVENANCE_KEYS:
            if legacy is None:
                legacy = {}
            legacy.setdefault(k, v)
    if legacy is None or ORIGIN not in legacy:
        return None
    return (legacy[ORIGIN] or b"", *(legacy.get(k) for k in LEGACY_KEYS[1:]))  # type: ignore[return-value]


def origin_and_topic(headers: Headers | None) -> tuple[bytes | None, bytes | None]:
    """The origin cluster and topic as bytes (``(None, None)``: no provenance); the loop
    filter's check, without parsing numbers."""
    for k, v in headers or ():
        if k == PROVENANCE:
            parts = _fields_of(v)
            return (b"?", None) if parts is None else (parts[1], parts[2])
        if k == ORIGIN:
            return v or b"", next((tv for tk, tv in headers if tk == ORIGIN_TOPIC), None)  # type: ignore[union-attr]
    return None, None


def origin_cluster(headers: Headers | None) -> str | None:
    """The origin cluster alone (``None``: a locally produced record)."""
    origin, _ = origin_and_topic(headers)
    return None if origin is None else origin.decode(errors="replace")


def has_origin(headers: Headers | None) -> bool:
    """Whether the record carries provenance in either form."""
    return any(k in ORIGIN_KEYS for k, _ in headers or ())


@dataclass(frozen=True)
class Provenance:
    cluster: str
    topic: str
    partition: int
    offset: int
    first_replicated_ms: int

    def to_headers(self) -> list[tuple[str, bytes]]:
        return provenance_headers(self.cluster, self.topic, self.partition, self.offset, self.first_replicated_ms)

    @classmethod
    def from_headers(cls, headers: Headers | None) -> Provenance | None:
        """The record's provenance, or ``None`` when it has none (a locally produced record).

        Raises ``ValueError`` naming the header when provenance is present but malformed: a
        record that claims an origin it cannot state is not something to copy silently. In the
        five-header form a missing field takes a default (topic ``""``, -1, -1, 0).
        """
        fields = raw_fields(headers)
        if fields is None:
            return None
        cluster, topic, partition, offset, ts = fields
        try:
            if fields is MALFORMED:
                raise ValueError(f"not a version {VERSION.decode()} value of six fields")
            return cls(
                cluster=cluster.decode(),  # type: ignore[union-attr]
                topic=(topic or b"").decode(),
                partition=int(partition or b"-1"),
                offset=int(offset or b"-1"),
                first_replicated_ms=int(ts or b"0"),
            )
        except (ValueError, UnicodeDecodeError) as e:
            raise ValueError(f"malformed provenance headers {_named(headers)}: {e}") from None


def _named(headers: Headers | None) -> list[str]:
    return sorted({k for k, _ in headers or () if k in PROVENANCE_KEYS})


def copy_flags(headers: Headers | None) -> int:
    """The copy-flag bitmask; absent means all zeroes (a fresh record)."""
    if headers:
        for k, v in headers:
            if k == COPY_FLAGS:
                return int(v) if v else 0
    return 0


def with_copy_flags(headers: Headers, flags: int) -> list[tuple[str, bytes | None]]:
    """``headers`` with ``dr.copy.flags`` set to ``flags`` (replaced in place if present)."""
    out = []
    done = False
    for k, v in headers:
        if k == COPY_FLAGS:
            if not done:
                out.append((k, str(flags).encode()))
                done = True
        else:
            out.append((k, v))
    if not done:
        out.append((COPY_FLAGS, str(flags).encode()))
    return out


def strip_product_headers(headers: Headers) -> list[tuple[str, bytes | None]]:
    """The record's own headers: everything this product added removed, order kept."""
    return [(k, v) for k, v in headers if k not in PRODUCT_KEYS]


def provenance_headers(
    cluster: str, topic: str, partition: int, offset: int, first_replicated_ms: int
) -> list[tuple[str, bytes]]:
    """``Provenance(...).to_headers()`` without building the value object."""
    return [(PROVENANCE, encode(cluster, topic, partition, offset, first_replicated_ms))]


@functools.lru_cache(maxsize=4096)
def _prefix(cluster: str, topic: str, partition: int) -> bytes:
    return b"%b %b %b %d " % (VERSION, cluster.encode(), topic.encode(), partition)


def provenance_appender(cluster: str):
    """``f(headers, topic, partition, offset, now_ms)`` -> ``[*headers, *provenance_headers(...)]``
    for records copied from ``cluster``, built for the copier's per-record loop: the value's
    start is made once per partition and its end once per ``now_ms`` (the copier's clock
    ticks per fetched batch), so a record costs one list, one formatted value and one tuple."""
    prefixes: dict[tuple[str, int], bytes] = {}
    ts = [None, b""]  # [now_ms, b" <now_ms>"]

    def append(
        headers: Headers | None, topic: str, partition: int, offset: int, now_ms: int
    ) -> list[tuple[str, bytes | None]]:
        p = prefixes.get((topic, partition))
        if p is None:
            p = prefixes[(topic, partition)] = _prefix(cluster, topic, partition)
        if ts[0] != now_ms:
            ts[0], ts[1] = now_ms, b" %d" % now_ms
        out = list(headers) if headers else []
        out.append((PROVENANCE, b"%b%d%b" % (p, offset, ts[1])))
        return out

    return append

"""How many bytes a record takes in Kafka's record batch format (v2, magic 2).

A broker refuses a batch larger than the topic's ``max.message.bytes`` whole, every record in
it. So the copier sizes its producer's batches below the target topic's limit, and a record
counts as too large only when a batch holding it alone is: :func:`own_batch_bytes`, the size
the broker measures when the record travels alone and uncompressed (a producer sends a batch
uncompressed when compression would make it larger). Layout, from Kafka's
``DefaultRecordBatch`` and ``DefaultRecord``::

    batch header (61 bytes): base offset 8, length 4, leader epoch 4, magic 1, crc 4,
        attributes 2, last offset delta 4, first timestamp 8, max timestamp 8,
        producer id 8, producer epoch 2, base sequence 4, record count 4
    record: length varint, attributes 1, timestamp delta varlong, offset delta varint,
        key length varint (-1: null), key, value length varint (-1: null), value,
        header count varint, then per header: key length varint, key (UTF-8),
        value length varint (-1: null), value
"""

from __future__ import annotations

from collections.abc import Sequence

#: the fixed part of a v2 record batch, before its first record
BATCH_HEADER_BYTES = 61


def varint_bytes(n: int) -> int:
    """Bytes of ``n`` as a zigzag-encoded varint (Kafka's varint and varlong)."""
    z = 2 * n if n >= 0 else -2 * n - 1
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size


def _field_bytes(b: bytes | str | None) -> int:
    """A length-prefixed field: its length varint and its bytes (null: the varint of -1)."""
    if b is None:
        return 1
    n = len(b.encode()) if isinstance(b, str) else len(b)
    return varint_bytes(n) + n


def record_bytes(
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | str | None]] | None = (),
    timestamp_delta: int = 0,
    offset_delta: int = 0,
) -> int:
    """The bytes of one record inside a batch, its own length varint included."""
    headers = headers or ()
    body = 1 + varint_bytes(timestamp_delta) + varint_bytes(offset_delta) + _field_bytes(key) + _field_bytes(value)
    body += varint_bytes(len(headers))
    for name, v in headers:
        body += _field_bytes(name) + _field_bytes(v)
    return varint_bytes(body) + body


def own_batch_bytes(
    key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes | str | None]] | None = ()
) -> int:
    """The size of an uncompressed batch holding only this record: what the broker compares
    with the topic's ``max.message.bytes`` when the record travels alone."""
    return BATCH_HEADER_BYTES + record_bytes(key, value, headers)

"""Two Kafka protocol requests sent by hand, to put a broker into a state real clients only
reach through rare races: a transactional offset commit that no open transaction owns.

A target restart with commits in flight can leave a flow's progress group with a pending
transactional offset commit and no transaction ongoing, so every ``read_committed``
(``require_stable``) read of that partition's progress times out. Tests recreate it with
``InitProducerId`` followed by a ``TxnOffsetCommit`` without ``AddOffsetsToTxn`` (which the
broker accepts only with ``transaction.partition.verification.enable=false``).

Test support only; the product never speaks the wire protocol itself.
"""

from __future__ import annotations

import socket
import struct
import time

INIT_PRODUCER_ID, TXN_OFFSET_COMMIT = 22, 28


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _call(bootstrap: str, api_key: int, version: int, body: bytes) -> bytes:
    """One request (header v1, non-flexible versions only) and its response body."""
    host, port = bootstrap.rsplit(":", 1)
    request = struct.pack(">hhi", api_key, version, 1) + _string("kafka-dr-tests") + body
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", _read(s, 4))[0]
        return _read(s, size)[4:]  # minus the correlation id


def _read(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk
    return buf


def init_producer_id(bootstrap: str, transactional_id: str) -> tuple[int, int]:
    """(producer id, epoch) for ``transactional_id`` (v1); retries while the coordinator loads."""
    for _ in range(30):
        _, error, pid, epoch = struct.unpack(
            ">ihqh", _call(bootstrap, INIT_PRODUCER_ID, 1, _string(transactional_id) + struct.pack(">i", 60_000))[:16]
        )
        if error == 0:
            return pid, epoch
        time.sleep(1)
    raise RuntimeError(f"InitProducerId({transactional_id}) kept failing with error {error}")


def txn_offset_commit(
    bootstrap: str,
    transactional_id: str,
    group: str,
    producer: tuple[int, int],
    topic: str,
    partition: int,
    offset: int,
) -> int:
    """A bare ``TxnOffsetCommit`` (v2) of one partition's offset; returns its error code."""
    body = (
        _string(transactional_id)
        + _string(group)
        + struct.pack(">qh", *producer)
        + struct.pack(">i", 1)
        + _string(topic)
        + struct.pack(">i", 1)
        + struct.pack(">iqi", partition, offset, -1)
        + struct.pack(">h", -1)
    )
    r = _call(bootstrap, TXN_OFFSET_COMMIT, 2, body)
    at = 8  # throttle time, topic count
    at += 2 + struct.unpack(">h", r[at : at + 2])[0] + 4  # topic name, partition count
    return struct.unpack(">ih", r[at : at + 6])[1]


def orphaned_progress_commit(
    bootstrap: str, transactional_id: str, group: str, topic: str, partition: int, offset: int
) -> None:
    """Leave the state a target restart once left: a pending transactional offset commit of
    ``transactional_id`` that no transaction owns (the broker's transaction verification must be
    off: :func:`transaction_verification`)."""
    producer = init_producer_id(bootstrap, transactional_id)
    error = txn_offset_commit(bootstrap, transactional_id, group, producer, topic, partition, offset)
    assert error == 0, f"TxnOffsetCommit answered error {error}"


def transaction_verification(admin, enabled: bool | None) -> None:
    """Set the broker's ``transaction.partition.verification.enable`` (None: back to its
    default). Off, it accepts a ``TxnOffsetCommit`` outside a transaction. Takes a moment to
    apply: set it well before it is needed."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    broker = str(next(iter(admin.list_topics(timeout=10).brokers)))
    op = AlterConfigOpType.DELETE if enabled is None else AlterConfigOpType.SET
    value = "" if enabled is None else str(enabled).lower()
    res = ConfigResource(
        ResourceType.BROKER,
        broker,
        incremental_configs=[ConfigEntry("transaction.partition.verification.enable", value, incremental_operation=op)],
    )
    admin.incremental_alter_configs([res])[res].result()

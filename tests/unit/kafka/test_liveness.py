"""A cluster whose every bootstrap address refuses connections is down at once; anything else
is left to the Kafka client."""

from __future__ import annotations

import socket

from kafka_dr.kafka.liveness import addresses, nothing_listens


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_bootstrap_lists_are_read_with_and_without_a_protocol_and_with_v6():
    assert addresses("a:9092, PLAINTEXT://b:9093,[::1]:9094") == [("a", 9092), ("b", 9093), ("::1", 9094)]
    assert addresses("a:9092,oops") == []  # not judged here at all


def test_every_address_refusing_means_nothing_listens():
    one, two = _closed_port(), _closed_port()
    assert nothing_listens(f"127.0.0.1:{one},127.0.0.1:{two}")


def test_one_address_that_accepts_is_enough_to_ask_the_kafka_client():
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert not nothing_listens(f"127.0.0.1:{_closed_port()},127.0.0.1:{port}")


def test_an_address_that_cannot_be_reached_is_not_a_refusal():
    # a name that does not resolve (RFC 6761): the Kafka client's timeout decides, not a refusal
    assert not nothing_listens(f"no-such-broker.invalid:9092,127.0.0.1:{_closed_port()}", timeout=0.2)


def test_an_unreadable_list_is_never_called_down():
    assert not nothing_listens("")
    assert not nothing_listens("host-without-port")

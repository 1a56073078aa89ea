"""A record's size in Kafka's record batch format v2 (kafka_dr.core.record_batch): what a broker
compares with a topic's max.message.bytes when the record travels alone."""

import pytest

from kafka_dr.core.record_batch import BATCH_HEADER_BYTES, own_batch_bytes, record_bytes, varint_bytes


@pytest.mark.parametrize(
    "n, size",
    [
        (0, 1),
        (-1, 1),
        (63, 1),
        (-64, 1),
        (64, 2),
        (-65, 2),
        (8191, 2),
        (8192, 3),
        (2**31 - 1, 5),
        (-(2**31), 5),
        (1_700_000_000_000, 6),
        (2**63 - 1, 10),
    ],
)
def test_varints_are_zigzag_encoded(n, size):
    assert varint_bytes(n) == size


def test_an_empty_record_is_seven_bytes_and_its_batch_sixty_eight():
    # length 1, attributes 1, timestamp delta 1, offset delta 1, key -1: 1, value -1: 1, no headers: 1
    assert record_bytes(None, None) == 7
    assert own_batch_bytes(None, None) == BATCH_HEADER_BYTES + 7 == 68
    assert own_batch_bytes(b"", b"") == 68  # empty is not null, but -1 and 0 are both one byte


def test_key_value_and_headers_with_a_null_value():
    """Checked against a broker: a topic with max.message.bytes 5084 took this record alone,
    one with 5083 refused it (uncompressed, and lz4 that could not make it smaller)."""
    headers = [("a", b"xyz"), ("nul", None)]
    # body: 1 + 1 + 1 + key (1 + 3) + value (2 + 5000) + count 1 + a (1 + 1 + 1 + 3) + nul (1 + 3 + 1) = 5021
    assert record_bytes(b"kkk", b"v" * 5000, headers) == 2 + 5021
    assert own_batch_bytes(b"kkk", b"v" * 5000, headers) == 5084


def test_the_length_varints_grow_at_their_boundaries():
    assert record_bytes(None, b"x" * 57) == 1 + 63  # body 63: length fits one byte
    assert record_bytes(None, b"x" * 58) == 2 + 64  # body 64: two
    assert record_bytes(None, b"x" * 63) == 2 + 69  # value length 63: one byte
    assert record_bytes(None, b"x" * 64) == 2 + 71  # value length 64: two


def test_header_names_and_text_values_count_in_utf8_and_repeats_count_twice():
    assert record_bytes(None, None, [("é", "ü")]) == 7 + (1 + 2) + (1 + 2)
    assert record_bytes(None, None, [("h", b"1"), ("h", b"1")]) == 7 + 2 * 4


def test_deltas_are_varints_too():
    assert record_bytes(None, None, timestamp_delta=64, offset_delta=1) == 8

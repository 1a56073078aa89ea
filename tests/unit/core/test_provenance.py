"""Provenance: the ``dr.prov`` header to and from the wire, the five-header form earlier
releases wrote read the same, first occurrence wins, copy flags, stripping."""

from __future__ import annotations

import pytest

from kafka_dr.core.provenance import (
    COPY_FLAGS,
    PRODUCT_KEYS,
    PROVENANCE_KEYS,
    Provenance,
    copy_flags,
    has_origin,
    origin_and_topic,
    origin_cluster,
    strip_product_headers,
    with_copy_flags,
)

P = Provenance("east", "orders", 3, 42, 1_700_000_000_000)
COMPACT = [("dr.prov", b"1 east orders 3 42 1700000000000")]
#: the same provenance in the five-header form of earlier releases
P_HEADERS = [
    ("dr.origin", b"east"),
    ("dr.origin.topic", b"orders"),
    ("dr.origin.part", b"3"),
    ("dr.origin.offset", b"42"),
    ("dr.origin.ts", b"1700000000000"),
]
USER = [("trace", b"t1"), ("trace", b"t2"), ("nil", None), ("bin", b"\x00\xff\xfe")]


def test_header_names_are_the_documented_ones():
    assert PROVENANCE_KEYS == {
        "dr.prov",
        "dr.origin",
        "dr.origin.topic",
        "dr.origin.part",
        "dr.origin.offset",
        "dr.origin.ts",
    }
    assert PRODUCT_KEYS == PROVENANCE_KEYS | {"dr.copy.flags"}
    assert COPY_FLAGS == "dr.copy.flags"


def test_to_headers_is_one_plain_ascii_header_version_first():
    assert P.to_headers() == COMPACT


def test_both_forms_read_the_same():
    assert Provenance.from_headers(COMPACT) == Provenance.from_headers(P_HEADERS) == P
    for form in (COMPACT, P_HEADERS):
        assert origin_cluster(USER + form) == "east"
        assert origin_and_topic(form + USER) == (b"east", b"orders")
        assert has_origin(USER + form)
    assert not has_origin(USER) and not has_origin(None)
    assert not has_origin([("dr.origin.offset", b"42")])  # without its cluster no field is provenance


def test_the_first_form_named_wins():
    west = Provenance("west", "other", 7, 99, 5).to_headers()
    assert Provenance.from_headers(COMPACT + P_HEADERS) == P
    assert Provenance.from_headers(west + P_HEADERS) == Provenance("west", "other", 7, 99, 5)
    assert Provenance.from_headers(P_HEADERS + west) == P
    assert origin_and_topic(P_HEADERS + west) == (b"east", b"orders")
    assert origin_and_topic(west + P_HEADERS) == (b"west", b"other")


@pytest.mark.parametrize(
    "value",
    [b"", b"2 east orders 3 42 1700000000000", b"1 east orders 3 42", b"1 east orders 3 42 17 extra", b"east"],
)
def test_a_dr_prov_value_of_another_version_or_shape_raises_naming_it(value):
    with pytest.raises(ValueError) as e:
        Provenance.from_headers([("dr.prov", value)])
    assert str(e.value).startswith("malformed provenance headers ['dr.prov']: "), str(e.value)
    assert has_origin([("dr.prov", value)])  # still a copy: never copied back as a local record
    assert origin_and_topic([("dr.prov", value)]) == (b"?", None)


@pytest.mark.parametrize("value", [b"1 east orders three 42 0", b"1 east orders 3 4.2 0", b"1 \xff orders 3 42 0"])
def test_a_dr_prov_value_with_a_bad_field_raises(value):
    with pytest.raises(ValueError, match=r"^malformed provenance headers \['dr.prov'\]: "):
        Provenance.from_headers([("dr.prov", value)])


def test_round_trip():
    assert Provenance.from_headers(P.to_headers()) == P
    big = Provenance("north-2", "payments.eu", 0, 9_007_199_254_740_993, 0)
    assert Provenance.from_headers(big.to_headers()) == big


def test_round_trip_among_user_headers_in_any_order():
    headers = [USER[0], *reversed(P_HEADERS), *USER[1:], (COPY_FLAGS, b"3")]
    assert Provenance.from_headers(headers) == P


@pytest.mark.parametrize("headers", [None, [], USER, [(COPY_FLAGS, b"1")], [("dr.origin.offset", b"42")]])
def test_no_origin_header_means_no_provenance(headers):
    # without dr.origin the record is local, whatever else it carries
    assert Provenance.from_headers(headers) is None


def test_first_occurrence_wins():
    second = Provenance("west", "other", 7, 99, 5).to_headers()
    assert Provenance.from_headers(P_HEADERS + second) == P
    # interleaved: each key's first value wins independently
    mixed = [("dr.origin.offset", b"42"), ("dr.origin", b"east"), ("dr.origin.offset", b"43"), ("dr.origin", b"west")]
    assert Provenance.from_headers(mixed) == Provenance("east", "", -1, 42, 0)


def test_missing_fields_take_defaults():
    assert Provenance.from_headers([("dr.origin", b"east")]) == Provenance("east", "", -1, -1, 0)


@pytest.mark.parametrize(
    "key, bad",
    [
        ("dr.origin.part", b"three"),
        ("dr.origin.offset", b"4.2"),
        ("dr.origin.offset", b"0x2a"),
        ("dr.origin.ts", b"yesterday"),
        ("dr.origin", b"\xff\xfe"),
        ("dr.origin.topic", b"\xc3"),
    ],
)
def test_malformed_values_raise_naming_the_headers(key, bad):
    headers = [(k, bad if k == key else v) for k, v in P_HEADERS]
    with pytest.raises(ValueError) as e:
        Provenance.from_headers(headers)
    msg = str(e.value)
    assert msg.startswith(
        "malformed provenance headers ['dr.origin', 'dr.origin.offset', 'dr.origin.part', "
        "'dr.origin.topic', 'dr.origin.ts']: "
    ), msg


def test_a_malformed_later_duplicate_is_ignored():
    assert Provenance.from_headers(P_HEADERS + [("dr.origin.offset", b"garbage")]) == P


def test_origin_cluster():
    assert origin_cluster(COMPACT) == "east"
    assert origin_cluster(P_HEADERS) == "east"
    assert origin_cluster(USER + [("dr.origin", b"west"), ("dr.origin", b"east")]) == "west"
    assert origin_cluster([("dr.origin", None)]) == ""
    assert origin_cluster(USER) is None
    assert origin_cluster([]) is None
    assert origin_cluster(None) is None


def test_copy_flags_reads_the_first_header_absent_is_zero():
    assert copy_flags(None) == 0
    assert copy_flags([]) == 0
    assert copy_flags(USER) == 0
    assert copy_flags([(COPY_FLAGS, b"5")]) == 5
    assert copy_flags([(COPY_FLAGS, None)]) == 0
    assert copy_flags([(COPY_FLAGS, b"")]) == 0
    assert copy_flags([("x", b"1"), (COPY_FLAGS, b"2"), (COPY_FLAGS, b"1")]) == 2


def test_with_copy_flags_replaces_in_place_keeping_order():
    headers = [("a", b"1"), (COPY_FLAGS, b"1"), ("b", None)]
    assert with_copy_flags(headers, 3) == [("a", b"1"), (COPY_FLAGS, b"3"), ("b", None)]
    assert headers == [("a", b"1"), (COPY_FLAGS, b"1"), ("b", None)]  # input untouched


def test_with_copy_flags_appends_when_absent():
    assert with_copy_flags([("a", b"1"), ("a", b"2")], 2) == [("a", b"1"), ("a", b"2"), (COPY_FLAGS, b"2")]
    assert with_copy_flags([], 1) == [(COPY_FLAGS, b"1")]


def test_with_copy_flags_collapses_duplicates_at_the_first_position():
    headers = [(COPY_FLAGS, b"1"), ("a", b"x"), (COPY_FLAGS, b"2"), ("b", b"y"), (COPY_FLAGS, b"4")]
    assert with_copy_flags(headers, 7) == [(COPY_FLAGS, b"7"), ("a", b"x"), ("b", b"y")]


def test_with_copy_flags_round_trips_through_copy_flags():
    assert copy_flags(with_copy_flags(USER, 0b1011)) == 0b1011


def test_strip_product_headers_keeps_the_records_own_headers_exactly():
    headers = [USER[0], *P_HEADERS[:2], USER[1], (COPY_FLAGS, b"3"), USER[2], *P_HEADERS[2:], USER[3]]
    assert strip_product_headers(headers) == USER
    assert strip_product_headers(P_HEADERS + [(COPY_FLAGS, b"1")]) == []
    assert strip_product_headers([]) == []
    # look-alikes are the user's, not ours
    look_alikes = [("dr.origin2", b"x"), ("DR.ORIGIN", b"y"), ("dr.copy", b"z")]
    assert strip_product_headers(look_alikes) == look_alikes


def test_strip_after_adding_provenance_gives_back_the_original():
    assert strip_product_headers(with_copy_flags([*USER, *P.to_headers()], 1)) == USER
    assert strip_product_headers([*USER, *COMPACT, *P_HEADERS]) == USER


def test_the_copiers_appender_writes_exactly_what_provenance_headers_says():
    """The per-record fast path (cached per partition and per clock tick) must not drift from
    the reference builder, whatever order partitions, offsets and clock ticks come in."""
    from kafka_dr.core.provenance import provenance_appender, provenance_headers

    add = provenance_appender("east")
    own = [("h", b"1"), ("h", None), ("bin", b"\x00\xff")]
    cases = [
        (own, "t", 0, 5, 1000),
        (None, "t", 0, 6, 1000),
        ([], "t", 1, 7, 1000),
        (own, "u", 0, 8, 1001),
        (own, "t", 0, 9, 1000),
        (None, "t", 1, 10, 999),
    ]
    for headers, topic, partition, offset, now_ms in cases:
        expected = [*(headers or ()), *provenance_headers("east", topic, partition, offset, now_ms)]
        got = add(headers, topic, partition, offset, now_ms)
        assert got == expected, (headers, topic, partition, offset, now_ms)
    assert own == [("h", b"1"), ("h", None), ("bin", b"\x00\xff")]  # the record's own list is not changed

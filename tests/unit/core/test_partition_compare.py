"""The failback gate's per-partition comparison: records, and the latest per key on compacted topics."""

from __future__ import annotations

from dataclasses import dataclass

from kafka_dr.core.dq import is_compacted, key_digest
from kafka_dr.core.partition_compare import latest_by_key, latest_differences, record_identity
from kafka_dr.core.provenance import Provenance


def prov(cluster: str) -> list:
    return Provenance(cluster, "t", 0, 0, 0).to_headers()


@dataclass
class Rec:
    key: bytes | None
    value: bytes | None
    offset: int
    headers: list | None = None
    timestamp_ms: int = 1000


def test_identity_is_digest_and_origin():
    legacy = Rec(b"k", b"v", 7, headers=[("dr.origin", b"east")])  # the five-header form of earlier releases
    assert record_identity(legacy, "west")[1] == b"east"
    own = Rec(b"k", b"v", 0)
    copy = Rec(b"k", b"v", 7, headers=prov("east"))
    assert record_identity(own, "east") == record_identity(copy, "west")
    assert record_identity(own, "west") != record_identity(copy, "west")
    assert record_identity(Rec(b"k", b"w", 0), "east")[0] != record_identity(own, "east")[0]


def test_latest_by_key_keeps_the_last_record_and_drops_deleted_keys():
    recs = [Rec(b"a", b"1", 0), Rec(b"b", b"1", 1), Rec(b"a", b"2", 2), Rec(b"b", None, 3), Rec(b"c", b"1", 4)]
    latest = latest_by_key(recs, "east")
    assert {k: off for k, (_, off) in latest.items()} == {b"a": 2, b"c": 4}


def test_compaction_on_one_side_only_is_no_difference():
    full = [Rec(b"a", b"1", 0), Rec(b"a", b"2", 1), Rec(b"b", b"1", 2), Rec(b"b", None, 3)]
    cleaned = [Rec(b"a", b"2", 1)]  # the cleaner ran, and delete.retention.ms passed
    s, r = latest_by_key(full, "east"), latest_by_key(cleaned, "east")
    assert latest_differences("t[0]", "west", "east", s, r) == []


def test_each_kind_of_difference_is_named_with_key_and_offsets():
    survivor = [Rec(b"a", b"2", 5), Rec(b"b", b"1", 6), Rec(b"x" * 50, b"1", 7)]
    recovered = [Rec(b"a", b"1", 3), Rec(b"c", b"1", 4), Rec(b"x" * 50, b"1", 9)]
    lines = latest_differences(
        "t[2]", "west", "east", latest_by_key(survivor, "west"), latest_by_key(recovered, "west")
    )
    assert lines == [
        "t[2]: key 'a': latest differs, west@5 vs east@3",
        "t[2]: key 'b': latest west@6 missing on east",
        "t[2]: key 'c': east@4 not on west (extra)",
    ]


def test_compacted_policies():
    assert is_compacted("compact") and is_compacted("delete, compact") and is_compacted("compact,delete")
    assert not is_compacted("delete") and not is_compacted(None) and not is_compacted("")


def test_key_digest_is_stable_positive_and_null_aware():
    assert key_digest(None) is None
    assert key_digest(b"k") == key_digest(b"k") != key_digest(b"K")
    assert 0 <= key_digest(b"k") < 1 << 63
    assert key_digest(b"") is not None


def test_records_past_the_progress_are_in_flight_and_left_out_on_both_sides():
    from kafka_dr.core.partition_compare import split_in_flight

    survivor = [
        Rec(b"a", b"1", 0),
        Rec(b"b", b"1", 1, headers=prov("east")),  # east's own record, copied to west
        Rec(b"c", b"1", 2),  # past the progress: not on east yet
        Rec(b"d", b"1", 3, headers=prov("east")),  # east's, reached west late
    ]
    recovered = [Rec(b"a", b"1", 0, headers=prov("west")), Rec(b"b", b"1", 1), Rec(b"d", b"1", 2)]
    s, in_flight = split_in_flight(survivor, "west", upto=2)
    r, _ = split_in_flight(recovered, "east", skip=[d for _, d in in_flight])
    assert [x.offset for x, _ in s] == [0, 1] and [x.offset for x, _ in r] == [0, 1]
    assert sorted(d for _, d in s) == sorted(d for _, d in r)
    everything, none = split_in_flight(survivor, "west")
    assert len(everything) == 4 and none == []


def test_a_key_with_a_value_in_flight_is_not_judged_on_a_compacted_topic():
    """The survivor's cleaner dropped the value the recovered cluster holds: a newer one is past
    the progress, on its way."""
    from kafka_dr.core.partition_compare import split_in_flight

    survivor = [Rec(b"b", b"1", 5), Rec(b"a", b"3", 9)]  # a's value 2 (offset 7) compacted away
    recovered = [Rec(b"a", b"2", 0, headers=prov("west")), Rec(b"b", b"1", 1, headers=prov("west"))]
    s, in_flight = split_in_flight(survivor, "west", upto=8)
    moving = {r.key for r, _ in in_flight}
    s_latest = latest_by_key((r for r, _ in s), "west", moving)
    r_latest = latest_by_key(recovered, "east", moving)
    assert set(s_latest) == set(r_latest) == {b"b"}
    assert latest_differences("t[0]", "west", "east", s_latest, r_latest) == []


def test_the_recovered_clusters_own_records_past_the_flow_back_are_in_flight_its_copies_are_not():
    """Active/active: east's applications write again while the failback runs; what the flow
    east -> west has not copied yet is in flight, and a late copy of it on west is left out too.
    A copy from west that east holds twice past that progress is still a difference."""
    from kafka_dr.core.partition_compare import split_in_flight

    survivor = [Rec(b"a", b"1", 0), Rec(b"n", b"2", 1, headers=prov("east"))]  # n reached west late
    recovered = [
        Rec(b"a", b"1", 0, headers=prov("west")),
        Rec(b"n", b"1", 1),  # written on east after the flow back's progress (1): in flight
        Rec(b"n", b"2", 2),  # in flight too, its copy on west is left out
        Rec(b"a", b"1", 3, headers=prov("west")),  # a duplicated copy: compared, a difference
    ]
    s, s_flight = split_in_flight(survivor, "west", upto=None)
    r, r_flight = split_in_flight(recovered, "east", upto=1, skip=[d for _, d in s_flight], own_only=True)
    assert [x.offset for x, _ in r] == [0, 3] and [x.offset for x, _ in r_flight] == [1, 2]
    late = {d for _, d in r_flight}
    kept = [x.offset for x, d in s if d not in late]
    assert kept == [0]  # west's a, against east's two copies of it: the duplicate shows

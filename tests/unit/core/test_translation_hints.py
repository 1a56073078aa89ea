"""Known records narrowing a translation's search: the nearest below and at-or-above the wanted
origin offset, only inside the range searched."""

from __future__ import annotations

from kafka_dr.core.offsets import Hit, search
from kafka_dr.core.translation_hints import Hints, narrowed


def test_the_nearest_known_records_around_an_origin_offset():
    h = Hints()
    h.add(("t", 0), Hit(10, 100), Hit(30, 120), None, Hit(20, 110))
    assert h.around(("t", 0), 115) == (Hit(20, 110), Hit(30, 120))
    assert h.around(("t", 0), 110) == (Hit(10, 100), Hit(20, 110))  # at the offset: the upper bound
    assert h.around(("t", 0), 5) == (None, Hit(10, 100))
    assert h.around(("t", 0), 500) == (Hit(30, 120), None)
    assert h.around(("t", 1), 115) == (None, None)


def test_only_the_lowest_origin_offsets_are_forgotten():
    h = Hints(keep=2)
    h.add(("t", 0), Hit(1, 1), Hit(2, 2), Hit(3, 3))
    assert h.around(("t", 0), 0) == (None, Hit(2, 2))


def test_hints_outside_the_range_are_not_used():
    assert narrowed(0, 100, Hit(20, 1), Hit(40, 2)) == (21, 41, Hit(20, 1), Hit(40, 2))
    assert narrowed(30, 100, Hit(20, 1), Hit(140, 2)) == (30, 100, None, None)  # retention moved the start


def test_a_narrowed_search_finds_what_the_whole_search_finds_with_fewer_reads():
    # target offsets 0..999; this origin's records at even target offsets, origin offset = target // 2
    def first_from(m):
        m += m % 2
        return Hit(m, m // 2) if m < 1000 else None

    whole = search(first_from, 0, 1000, 321)
    lo, hi, below, above = narrowed(0, 1000, Hit(630, 315), Hit(660, 330))
    near = search(first_from, lo, hi, 321)
    assert whole[0] == near[0] == Hit(642, 321)
    assert near[2] < whole[2]

"""A group's position on a target holding two origins (kafka_dr.core.group_position), with
literal interleavings. The target partition below (west) holds west's own records (L) and
copies of east's (S, with their east origin offsets)::

    west offset   0   1   2   3   4   5   6   7   8
    kind          L   S   L   S   S   L   S   L   S
    record        w0  e0  w2  e1  e2  w5  e3  w7  e4

``a`` is the translated offset of east's records (the first copy the group had not read),
``u`` the west offset below which the group had read west's own records on east.
"""

from __future__ import annotations

from kafka_dr.core.group_position import LOCAL, OTHER, SOURCE, Placement, local_read_below, place, window

WEST = [(0, LOCAL), (1, SOURCE), (2, LOCAL), (3, SOURCE), (4, SOURCE), (5, LOCAL), (6, SOURCE), (7, LOCAL), (8, SOURCE)]


def placed(a: int, u: int | None, low: int = 0) -> Placement:
    lo, hi = window(a, u if u is not None else low)
    return place(a, u, [r for r in WEST if lo <= r[0] < hi])


def test_an_unread_target_record_between_the_read_and_the_translated_point():
    # read e0..e2 (a = 6: e3) and w0, w2 (u = 5): w5 sits before e3 and was never read
    assert placed(6, 5) == Placement(5, 0, 0)


def test_an_unread_target_record_well_before_the_translated_point():
    # read e0..e3 (a = 8) but only w0 (u = 2): w2 is the first unread; e1, e2, e3 come again
    assert placed(8, 2) == Placement(2, 3, 0)


def test_target_records_read_after_the_translated_point_come_again():
    # read e0 only (a = 3) and w0..w5 (u = 7): resume at e1, w5 comes again
    assert placed(3, 7) == Placement(3, 0, 1)


def test_nothing_to_move_when_every_unread_target_record_is_after_it():
    assert placed(3, 3) == Placement(3, 0, 0)
    assert placed(6, 6) == Placement(6, 0, 0)  # w7 is after e3
    # only other-origin records in the window: they are not this group's business here
    assert place(4, 2, [(2, OTHER), (3, OTHER)]) == Placement(4, 0, 0)


def test_unknown_reads_of_the_target_skip_nothing_and_say_so():
    # nothing known of which west records the group read: before the first of them
    assert placed(6, None) == Placement(0, 3, None)
    # none of west's own records below a: the position is a whatever the group read of them
    assert place(3, None, [(1, SOURCE), (2, SOURCE)]) == Placement(3, 0, 0)


def test_what_the_source_tells_of_the_targets_records():
    # the first copy of a west record at or after X on east carries west offset 5
    assert local_read_below(5, reverse_progress=9) == 5
    # no copy at or after X: every copied one (below the reverse progress) was read
    assert local_read_below(None, reverse_progress=9) == 9
    # the reverse flow never copied this partition: none was read
    assert local_read_below(None, reverse_progress=None) == 0

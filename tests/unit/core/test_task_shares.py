"""Fixed ranges shared out among tasks (kafka_dr.core.task_shares)."""

from kafka_dr.core.task_shares import balanced_shares


def test_every_range_goes_to_exactly_one_share():
    sizes = [5, 0, 9, 3, 3, 7, 1, 2]
    shares = balanced_shares(sizes, 3)
    assert sorted(i for s in shares for i in s) == list(range(len(sizes)))
    assert len(shares) == 3


def test_equal_ranges_split_evenly():
    shares = balanced_shares([125_000] * 8, 2)
    assert [len(s) for s in shares] == [4, 4]


def test_one_large_range_gets_a_share_of_its_own():
    shares = balanced_shares([1_000_000, 10, 10, 10], 2)
    assert shares == [[0], [1, 2, 3]]


def test_the_heaviest_share_is_no_heavier_than_greedy_allows():
    sizes = [7, 6, 5, 4, 3, 2, 1]
    loads = sorted(sum(sizes[i] for i in s) for s in balanced_shares(sizes, 3))
    assert loads == [9, 9, 10]


def test_fewer_ranges_than_tasks_and_nothing_to_share():
    assert balanced_shares([4, 2], 8) == [[0], [1]]
    assert balanced_shares([], 4) == []
    assert balanced_shares([3, 3], 0) == [[0, 1]]

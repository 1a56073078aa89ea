"""The copy-flag distribution tree (after the Axual distribution model).

The simulation tests replay the algorithm end to end: every flow is a distributor that copies
a record from its source to its target when the record's copy flags pass ``should_copy`` for
the flow's level, setting the level's bit on the copy. Every cluster must receive each record
exactly once, whichever cluster it was produced on.
"""

from __future__ import annotations

from collections import Counter

import pytest

from kafka_dr.core.distribution import DistributionTree, Level, mark_copied, parse_tree, should_copy
from kafka_dr.lab.topology import balanced_tree, tree_flows

UNBALANCED = [["c1", ["c2", "c3"]], ["c4", "c5"]]  # the Axual seed's unbalanced example


def tree_of(spec) -> DistributionTree:
    tree, problems = parse_tree(spec)
    assert problems == []
    assert tree is not None
    return tree


def levels_by_height(tree: DistributionTree) -> dict[int, list[tuple[frozenset[str], ...]]]:
    out: dict[int, list] = {}
    for lv in tree.levels:
        out.setdefault(lv.height, []).append(lv.children)
    return out


def test_level_bit_and_mask():
    assert [(Level(h, ()).bit, Level(h, ()).mask) for h in (1, 2, 3, 4)] == [
        (0b1, 0b1),
        (0b10, 0b11),
        (0b100, 0b111),
        (0b1000, 0b1111),
    ]


def test_parse_balanced_tree():
    tree = tree_of([["c1", "c2"], ["c3", "c4"]])
    assert tree.clusters == {"c1", "c2", "c3", "c4"}
    assert levels_by_height(tree) == {
        1: [(frozenset({"c1"}), frozenset({"c2"})), (frozenset({"c3"}), frozenset({"c4"}))],
        2: [(frozenset({"c1", "c2"}), frozenset({"c3", "c4"}))],
    }
    # The seed numbers this tree's levels 1 and 3 ("somewhat arbitrary"); heights here are
    # consecutive, so the root owns bit 0b10 and mask 0b11.
    root = next(lv for lv in tree.levels if lv.height == 2)
    assert (root.bit, root.mask) == (0b10, 0b11)


def test_parse_unbalanced_tree_as_in_the_seed():
    tree = tree_of(UNBALANCED)
    assert levels_by_height(tree) == {
        1: [(frozenset({"c2"}), frozenset({"c3"})), (frozenset({"c4"}), frozenset({"c5"}))],
        2: [(frozenset({"c1"}), frozenset({"c2", "c3"}))],
        3: [(frozenset({"c1", "c2", "c3"}), frozenset({"c4", "c5"}))],
    }
    # "Cluster 2 and Cluster 3 would have 3 distributor instances running: level 1, level 2 and
    # level 3. Cluster 1 would have level 2 and level 3 distributors running, and Cluster 4 and
    # Cluster 5 will have levels 1 and 3."
    above = {
        c: sorted(lv.height for lv in tree.levels if any(c in child for child in lv.children))
        for c in sorted(tree.clusters)
    }
    assert above == {"c1": [2, 3], "c2": [1, 2, 3], "c3": [1, 2, 3], "c4": [1, 3], "c5": [1, 3]}
    masks = {lv.height: (lv.bit, lv.mask) for lv in tree.levels}
    assert masks == {1: (0b001, 0b001), 2: (0b010, 0b011), 3: (0b100, 0b111)}


def test_a_single_cluster_is_a_tree_without_levels():
    tree = tree_of("solo")
    assert tree.levels == () and tree.clusters == {"solo"}


def test_n_ary_level():
    tree = tree_of([["a", "b"], ["c", "d"], "e"])
    (root,) = [lv for lv in tree.levels if lv.height == 2]
    assert root.children == (frozenset({"a", "b"}), frozenset({"c", "d"}), frozenset({"e"}))


@pytest.mark.parametrize(
    "spec, problems",
    [
        ([["a", "b"], ["c"]], ["tree[1]: expected a cluster name or a list of at least two subtrees"]),
        ([], ["tree: expected a cluster name or a list of at least two subtrees"]),
        ({"a": "b"}, ["tree: expected a cluster name or a list of at least two subtrees"]),
        ([["a", 1], "b"], ["tree[0][1]: expected a cluster name or a list of at least two subtrees"]),
        ([["a", "b"], ["b", ["a", "c"]]], ["tree: clusters appear more than once: a, b"]),
    ],
)
def test_parse_tree_problems(spec, problems):
    assert parse_tree(spec) == (None, problems)


def test_a_tree_deeper_than_the_header_is_rejected():
    spec: object = "c0"
    for i in range(1, 64):
        spec = [spec, f"c{i}"]
    tree, problems = parse_tree(spec)
    assert tree is None
    assert problems == ["tree: deeper than 62 levels does not fit the 64-bit copy-flag header"]
    spec = "c0"
    for i in range(1, 63):
        spec = [spec, f"c{i}"]
    assert parse_tree(spec)[1] == []


def test_level_between():
    tree = tree_of(UNBALANCED)
    assert tree.level_between("c2", "c3").height == 1
    assert tree.level_between("c3", "c2").height == 1
    assert tree.level_between("c1", "c3").height == 2
    assert tree.level_between("c2", "c1").height == 2
    assert tree.level_between("c1", "c5").height == 3
    assert tree.level_between("c4", "c2").height == 3
    assert tree.level_between("c4", "c5").height == 1
    assert tree.level_between("c1", "c1") is None
    assert tree.level_between("c1", "elsewhere") is None


def test_should_copy_and_mark_copied_follow_the_seed_walkthrough():
    # Four clusters [[1, 2], [3, 4]]: a record produced on cluster 1 ...
    tree = tree_of([["c1", "c2"], ["c3", "c4"]])
    low, top = tree.level_between("c1", "c2"), tree.level_between("c1", "c3")
    assert should_copy(0, low) and should_copy(0, top)  # no header: flags are all zero
    to_c2, to_c3 = mark_copied(0, low), mark_copied(0, top)
    assert (to_c2, to_c3) == (0b01, 0b10)
    # on cluster 2 neither distributor copies
    assert not should_copy(to_c2, tree.level_between("c2", "c1"))
    assert not should_copy(to_c2, tree.level_between("c2", "c3"))
    # on cluster 3 the top level stops, level 1 copies on to cluster 4
    assert not should_copy(to_c3, tree.level_between("c3", "c1"))
    assert should_copy(to_c3, tree.level_between("c3", "c4"))
    to_c4 = mark_copied(to_c3, tree.level_between("c3", "c4"))
    assert to_c4 == 0b11
    assert not should_copy(to_c4, tree.level_between("c4", "c3"))
    assert not should_copy(to_c4, tree.level_between("c4", "c1"))


# --- simulation ------------------------------------------------------------------------------


def simulate(tree: DistributionTree, flows: list[tuple[str, str]], origin: str) -> Counter:
    """How many copies of a record produced on ``origin`` each cluster ends up holding."""
    received = Counter({origin: 1})
    pending = [(origin, 0)]
    steps = 0
    while pending:
        cluster, flags = pending.pop()
        for source, target in flows:
            if source != cluster:
                continue
            level = tree.level_between(source, target)
            assert level is not None, f"flow {source} -> {target} crosses no level"
            if should_copy(flags, level):
                received[target] += 1
                pending.append((target, mark_copied(flags, level)))
        steps += 1
        assert steps < 1000, "distribution loop"
    return received


def assert_everyone_once(tree: DistributionTree, flows: list[tuple[str, str]]) -> None:
    for origin in sorted(tree.clusters):
        assert simulate(tree, flows, origin) == Counter({c: 1 for c in tree.clusters}), origin


def loses_a_copy(tree: DistributionTree, flows: list[tuple[str, str]]) -> bool:
    return any(simulate(tree, flows, o)[c] == 0 for o in tree.clusters for c in tree.clusters)


def duplicates_a_copy(tree: DistributionTree, flows: list[tuple[str, str]]) -> bool:
    return any(n > 1 for o in tree.clusters for n in simulate(tree, flows, o).values())


HAND_WRITTEN_UNBALANCED = [
    # level 1
    ("c2", "c3"),
    ("c3", "c2"),
    ("c4", "c5"),
    ("c5", "c4"),
    # level 2: c1 <-> {c2, c3}; each side may pick any leaf of the other
    ("c1", "c3"),
    ("c2", "c1"),
    ("c3", "c1"),
    # level 3: {c1, c2, c3} <-> {c4, c5}
    ("c1", "c5"),
    ("c2", "c4"),
    ("c3", "c5"),
    ("c4", "c2"),
    ("c5", "c1"),
]

CASES = {
    **{f"balanced-{n}": (balanced_tree([f"c{i}" for i in range(1, n + 1)]), None) for n in (2, 3, 4, 5, 6)},
    "unbalanced-tree_flows": (UNBALANCED, None),
    "unbalanced-hand-written": (UNBALANCED, HAND_WRITTEN_UNBALANCED),
    "n-ary-hand-written": (
        [["a", "b"], ["c", "d"], "e"],
        [
            ("a", "b"),
            ("b", "a"),
            ("c", "d"),
            ("d", "c"),
            ("a", "c"),
            ("a", "e"),
            ("b", "d"),
            ("b", "e"),
            ("c", "a"),
            ("c", "e"),
            ("d", "b"),
            ("d", "e"),
            ("e", "a"),
            ("e", "d"),
        ],
    ),
}


def case(name: str) -> tuple[DistributionTree, list[tuple[str, str]]]:
    spec, flows = CASES[name]
    return tree_of(spec), list(flows if flows is not None else tree_flows(spec))


@pytest.mark.parametrize("name", CASES)
def test_every_cluster_receives_every_record_exactly_once(name):
    tree, flows = case(name)
    assert tree.coverage_problems(flows) == []
    assert_everyone_once(tree, flows)


def test_tree_flows_runs_one_distributor_per_cluster_per_level():
    spec = UNBALANCED
    tree = tree_of(spec)
    flows = tree_flows(spec)
    per_cluster = Counter(s for s, _ in flows)
    expected = {c: sum(1 for lv in tree.levels if any(c in ch for ch in lv.children)) for c in tree.clusters}
    assert per_cluster == expected == {"c1": 2, "c2": 3, "c3": 3, "c4": 2, "c5": 2}


@pytest.mark.parametrize("name", CASES)
def test_removing_any_flow_is_reported_and_loses_records(name):
    tree, flows = case(name)
    for i, (source, target) in enumerate(flows):
        fewer = flows[:i] + flows[i + 1 :]
        problems = tree.coverage_problems(fewer)
        assert problems, f"removing {source} -> {target} went unnoticed"
        assert any(f"cluster {source!r} has no copy_flags flow into" in p for p in problems)
        assert loses_a_copy(tree, fewer), f"removing {source} -> {target} lost nothing"


@pytest.mark.parametrize("name", CASES)
def test_a_duplicate_flow_is_reported_and_duplicates_records(name):
    tree, flows = case(name)
    source, target = flows[-1]
    for extra in [(source, target)] + [
        (source, t)
        for t in sorted(tree.clusters)
        if t != target and tree.level_between(source, t) == tree.level_between(source, target)
    ]:
        more = flows + [extra]
        problems = tree.coverage_problems(more)
        assert any(f"cluster {source!r} has 2 copy_flags flows into" in p for p in problems), problems
        assert duplicates_a_copy(tree, more)


def test_coverage_problem_messages():
    tree = tree_of([["east", "west"], "north"])
    assert tree.coverage_problems([("east", "west"), ("west", "east"), ("east", "north"), ("west", "north")]) == [
        "cluster 'north' has no copy_flags flow into {east, west} (level 2)"
    ]
    flows = [
        ("east", "west"),
        ("west", "east"),
        ("east", "north"),
        ("west", "north"),
        ("north", "east"),
        ("north", "west"),
    ]
    assert tree.coverage_problems(flows) == [
        "cluster 'north' has 2 copy_flags flows into {east, west} (level 2): "
        "east, west; keep one or records arrive twice"
    ]

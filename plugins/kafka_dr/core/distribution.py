"""The copy-flag distribution tree for loop-free replication across N clusters.

After the Axual distribution model: clusters are the leaves of a binary-ish tree; every inner
node is a *level*. Each cluster runs one distributor (here: one flow) per level above it,
copying to one cluster on the other side of that level. Records carry a bitmask header; the
level at height ``h`` owns bit ``1 << (h - 1)`` and checks the mask ``(1 << h) - 1`` (its
bit and every lower one). A record is copied by a level only while those bits are all zero,
and the copy gets the level's bit set. Each record then reaches every cluster exactly once.

The tree is written in the config as nested lists of cluster names, e.g.
``[[east, west], [north, south]]`` or the unbalanced ``[[c1, [c2, c3]], [c4, c5]]``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Level:
    """One inner node of the tree: its height and the clusters under each child."""

    height: int
    children: tuple[frozenset[str], ...]

    @property
    def bit(self) -> int:
        return 1 << (self.height - 1)

    @property
    def mask(self) -> int:
        return (1 << self.height) - 1


@dataclass(frozen=True)
class DistributionTree:
    levels: tuple[Level, ...]
    clusters: frozenset[str]

    def level_between(self, source: str, target: str) -> Level | None:
        """The level that separates ``source`` from ``target`` (their lowest common node)."""
        for level in sorted(self.levels, key=lambda lv: lv.height):
            s = _child_index(level, source)
            t = _child_index(level, target)
            if s is not None and t is not None and s != t:
                return level
        return None

    def coverage_problems(self, flows: list[tuple[str, str]]) -> list[str]:
        """What keeps ``flows`` (source, target pairs) from reaching every cluster once.

        Every cluster needs, for each level above it, exactly one flow into each of that
        level's other subtrees; a missing one loses records, a second one duplicates them.
        """
        problems = []
        for level in sorted(self.levels, key=lambda lv: lv.height):
            for i, child in enumerate(level.children):
                for source in sorted(child):
                    for j, other in enumerate(level.children):
                        if i == j:
                            continue
                        into = sorted(t for s, t in flows if s == source and t in other)
                        if not into:
                            problems.append(
                                f"cluster {source!r} has no copy_flags flow into "
                                f"{{{', '.join(sorted(other))}}} (level {level.height})"
                            )
                        elif len(into) > 1:
                            problems.append(
                                f"cluster {source!r} has {len(into)} copy_flags flows into "
                                f"{{{', '.join(sorted(other))}}} (level {level.height}): "
                                f"{', '.join(into)}; keep one or records arrive twice"
                            )
        return problems


def _child_index(level: Level, cluster: str) -> int | None:
    return next((i for i, c in enumerate(level.children) if cluster in c), None)


def should_copy(flags: int, level: Level) -> bool:
    """True when no copy at this level or below has happened for a record with ``flags``."""
    return flags & level.mask == 0


def mark_copied(flags: int, level: Level) -> int:
    return flags | level.bit


def parse_tree(spec: object) -> tuple[DistributionTree | None, list[str]]:
    """Build the tree from its nested-list form; returns ``(tree, problems)``."""
    problems: list[str] = []
    seen: list[str] = []
    levels: list[Level] = []

    def walk(node: object, where: str) -> tuple[int, frozenset[str]]:
        if isinstance(node, str):
            seen.append(node)
            return 0, frozenset({node})
        if not isinstance(node, list) or len(node) < 2:
            problems.append(f"{where}: expected a cluster name or a list of at least two subtrees")
            return 0, frozenset()
        results = [walk(child, f"{where}[{i}]") for i, child in enumerate(node)]
        height = 1 + max(h for h, _ in results)
        levels.append(Level(height, tuple(c for _, c in results)))
        return height, frozenset().union(*(c for _, c in results))

    _, clusters = walk(spec, "tree")
    dups = sorted({c for c in seen if seen.count(c) > 1})
    if dups:
        problems.append(f"tree: clusters appear more than once: {', '.join(dups)}")
    if levels and max(lv.height for lv in levels) > 62:
        problems.append("tree: deeper than 62 levels does not fit the 64-bit copy-flag header")
    if problems:
        return None, problems
    return DistributionTree(tuple(levels), clusters), []

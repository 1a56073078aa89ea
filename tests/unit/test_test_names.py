"""Test modules have unique file names: the suite imports them by basename (no packages), so a
second ``test_x.py`` anywhere under tests/ stops the whole run at collection."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_name_is_unique():
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    twice = sorted(n for n, c in names.items() if c > 1)
    assert not twice, f"test modules sharing a name (rename one): {twice}"

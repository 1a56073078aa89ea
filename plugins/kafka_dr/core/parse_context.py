"""What the config parser walks the document with: a context that collects every problem with
its path, and the checks of single values (mappings, types, enums, regexes, schedules) it uses.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

_CRON_PRESETS = {"@once", "@hourly", "@daily", "@weekly", "@monthly", "@quarterly", "@yearly", "@continuous"}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
#: (lowest, highest, names numbered from lowest) per cron field: minute hour day month weekday
_CRON_FIELDS = ((0, 59, ()), (0, 23, ()), (1, 31, ()), (1, 12, _MONTHS), (0, 7, _DAYS))


@dataclass(frozen=True)
class Problem:
    path: str
    message: str
    hint: str | None = None

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" + (f" (hint: {self.hint})" if self.hint else "")


def _cron_ok(expr: str) -> bool:
    """A five-field cron expression as croniter (Airflow's parser) accepts it."""
    fields = expr.split()
    return len(fields) == 5 and all(
        _cron_item_ok(item, i, *_CRON_FIELDS[i]) for i, field in enumerate(fields) for item in field.lower().split(",")
    )


def _cron_item_ok(item: str, index: int, lo: int, hi: int, names: tuple[str, ...]) -> bool:
    if index == 2 and re.fullmatch(r"l|\d{1,2}w", item):  # last day / nearest weekday
        return item == "l" or lo <= int(item[:-1]) <= hi
    if index == 4 and re.fullmatch(r"([0-7]|[a-z]{3})#[1-5]", item):  # n-th weekday of the month
        return _cron_value(item.split("#")[0], lo, hi, names) is not None
    base, slash, step = item.partition("/")
    if slash and not (step.isdigit() and int(step) > 0):
        return False
    if base == "*" or (base == "?" and index in (2, 4) and not slash):
        return True
    first, dash, last = base.partition("-")
    return all(_cron_value(v, lo, hi, names) is not None for v in ((first, last) if dash else (first,)))


def _cron_value(text: str, lo: int, hi: int, names: tuple[str, ...]) -> int | None:
    value = names.index(text) + lo if text in names else int(text) if text.isdigit() else None
    return value if value is not None and lo <= value <= hi else None


class ParseContext:
    """Collects problems while walking the document."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def err(self, path: str, message: str, hint: str | None = None) -> None:
        self.problems.append(Problem(path, message, hint))

    def mapping(self, value: Any, path: str, allowed: set[str], required: set[str] = frozenset()) -> dict:
        if value is None:
            value = {}
        if not isinstance(value, dict):
            self.err(path or "config", f"expected a mapping, got {type(value).__name__}")
            return {}
        prefix = f"{path}." if path else ""
        for key in value:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), sorted(allowed), n=1)
                self.err(
                    f"{prefix}{key}",
                    "unknown key",
                    f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(sorted(allowed))}",
                )
        for key in sorted(required - set(value)):
            self.err(f"{prefix}{key}", "missing required key")
        return value

    def typed(self, value: Any, path: str, kind: type | tuple, default: Any = None, what: str | None = None) -> Any:
        if value is None:
            return default
        if kind in (int, float) and isinstance(value, bool):
            self.err(path, f"expected {what or kind.__name__}, got a boolean")
            return default
        if kind is float and isinstance(value, int):
            return float(value)
        if not isinstance(value, kind):
            self.err(path, f"expected {what or getattr(kind, '__name__', kind)}, got {type(value).__name__} {value!r}")
            return default
        return value

    def enum(self, value: Any, path: str, enum_cls: type, default: Any) -> Any:
        if value is None:
            return default
        try:
            return enum_cls(value)
        except ValueError:
            choices = ", ".join(e.value for e in enum_cls)
            self.err(path, f"unknown value {value!r}", f"one of: {choices}")
            return default

    def patterns(self, value: Any, path: str, default: tuple[str, ...], what: str = "topic name") -> tuple[str, ...]:
        if value is None:
            return default
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            self.err(path, "expected a list of regular expressions")
            return default
        out = []
        for i, pat in enumerate(value):
            if not isinstance(pat, str):
                self.err(f"{path}[{i}]", f"expected a regular expression string, got {type(pat).__name__}")
                continue
            try:
                re.compile(pat)
            except re.error as e:
                self.err(
                    f"{path}[{i}]",
                    f"bad regular expression {pat!r}: {e}",
                    f"patterns are Python regexes matched against the whole {what}",
                )
                continue
            out.append(pat)
        return tuple(out)

    def schedule(self, value: Any, path: str, default: str | None) -> str | None:
        if value is None:
            return default
        if value in ("none", "None", "manual"):
            return None
        if not isinstance(value, str):
            self.err(path, f"expected a cron expression or preset, got {type(value).__name__}")
            return default
        v = value.strip()
        if v in _CRON_PRESETS:
            return v
        if not _cron_ok(v):
            self.err(
                path,
                f"not a cron expression: {value!r}",
                "five fields like '*/5 * * * *', a preset like '@hourly', or 'none'",
            )
            return default
        return v

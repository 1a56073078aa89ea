"""Operator inputs checked before anything changes: the clusters, flows and regular
expressions a failover, failback, replication or data-quality run is given.

Every check returns problems as text and never raises; :func:`require_valid` turns a
non-empty list into one :class:`InvalidInput`. Callers check every input first, so a run
with one bad input changes nothing (a half-applied failover is worse than none).
"""

from __future__ import annotations

import re

from kafka_dr.core.config import DrConfig
from kafka_dr.core.failover import cluster_pair_problem


class InvalidInput(ValueError):
    """An operator input (argument, DAG parameter) is invalid; nothing was changed. Exit code 2."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


def regex_problem(what: str, pattern: str | None) -> str | None:
    """Why ``pattern`` is not a usable regular expression for ``what``, or None."""
    if pattern is None or pattern == "":
        return None
    try:
        re.compile(pattern)
    except re.error as e:
        return f"{what} {pattern!r} is not a regular expression: {e}"
    return None


def failover_problems(cfg: DrConfig, failed: str, survivor: str, groups: str | None) -> list[str]:
    pair = cluster_pair_problem(list(cfg.clusters), ("failed", failed), ("surviving", survivor))
    return [p for p in (pair, regex_problem("--groups", groups)) if p]


def failback_problems(
    cfg: DrConfig,
    recovered: str,
    survivor: str,
    groups: str | None,
    topics: str | None,
    since_ms: int | None = None,
    until_ms: int | None = None,
) -> list[str]:
    pair = cluster_pair_problem(list(cfg.clusters), ("recovered", recovered), ("surviving", survivor))
    problems = [p for p in (pair, regex_problem("--groups", groups), regex_problem("--topics", topics)) if p]
    if since_ms is not None and until_ms is not None and until_ms <= since_ms:
        problems.append(f"--until-ms {until_ms} is not after --since-ms {since_ms}")
    for name, v in (("--since-ms", since_ms), ("--until-ms", until_ms)):
        if v is not None and v < 0:
            problems.append(f"{name} {v} is negative")
    return problems


def drain_problems(cfg: DrConfig, recovered: str, survivor: str, timeout: float) -> list[str]:
    pair = cluster_pair_problem(list(cfg.clusters), ("recovered", recovered), ("surviving", survivor))
    problems = [pair] if pair else []
    if not timeout > 0:
        problems.append(f"--timeout {timeout:g} is not a positive number of seconds")
    return problems


def flow_problems(cfg: DrConfig, names: list[str] | None, source: str | None = None) -> list[str]:
    """Flows named that the config does not have (``source``: the config file, for the message)."""
    known = [f.name for f in cfg.flows]
    where = f" in {source}" if source else ""
    return [f"no flow named {n!r}{where} (flows: {', '.join(known) or 'none'})" for n in names or [] if n not in known]


def require_valid(problems: list[str]) -> None:
    if problems:
        raise InvalidInput(problems)

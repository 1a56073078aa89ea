"""The record of one failover or failback run: outcome and figures (pure).

Written by the run itself on every cluster that answers (:mod:`kafka_dr.kafka.dr_runs`), a
failed run included, so that monitoring sees the last outcome of each kind without asking
Airflow: ``kafka_dr_last_dr_run_*`` (:mod:`kafka_dr.core.metric_catalog`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from kafka_dr.core.formats import readable, stamped

KINDS = ("failover", "failback")


def run_record(
    kind: str,
    success: bool,
    started_ms: int,
    finished_ms: int,
    clusters: Mapping[str, str],
    missing_records: int | None = None,
    reread_records: int | None = None,
    error: str | None = None,
) -> dict:
    """``clusters``: the run's roles, e.g. ``{"failed": "east", "survivor": "west"}``."""
    if kind not in KINDS:
        raise ValueError(f"unknown DR run kind {kind!r} (known: {', '.join(KINDS)})")
    return {
        "kind": kind,
        "success": bool(success),
        "started_ms": started_ms,
        "finished_ms": finished_ms,
        "duration_seconds": round(max(0, finished_ms - started_ms) / 1000, 3),
        "clusters": dict(clusters),
        "missing_records": missing_records,
        "reread_records": reread_records,
        "error": error,
    }


def encode(record: Mapping) -> bytes:
    return json.dumps(stamped(record), sort_keys=True, separators=(",", ":")).encode()


def newest_by_kind(records: Iterable[Mapping]) -> dict[str, Mapping]:
    """The newest record of each kind (by ``finished_ms``); malformed ones are left out."""
    out: dict[str, Mapping] = {}
    for r in records:
        kind, at = readable(r, "a failover or failback record").get("kind"), r.get("finished_ms")
        if kind in KINDS and isinstance(at, int) and at >= out.get(kind, {}).get("finished_ms", -1):
            out[kind] = r
    return out


def reread_total(moved: Iterable[Mapping]) -> int | None:
    """The records the moved groups re-read, as a run's summary reports them (each
    ``consumer_groups`` entry's ``reread``: by origin, a count or None for unknown); None when
    any figure is unknown."""
    total = 0
    for g in moved:
        for n in ((g.get("reread") or {}) if isinstance(g, Mapping) else {}).values():
            if n is None:
                return None
            total += n
    return total

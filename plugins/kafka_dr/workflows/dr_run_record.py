"""Each failover's and failback's outcome, recorded for monitoring (:mod:`kafka_dr.core.dr_runs`).

A run that changed something records success or failure; a refusal (a precondition that did
not hold, an invalid input) changed nothing and records nothing, and a dry run neither. A
failover records on its survivor (the failed cluster is down); a failback on both clusters.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from kafka_dr.core.config import DrConfig
from kafka_dr.core.dr_runs import reread_total, run_record
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.dr_runs import publish_run


def refusals() -> tuple[type[BaseException], ...]:
    from kafka_dr.core.failback import FailbackRefused
    from kafka_dr.core.inputs import InvalidInput
    from kafka_dr.workflows.failover import FailoverRefused

    return (FailoverRefused, FailbackRefused, InvalidInput)


def where(kind: str, roles: Mapping[str, str]) -> list[str]:
    """The clusters a run of ``kind`` records on."""
    if kind == "failover":
        return [roles["survivor"]]
    return [roles["recovered"], roles["survivor"]]


def record_run(
    cfg: DrConfig,
    kind: str,
    roles: Mapping[str, str],
    started_ms: int,
    success: bool,
    summary: Mapping | None = None,
    error: str | None = None,
    resolve: SecretResolver | None = None,
) -> list[str]:
    """Publish the run's record; returns the clusters that took it (never raises)."""
    summary = summary or {}
    record = run_record(
        kind,
        success,
        started_ms,
        int(time.time() * 1000),
        roles,
        missing_records=summary.get("missing_records_at_least"),
        reread_records=reread_total(summary.get("consumer_groups") or []) if summary else None,
        error=error,
    )
    return publish_run(cfg, record, where(kind, roles), resolve, timeout=5.0)


@dataclass
class Recording:
    summary: dict = field(default_factory=dict)


@contextmanager
def recorded(
    cfg: DrConfig, kind: str, roles: Mapping[str, str], dry_run: bool, resolve: SecretResolver | None = None
) -> Iterator[Recording]:
    """Around a run: set ``.summary`` inside; success, or the failure that escapes, is recorded."""
    rec, started = Recording(), int(time.time() * 1000)
    try:
        yield rec
    except refusals():
        raise
    except Exception as e:
        if not dry_run:
            record_run(cfg, kind, roles, started, False, error=f"{type(e).__name__}: {e}", resolve=resolve)
        raise
    if not dry_run:
        record_run(cfg, kind, roles, started, True, rec.summary, resolve=resolve)

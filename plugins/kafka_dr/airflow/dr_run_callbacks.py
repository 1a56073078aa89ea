"""The failover and failback DAGs' outcome records (:mod:`kafka_dr.workflows.dr_run_record`):
the summary task records success; a task that fails for good records the failure (its
failure callback), unless it was a refusal, which changed nothing."""

from __future__ import annotations

import time

from airflow.sdk import BaseNotifier

from kafka_dr.core.config import DrConfig


def _started_ms(context) -> int:
    run = context.get("dag_run")
    start = getattr(run, "start_date", None)
    return int(start.timestamp() * 1000) if start else int(time.time() * 1000)


def roles(kind: str, params) -> dict[str, str]:
    first = "failed_cluster" if kind == "failover" else "recovered_cluster"
    return {first.removesuffix("_cluster"): params[first], "survivor": params["surviving_cluster"]}


def record_success(cfg: DrConfig, kind: str, summary: dict, context) -> None:
    from kafka_dr.airflow.secret_resolver import airflow_resolver
    from kafka_dr.workflows.dr_run_record import record_run

    if not summary.get("dry_run"):
        record_run(
            cfg, kind, roles(kind, context["params"]), _started_ms(context), True, summary, None, airflow_resolver()
        )


class RecordFailedRun(BaseNotifier):
    def __init__(self, cfg: DrConfig, kind: str) -> None:
        super().__init__()
        self.cfg, self.kind = cfg, kind

    def notify(self, context) -> None:
        from kafka_dr.airflow.secret_resolver import airflow_resolver
        from kafka_dr.workflows.dr_run_record import record_run, refusals

        error = context.get("exception")
        if isinstance(error, refusals()) or isinstance(getattr(error, "__cause__", None), refusals()):
            return
        params = context.get("params") or {}
        if params.get("dry_run"):
            return
        text = f"{type(error).__name__}: {error}" if error else "failed"
        record_run(
            self.cfg, self.kind, roles(self.kind, params), _started_ms(context), False, None, text, airflow_resolver()
        )

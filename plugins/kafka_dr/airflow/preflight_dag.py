"""``dr_preflight``: pre-flight validation of the replication topology (triggered, no schedule).

One task gathers topic metadata from every cluster of the enabled flows and runs the rules of
:mod:`kafka_dr.core.preflight` (``replicate``, ``filter``, ``config``, ``cascade``). It fails
listing every violation (rule, flow, topic, why), without retrying: a violation is a
configuration problem, not a transient one. Otherwise it returns an "ok" summary, with its
warnings: flows that select no data topic on their source (:mod:`kafka_dr.core.selection`).

:func:`run_preflight` is the same check for the replication DAGs to call before they start
a flow. See docs/operations.md, "Pre-flight validation".
"""

from __future__ import annotations

import logging

from airflow.sdk import DAG, task

from kafka_dr.airflow.dag_config import kafka_dr_dag
from kafka_dr.core.config import DrConfig
from kafka_dr.core.preflight import RULES, PreflightFailed, Violation, format_violations

log = logging.getLogger(__name__)


def run_preflight(cfg: DrConfig, resolve=None) -> list[Violation]:
    """Every pre-flight violation on the clusters as they are now (``preflight.exclude_topics``
    applied); an empty list means the flows may start.

    :param resolve: secret resolver (``airflow_resolver()`` inside a task); env-only if None
    :raises kafka_dr.kafka.clients.ClusterUnreachable: a cluster did not answer
    """
    from kafka_dr.kafka.preflight import run

    return run(cfg, resolve)


def preflight_or_fail(cfg: DrConfig, resolve=None) -> dict:
    """Run the pre-flight; raise ``AirflowFailException`` (no retry) listing every violation,
    else return an ok summary. Warnings (a flow that selects no topic) are logged and returned
    under ``warnings``; they fail nothing."""
    from airflow.providers.common.compat.sdk import AirflowFailException

    from kafka_dr.kafka.preflight import findings

    violations, warnings = findings(cfg, resolve)
    for w in warnings:
        log.warning("pre-flight warning: %s", w)
    if violations:
        log.error("%s", format_violations(violations))
        raise AirflowFailException(str(PreflightFailed(violations)))
    flows = [f.name for f in cfg.flows if f.enabled]
    summary = (
        f"ok: {len(RULES)} rules ({', '.join(RULES)}) hold for {len(flows)} enabled flows "
        f"({', '.join(flows) or 'none'})"
    )
    if cfg.preflight.exclude_topics:
        summary += f"; topics excluded: {', '.join(cfg.preflight.exclude_topics)}"
    if warnings:
        summary += f"; {len(warnings)} warning(s): " + "; ".join(map(str, warnings))
    log.info("%s", summary)
    return {
        "status": "ok",
        "rules": list(RULES),
        "flows": flows,
        "summary": summary,
        "warnings": [w.to_dict() for w in warnings],
    }


def build_preflight_dag(cfg: DrConfig) -> DAG:
    with kafka_dr_dag(
        "dr_preflight",
        "Pre-flight validation: replicate, filter, config and cascade rules over every enabled flow",
        None,
        __doc__,
    ) as dag:

        @task(task_id="validate", retries=1)
        def validate() -> dict:
            from kafka_dr.airflow.secret_resolver import airflow_resolver

            return preflight_or_fail(cfg, airflow_resolver())

        validate()
    return dag

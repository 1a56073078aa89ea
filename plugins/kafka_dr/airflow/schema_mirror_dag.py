"""``dr_schema_mirror``: copy the schema registry's topic from the primary to every target.

Per target: ``mirror_<target>`` copies what the primary's registry topic gained since the
last run, exactly once and in order (subjects renamed when ``schema_mirror.subject_template``
says so); then ``verify_<target>`` rebuilds the registry state (subject -> version -> id ->
schema, configs, modes) from both topics and fails listing every difference.

Without a ``schema_mirror`` section the DAG still exists (the DAG list stays the same
whatever the config) with one task that says mirroring is not configured.
"""

from __future__ import annotations

import logging

from airflow.sdk import DAG, task

from kafka_dr.airflow.dag_config import LONG_TASK, kafka_dr_dag
from kafka_dr.core.config import DrConfig

log = logging.getLogger(__name__)


class SchemaRegistryMismatch(RuntimeError):
    """The target's registry state differs from the primary's."""


def mirror_schemas(cfg: DrConfig, target: str) -> dict:
    """Mirror the primary's registry topic to ``target``; returns the counts."""
    from kafka_dr.airflow.secret_resolver import airflow_resolver
    from kafka_dr.kafka.schema_mirror import mirror

    return mirror(cfg, target, airflow_resolver()).to_dict()


def verify_schemas(cfg: DrConfig, target: str) -> dict:
    """Compare the registry states; raise :class:`SchemaRegistryMismatch` listing every difference."""
    from kafka_dr.airflow.secret_resolver import airflow_resolver
    from kafka_dr.kafka.schema_mirror import verify

    result = verify(cfg, target, airflow_resolver())
    if result.not_set_up:
        log.warning("schema mirror to %s: %s", target, result.not_set_up)
    for side, skipped in result.skipped.items():
        log.warning(
            "%s: %d record(s) a registry would skip as unreadable: %s", side, len(skipped), "; ".join(skipped[:20])
        )
    if result.differences:
        sm = cfg.schema_mirror
        src, dst = cfg.cluster(sm.primary).schema_registry.topic, cfg.cluster(target).schema_registry.topic
        upto = "its end" if result.compared_up_to is None else f"offset {result.compared_up_to} (the mirror's progress)"
        raise SchemaRegistryMismatch(
            f"schema registry on {target} ({target}/{dst}) differs from {sm.primary} "
            f"({sm.primary}/{src}, read up to {upto}, subject template {sm.subject_template!r}): "
            f"{len(result.differences)} difference(s):\n  - " + "\n  - ".join(result.differences)
        )
    return result.to_dict()


def build_schema_mirror_dag(cfg: DrConfig) -> DAG:
    with kafka_dr_dag(
        "dr_schema_mirror",
        "Mirror the schema registry topic from the primary cluster and verify the registry state",
        cfg.schedules.schema_mirror,
        __doc__,
        default_args={"execution_timeout": LONG_TASK},  # the whole _schemas topic
    ) as dag:
        if cfg.schema_mirror is None:

            @task(task_id="not_configured", retries=1)
            def not_configured() -> None:
                log.info(
                    "schema mirroring is not configured (no 'schema_mirror' section in %s)",
                    cfg.source_path or "the config",
                )

            not_configured()
            return dag

        for name in cfg.schema_mirror.targets:

            @task(task_id=f"mirror_{name}", retries=1)
            def mirror_task(target: str = name) -> dict:
                return mirror_schemas(cfg, target)

            @task(task_id=f"verify_{name}", retries=1)
            def verify_task(target: str = name) -> dict:
                return verify_schemas(cfg, target)

            mirror_task() >> verify_task()
    return dag

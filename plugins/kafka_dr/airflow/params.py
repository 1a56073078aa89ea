"""Trigger-form fields shared by the operator DAGs (failover, failback).

Airflow renders a DAG's ``params`` as its trigger form: ``title`` labels a field,
``description`` explains it, ``section`` groups fields, an ``enum`` becomes a drop-down and a
boolean a switch. The operator at 3 a.m. should choose, not type: clusters come from the
config as a drop-down, the dry run is a switch that starts on.
"""

from __future__ import annotations

from airflow.sdk import Param

from kafka_dr.core.config import DrConfig

SECTION_CLUSTERS = "Clusters"
SECTION_CONSUMERS = "Consumer groups"
SECTION_SAFETY = "Safety"


def cluster_param(
    cfg: DrConfig, default_index: int, title: str, description: str, section: str = SECTION_CLUSTERS
) -> Param:
    """A drop-down of the configured clusters (``default_index`` picks the preset one)."""
    names = list(cfg.clusters)
    return Param(
        names[min(default_index, len(names) - 1)],
        type="string",
        enum=names,
        title=title,
        description=description,
        section=section,
        values_display={n: f"{n} ({cfg.clusters[n].bootstrap_servers})" for n in names},
    )


def dry_run_param(what: str) -> Param:
    """The dry-run switch, on by default: a trigger without a second look changes nothing."""
    return Param(
        True,
        type="boolean",
        title="Dry run (change nothing)",
        description=f"On: report what the {what} would do and change nothing. Turn off to really do it.",
        section=SECTION_SAFETY,
    )


def groups_param(
    description: str = "Which consumer groups to move: a regular expression matched against the whole "
    "group id; .* moves every group.",
) -> Param:
    return Param(
        ".*",
        type="string",
        minLength=1,
        format="regex",
        title="Consumer groups (regular expression)",
        description=description,
        section=SECTION_CONSUMERS,
    )


def force_param(description: str) -> Param:
    return Param(False, type="boolean", title="Force", description=description, section=SECTION_SAFETY)

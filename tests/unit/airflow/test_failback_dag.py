"""The failback's last steps: once the flows are recorded as restarted, the DAGs of its
continuous flows get a run at once (the drain that follows waits on them), not at their
supervisor's next tick; a dry run starts nothing."""

from __future__ import annotations

import pytest

from kafka_dr.airflow.failback_dag import build_failback_dag
from kafka_dr.core.config_load import parse_config_text

CONFIG = """
clusters:
  east: {bootstrap_servers: "192.0.2.1:9092"}
  west: {bootstrap_servers: "192.0.2.2:9092"}
  north: {bootstrap_servers: "192.0.2.3:9092"}
flows:
  - {source: east, target: west}
  - {source: west, target: east}
  - {source: west, target: north, mode: incremental, schedule: "*/5 * * * *"}
  - {source: north, target: east, enabled: false}
"""


@pytest.fixture(scope="module")
def dag():
    return build_failback_dag(parse_config_text(CONFIG))


def test_the_flows_dags_start_after_the_restart_is_recorded(dag):
    start = dag.task_dict["start_flows"]
    assert start.upstream_task_ids == {"flows_to_start"}
    assert dag.task_dict["flows_to_start"].upstream_task_ids == {"restart_flows"}


@pytest.mark.parametrize(
    ("restarted", "dry_run", "dags"),
    [
        (["east_to_west", "west_to_east"], False, ["dr_replicate_east_to_west", "dr_replicate_west_to_east"]),
        # incremental flows run on their own schedule; a disabled flow's DAG is paused
        (["west_to_north", "north_to_east"], False, []),
        (["east_to_west", "west_to_east"], True, []),
    ],
)
def test_only_the_restarted_continuous_flows_start_and_a_dry_run_starts_none(dag, restarted, dry_run, dags):
    to_start = dag.task_dict["flows_to_start"].python_callable
    assert to_start({"flows": restarted}, params={"dry_run": dry_run}) == dags

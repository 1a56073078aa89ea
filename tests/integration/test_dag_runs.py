"""DAGs executed for real with ``dag.test()`` against the lab."""

from __future__ import annotations

import dataclasses

import pytest

pytestmark = [pytest.mark.lab, pytest.mark.airflow]


def _task_tries(run) -> dict[str, tuple[str, int]]:
    """Each task's state and how many tries it took."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        tis = (
            session.query(TaskInstance)
            .filter(TaskInstance.dag_id == run.dag_id, TaskInstance.run_id == run.run_id)
            .all()
        )
        return {ti.task_id: (str(ti.state), ti.try_number) for ti in tis}


def _task_states(run) -> dict[str, str]:
    return {task: state for task, (state, _) in _task_tries(run).items()}


def test_cluster_health_dag_green_on_the_lab(airflow_db, lab_config):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag()  # the DAG folder and config come from the environment set in conftest
    assert bag.import_errors == {}
    run = bag.dags["dr_cluster_health"].test()
    assert str(run.state) == "success"
    assert _task_states(run) == {"check_east": "success", "check_west": "success"}


def test_cluster_health_fails_on_a_wrong_cluster_id(airflow_db, lab_config):
    """west's address given with east's id: the check must fail, naming the cluster."""
    from kafka_dr.airflow.health import build_cluster_health_dag

    clusters = dict(lab_config.clusters)
    clusters["west"] = dataclasses.replace(clusters["west"], cluster_id=clusters["east"].cluster_id)
    cfg = dataclasses.replace(lab_config, clusters=clusters)
    dag = build_cluster_health_dag(cfg)
    for t in dag.tasks:
        t.retries = 0  # dag.test() would otherwise sit out the retry delay
    run = dag.test()
    assert str(run.state) == "failed"
    states = _task_states(run)
    assert states["check_east"] == "success"
    assert states["check_west"] == "failed"

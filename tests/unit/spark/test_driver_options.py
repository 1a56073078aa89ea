"""The replication job's driver JVM options (kafka_dr.spark.driver_options): set for a local
master only, never over the operator's own, and the same for the DAG's spark-submit."""

from __future__ import annotations

import textwrap

import pytest

from kafka_dr.core.config_load import load_config
from kafka_dr.spark.driver_options import LOCAL_DRIVER_JAVA_OPTIONS, driver_java_options

KEY = "spark.driver.extraJavaOptions"


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]"])
def test_a_local_driver_gets_them(master):
    assert driver_java_options(master, {}) == {KEY: LOCAL_DRIVER_JAVA_OPTIONS}


@pytest.mark.parametrize("master", [None, "spark://spark:7077", "yarn", "k8s://https://k8s:6443", "localhost"])
def test_a_cluster_driver_or_one_spark_submit_started_does_not(master):
    assert driver_java_options(master, {}) == {}


def test_the_operators_own_options_win():
    assert driver_java_options("local[2]", {KEY: "-Xmx2g"}) == {}


def _replicate_conf(tmp_path, spark_block: str) -> dict:
    from kafka_dr.airflow.replication_dag import build_replication_dag

    path = tmp_path / "dr.yaml"
    path.write_text(
        textwrap.dedent("""\
        clusters:
          east: {bootstrap_servers: "192.0.2.1:9092"}
          west: {bootstrap_servers: "192.0.2.2:9092"}
        flows:
          - {source: east, target: west}
    """)
        + spark_block
    )
    cfg = load_config(path)
    dag = build_replication_dag(cfg, cfg.flows[0], str(path))
    return dag.get_task("replicate").conf


def test_the_dags_spark_submit_passes_them_for_a_local_master(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_DR_CACHE", str(tmp_path / "cache"))  # no class archive built there
    assert _replicate_conf(tmp_path, "spark: {master: 'local[2]'}\n")[KEY] == LOCAL_DRIVER_JAVA_OPTIONS
    assert KEY not in _replicate_conf(tmp_path, "spark: {master: 'spark://spark:7077'}\n")
    own = _replicate_conf(tmp_path, "spark: {master: 'local[2]', conf: {spark.driver.extraJavaOptions: '-Xmx2g'}}\n")
    assert own[KEY] == "-Xmx2g"


def test_the_dags_spark_submit_starts_the_driver_with_the_class_archive_when_there_is_one(tmp_path, monkeypatch):
    from kafka_dr.spark.class_archive import archive_file

    monkeypatch.setenv("KAFKA_DR_CACHE", str(tmp_path / "cache"))
    archive = archive_file()
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"jsa")
    shared = f"-XX:SharedArchiveFile={archive}"
    assert _replicate_conf(tmp_path, "spark: {master: 'local[2]'}\n")[KEY] == f"{LOCAL_DRIVER_JAVA_OPTIONS} {shared}"
    assert _replicate_conf(tmp_path, "spark: {master: 'spark://spark:7077'}\n")[KEY] == shared
    own = "spark: {master: 'local[2]', conf: {spark.driver.extraJavaOptions: '-Xmx2g -Xshare:off'}}\n"
    assert _replicate_conf(tmp_path, own)[KEY] == "-Xmx2g -Xshare:off"

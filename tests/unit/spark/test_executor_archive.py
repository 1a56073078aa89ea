"""The settings that ship the packed environment to the executors, and what the archive holds."""

from __future__ import annotations

import sys
import tarfile
from types import MappingProxyType

from kafka_dr.core.config import SparkConfig
from kafka_dr.spark.executor_env import ARCHIVE_ALIAS, closure, default_python, executor_env_conf, pack


def test_no_archive_means_no_settings():
    assert executor_env_conf(SparkConfig()) == {}


def test_an_archive_goes_to_the_executors_with_their_python_and_path():
    conf = executor_env_conf(SparkConfig(master="spark://h:7077", executor_env="hdfs:///envs/kdr.tar.gz"))
    assert conf == {
        "spark.archives": f"hdfs:///envs/kdr.tar.gz#{ARCHIVE_ALIAS}",
        "spark.executorEnv.PYTHONPATH": ARCHIVE_ALIAS,
        "spark.pyspark.python": f"python{sys.version_info.major}.{sys.version_info.minor}",
        "spark.pyspark.driver.python": sys.executable,
    }
    assert default_python() == conf["spark.pyspark.python"]


def test_the_configs_own_archives_are_kept_and_its_python_is_used():
    spark = SparkConfig(
        conf=MappingProxyType({"spark.archives": "a.zip#a,b.tgz#b"}),
        executor_env="/envs/kdr.tar.gz",
        executor_python="/opt/python/bin/python3.12",
    )
    conf = executor_env_conf(spark)
    assert conf["spark.archives"] == f"a.zip#a,b.tgz#b,/envs/kdr.tar.gz#{ARCHIVE_ALIAS}"
    assert conf["spark.pyspark.python"] == "/opt/python/bin/python3.12"


def test_the_archive_holds_kafka_dr_and_the_clients_but_no_caches_or_shipped_dags(tmp_path):
    names = {d.metadata["Name"].lower() for d in closure()}
    assert {"confluent-kafka", "pyyaml", "pyarrow"} <= names
    assert "apache-airflow" not in names and "pyspark" not in names
    packed = pack(tmp_path / "env.tar.gz")
    members = tarfile.open(packed.path).getnames()
    assert "kafka_dr/spark/source.py" in members and "confluent_kafka/__init__.py" in members
    assert "yaml/__init__.py" in members and "KAFKA_DR_EXECUTOR_ENV" in members
    assert not [m for m in members if "__pycache__" in m or m.startswith("kafka_dr/_shipped/")]
    assert not (tmp_path / "env.tar.gz.partial").exists()

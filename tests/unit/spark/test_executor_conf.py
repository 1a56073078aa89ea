"""What executors in JVMs of their own get from the driver (kafka_dr.spark.executor_conf): the
variables the clusters' secret references resolve from, masked in Spark's UI; nothing when the
config refers to no secret; and never a speculative second attempt of a task."""

from __future__ import annotations

import re
import textwrap

from kafka_dr.core.config_load import parse_config_text
from kafka_dr.spark.executor_conf import FIXED, executor_secrets, secret_env_names

CONFIG = textwrap.dedent("""\
    clusters:
      east:
        bootstrap_servers: "192.0.2.1:9092"
        client: {sasl.username: "${env:EAST_USER}", sasl.password: "${airflow:east_kafka}"}
      west:
        bootstrap_servers: "192.0.2.2:9092"
        client: {sasl.username: "${env:EAST_USER}", sasl.password: "${env:WEST_PASS}"}
    flows:
      - {source: east, target: west}
    """)


def test_the_names_secrets_resolve_from_once_each_in_order():
    assert secret_env_names(parse_config_text(CONFIG)) == ["EAST_USER", "KAFKA_DR_SECRET_EAST_KAFKA", "WEST_PASS"]


def test_executors_get_the_variables_that_are_set_and_spark_masks_them():
    environ = {"EAST_USER": "u", "KAFKA_DR_SECRET_EAST_KAFKA": "p1", "PATH": "/bin"}  # WEST_PASS unset
    conf = executor_secrets(parse_config_text(CONFIG), environ)
    assert {k: v for k, v in conf.items() if k.startswith("spark.executorEnv.")} == {
        "spark.executorEnv.EAST_USER": "u",
        "spark.executorEnv.KAFKA_DR_SECRET_EAST_KAFKA": "p1",
    }
    masked = re.compile(conf["spark.redaction.regex"])
    assert all(masked.search(k) for k in conf if k.startswith("spark.executorEnv."))
    assert masked.search("spark.ssl.keyStorePassword") and not masked.search("spark.executor.memory")


def test_a_config_without_secrets_adds_nothing_and_no_task_runs_twice_at_once():
    plain = (
        "clusters: {east: {bootstrap_servers: a}, west: {bootstrap_servers: b}}\nflows: [{source: east, target: west}]"
    )
    assert executor_secrets(parse_config_text(plain), {"EAST_USER": "u"}) == {}
    assert FIXED == {"spark.speculation": "false"}

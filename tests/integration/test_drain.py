"""The failback's last step, `kafka-dr drain`, typed as an operator types it: with the
survivor's producers stopped, it returns once every record the survivor held is on the
recovered cluster, byte for byte, so producers that start there write after all of them."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from test_failover import isolated_config

from kafka_checks import produce_varied, read_topic
from kafka_dr.core.config_load import load_config
from kafka_dr.core.dr_state import DrState
from kafka_dr.core.provenance import has_origin, origin_cluster, strip_product_headers
from kafka_dr.kafka import clients
from kafka_dr.kafka.state_store import write_state
from kafka_dr.kafka.topics import ensure_topic

pytestmark = [pytest.mark.lab]

KAFKA_DR = str(Path(sys.executable).with_name("kafka-dr"))


def drain(config: Path, *more: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [KAFKA_DR, "drain", "--recovered", "east", "--survivor", "west", "--config", str(config), *more],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _failed_back(config: Path, topic: str):
    """The config's clusters as a failback leaves them: east active again, the topic on both."""
    cfg = load_config(config)
    for name in ("east", "west"):
        ensure_topic(clients.admin(cfg.cluster(name)), topic, partitions=2)
    assert set(write_state(cfg, DrState(2, "east", "east", ())).values()) == {"written"}
    return cfg


def _same(west_records, east_records) -> None:
    """Every record written on west is on east once, with its bytes, headers and timestamp."""

    def ident(r):
        return (r.key, r.value, tuple(strip_product_headers(list(r.headers))), r.timestamp_ms)

    mine = Counter(ident(r) for r in west_records if not has_origin(r.headers))
    copies = Counter(ident(r) for r in east_records if origin_cluster(r.headers) == "west")
    assert mine and copies == mine


def _transaction(cluster, topic: str, n: int) -> None:
    """``n`` records in one committed transaction: the partition ends with its commit marker."""
    p = clients.producer(cluster, **{"transactional.id": f"{topic}-drain-test"})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(n):
        p.produce(topic, key=b"tx%d" % i, value=b"txv%d" % i, partition=i % 2)
    p.commit_transaction(30)


def test_drain_waits_for_the_running_flow_back(lab, tmp_path, topic_name):
    from kafka_dr.lab.drill import Job

    config = isolated_config(lab, tmp_path, topic_name)
    cfg = _failed_back(config, topic_name)
    west, east = cfg.cluster("west"), cfg.cluster("east")
    job = Job(config, tmp_path / "job.log", flow="west_to_east", mode="continuous")
    try:
        produce_varied(west, topic_name, "west", 40, 2)
        _transaction(west, topic_name, 6)  # the producers stop here
        proc = drain(config, "--timeout", "240")
        assert proc.returncode == 0, proc.stderr[-3000:] + (tmp_path / "job.log").read_text()[-3000:]
        assert "drained west -> east" in proc.stdout and "start the producers on east" in proc.stdout
        _same(read_topic(west, topic_name), read_topic(east, topic_name))  # no wait: it is there
    finally:
        job.kill9()


@pytest.mark.airflow
def test_without_a_flow_back_the_drain_dag_copies_the_rest_itself(lab, airflow_db, tmp_path, topic_name):
    """Active/passive: nothing copies west -> east once the failback ends; dr_drain does, with
    the failback's transient provenance flow (west's own records only)."""
    from test_dag_runs import _task_states

    from kafka_dr.airflow.failback_dag import build_drain_dag

    config = isolated_config(lab, tmp_path, topic_name)
    doc = yaml.safe_load(config.read_text())
    doc["flows"] = [f for f in doc["flows"] if f["source"] == "east"]
    config.write_text(yaml.safe_dump(doc, sort_keys=False))
    cfg = _failed_back(config, topic_name)
    west, east = cfg.cluster("west"), cfg.cluster("east")
    produce_varied(west, topic_name, "west", 30, 2)
    run = build_drain_dag(cfg).test(run_conf={"recovered_cluster": "east", "surviving_cluster": "west"})
    assert str(run.state) == "success", _task_states(run)
    summary = run.get_task_instance("drain").xcom_pull(task_ids="drain")
    assert summary["copied_by_drain"] == 30 and summary["behind_at_start"] == 30, summary
    assert summary["flows"] == [cfg.names.failback_flow("west", "east")]
    _same(read_topic(west, topic_name), read_topic(east, topic_name))
    again = drain(config, "--json")
    assert again.returncode == 0 and '"copied_by_drain": 0' in again.stdout  # nothing twice


def test_a_drain_that_cannot_finish_names_what_is_behind(lab, tmp_path, topic_name):
    """No job copies west -> east here: the drain ends at its timeout with one line naming the
    partitions still behind, exit 1; a recovered cluster still recorded as failed is refused."""
    config = isolated_config(lab, tmp_path, topic_name)
    cfg = _failed_back(config, topic_name)
    produce_varied(cfg.cluster("west"), topic_name, "west", 10, 2)
    began = time.monotonic()
    proc = drain(config, "--timeout", "3")
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert last.startswith("kafka-dr drain: drain west -> east: not caught up after 3s: ")
    assert f"{topic_name}[0] " in last and f"{topic_name}[1] " in last and "flow west_to_east" in last
    assert time.monotonic() - began < 60
    write_state(cfg, DrState(3, "west", "west", ("east",)))
    refused = drain(config)
    assert refused.returncode == 1
    assert "cluster 'east' is still recorded as failed" in refused.stderr.strip().splitlines()[-1]

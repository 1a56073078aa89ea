"""What the DR status page reads from the real lab, with a cluster that does not answer."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from kafka_dr.core.config import ClusterConfig
from kafka_dr.core.dr_state import DrState
from kafka_dr.core.status import build_status
from kafka_dr.kafka import clients
from kafka_dr.kafka.heartbeats import emit
from kafka_dr.kafka.status_reads import read_status_inputs
from kafka_dr.kafka.topics import ensure_topic

pytestmark = pytest.mark.lab


def test_reads_state_dq_and_health_and_reports_the_silent_cluster(lab_config):
    # a private prefix: the product state and results of other tests stay out of this one
    cfg = dataclasses.replace(
        lab_config,
        internal_prefix=f"_kdr_status_{int(time.time())}",
        clusters={**lab_config.clusters, "north": ClusterConfig("north", "127.0.0.1:1")},
    )
    east, west = cfg.cluster("east"), cfg.cluster("west")
    for cluster, version, active in ((east, 3, "east"), (west, 5, "west")):  # west holds the newer state
        ensure_topic(clients.admin(cluster), cfg.names.state_topic, partitions=1, config={"cleanup.policy": "compact"})
        p = clients.producer(cluster)
        p.produce(
            cfg.names.state_topic,
            key=b"state",
            value=DrState(version, active, active, ("east",) if active == "west" else ()).encode(),
        )
        assert p.flush(30) == 0
    for cluster, ts in ((east, 1000), (west, 2000), (east, 1500)):
        ensure_topic(clients.admin(cluster), cfg.names.dq_results_topic, partitions=1)
        p = clients.producer(cluster)
        p.produce(
            cfg.names.dq_results_topic,
            value=json.dumps(
                {
                    "run_id": f"dq-{ts}",
                    "ts_ms": ts,
                    "success": ts != 2000,
                    "failed": ["orders[0]"] if ts == 2000 else [],
                    "checked_partitions": 2,
                }
            ).encode(),
        )
        p.produce(cfg.names.dq_results_topic, value=b"not json")
        assert p.flush(30) == 0
    emit(cfg, "east")
    emit(cfg, "west")

    started = time.monotonic()
    got = read_status_inputs(cfg, probe_timeout=3.0)
    print(f"status reads with one silent cluster took {time.monotonic() - started:.1f}s")

    health = got["health"]
    assert health["east"].reachable and health["west"].reachable and health["east"].cluster_id == east.cluster_id
    assert not health["north"].reachable and "no answer within 3s" in health["north"].error
    assert (got["state"].version, got["state"].active_cluster, got["state"].failed_clusters) == (5, "west", ("east",))
    assert got["dq"]["run_id"] == "dq-2000" and got["dq"]["failed"] == ["orders[0]"]
    assert got["read_errors"] == {}
    # the flows' sources' topic names, for the "selects no topics" judgement (north is no source)
    assert set(got["topics"]) == {"east", "west"} and cfg.names.dq_results_topic in got["topics"]["west"]

    report = build_status(
        cfg, health, got["state"], got["heartbeats"], got["metrics"], got["dq"], {}, int(time.time() * 1000)
    )
    texts = [a.text for a in report.alerts]
    assert report.active_cluster == "west" and report.active_source == "recorded"
    assert any(t.startswith("cluster north (127.0.0.1:1) is unreachable") for t in texts), texts
    assert "data-quality run dq-2000 failed: 1 check(s): orders[0]" in texts

"""Where failover and failback runs record their outcome: ``<prefix>.dr-runs`` on every
cluster that answers (:mod:`kafka_dr.core.dr_runs`). Writing never fails the run it records:
a cluster that does not answer is logged and skipped."""

from __future__ import annotations

import logging

from kafka_dr.core import dr_runs as core
from kafka_dr.core.config import DrConfig
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.topics import ensure_topic

log = logging.getLogger(__name__)

RETENTION_MS = str(90 * 86400 * 1000)


def publish_run(
    cfg: DrConfig, record: dict, clusters: list[str], resolve: SecretResolver | None = None, timeout: float = 10.0
) -> list[str]:
    """Write ``record`` on each of ``clusters``; returns those that took it."""
    topic, wrote = cfg.names.dr_runs_topic, []
    for name in clusters:
        conf = cfg.cluster(name)
        try:
            ensure_topic(clients.admin(conf, resolve), topic, 1, {"retention.ms": RETENTION_MS}, timeout=timeout)
            p = clients.producer(conf, resolve)
            p.produce(topic, key=record["kind"].encode(), value=core.encode(record))
            if p.flush(timeout) == 0:
                wrote.append(name)
            else:
                log.warning("%s run record not written on %s within %.0fs", record["kind"], name, timeout)
        except Exception as e:  # noqa: BLE001 - the record must not fail the run it records
            log.warning("%s run record not written on %s: %s", record["kind"], name, e)
    return wrote


def read_newest(cfg: DrConfig, cluster: str, resolve: SecretResolver | None = None, timeout: float = 5.0) -> dict:
    """The newest record of each kind on ``cluster``."""
    from kafka_dr.kafka.status_reads import read_json_tail

    return core.newest_by_kind(read_json_tail(cfg, cluster, cfg.names.dr_runs_topic, 20, resolve, timeout))

"""Parity reports kept on the cluster they are about: ``<internal_prefix>.parity`` (compacted,
one record per source cluster, key ``source->target``), so that the report of failing over
*to* a cluster can be read there when the source is down."""

from __future__ import annotations

from kafka_dr.core import parity as core
from kafka_dr.core.config import DrConfig
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.reading import read_partitions
from kafka_dr.kafka.topics import ensure_topic, partition_count


def record(cfg: DrConfig, report: dict, resolve: SecretResolver | None = None) -> None:
    conf = cfg.cluster(report["to"])
    topic = cfg.names.parity_topic
    ensure_topic(clients.admin(conf, resolve), topic, partitions=1, config={"cleanup.policy": "compact"})
    p = clients.producer(conf, resolve, **{"message.timeout.ms": 30_000})
    p.produce(topic, key=f"{report['from']}->{report['to']}".encode(), value=core.encode(report))
    if p.flush(45) != 0:
        raise TimeoutError(f"{report['to']}/{topic} did not acknowledge the report")


def recorded_reports(
    cfg: DrConfig, cluster: str, resolve: SecretResolver | None = None, timeout: float = 30.0
) -> dict[str, dict]:
    """The last report of failing over *to* ``cluster``, by source cluster."""
    topic = cfg.names.parity_topic
    conf = cfg.cluster(cluster)
    if partition_count(clients.admin(conf, resolve), topic) is None:
        return {}
    c = clients.consumer(conf, cfg.names.reader_group("parity-reader"), resolve)
    try:
        records = read_partitions(c, topic, [0], timeout=timeout)
    finally:
        c.close()
    out = {}
    for r in records:
        got = core.decode(r.value)
        if got is not None and got.get("to") == cluster:
            out[got["from"]] = got
    return out

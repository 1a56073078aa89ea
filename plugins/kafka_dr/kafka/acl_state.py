"""What ACL sync created on each cluster: one compacted topic per cluster, ``<prefix>.acl-sync``,
one record per flow into that cluster (key: the flow's name) listing the bindings it created.

A flow reads its own record on its target (the only bindings it may delete) and every record on
its source (bindings it must not copy back). The record is written *before* bindings are created
and again after the run, so a crash in between cannot leave a created binding unrecorded.
"""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka import KafkaException

from kafka_dr.core.acl_sync import Acl, decode_owned, encode_owned
from kafka_dr.core.config import DrConfig
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import ClusterUnreachable, SecretResolver
from kafka_dr.kafka.reading import read_partitions
from kafka_dr.kafka.topics import ensure_topic


def read_owned(cfg: DrConfig, cluster: str, resolve: SecretResolver | None = None) -> dict[str, set[Acl]]:
    """The bindings each flow into ``cluster`` created there, by flow name."""
    topic = cfg.names.acl_state_topic
    c = clients.consumer(cfg.cluster(cluster), cfg.names.reader_group("acl-reader"), resolve)
    out: dict[str, set[Acl]] = {}
    try:
        md = c.list_topics(topic, timeout=15).topics.get(topic)
        if md is None or md.error is not None:
            return out
        for rec in read_partitions(c, topic, [0], timeout=30):
            got = decode_owned(rec.value)
            if got is not None:
                out[got[0]] = got[1]
        return out
    except (KafkaException, RuntimeError) as e:
        raise ClusterUnreachable(f"ACL sync: reading {cluster}/{topic}: {e}") from None
    finally:
        c.close()


def write_owned(cfg: DrConfig, flow: str, cluster: str, acls: Iterable[Acl], resolve: SecretResolver | None) -> None:
    """Record ``acls`` as what ``flow`` created on ``cluster``; raises unless acknowledged."""
    topic = cfg.names.acl_state_topic
    conf = cfg.cluster(cluster)
    ensure_topic(clients.admin(conf, resolve), topic, partitions=1, config={"cleanup.policy": "compact"})
    p = clients.producer(conf, resolve, **{"message.timeout.ms": 30_000})
    p.produce(topic, key=flow.encode(), value=encode_owned(flow, acls))
    if p.flush(45) != 0:
        raise ClusterUnreachable(f"ACL sync: {cluster}/{topic} did not acknowledge flow {flow}'s bindings")

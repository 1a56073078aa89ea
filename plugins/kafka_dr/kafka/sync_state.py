"""What the metadata syncs (ACLs, client quotas) created on each cluster: per sync, one compacted
topic on each cluster (``<prefix>.acl-sync``, ``<prefix>.quota-sync``) holding one record per
flow into that cluster (key: the flow's name) that lists what the flow created there.

A flow reads its own record on its target (the only things it may delete) and every record on
its source (things it must not copy back). The record is written *before* anything is created
and again after the run, so a crash in between cannot leave a created item unrecorded.
"""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import KafkaException

from kafka_dr.core.config import DrConfig
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import ClusterUnreachable, SecretResolver
from kafka_dr.kafka.reading import read_partitions
from kafka_dr.kafka.topics import ensure_topic


def read_owned(
    cfg: DrConfig,
    cluster: str,
    topic: str,
    decode: Callable[[bytes | None], tuple[str, set] | None],
    resolve: SecretResolver | None = None,
) -> dict[str, set]:
    """What each flow into ``cluster`` created there, by flow name."""
    c = clients.consumer(cfg.cluster(cluster), cfg.names.reader_group("sync-state-reader"), resolve)
    out: dict[str, set] = {}
    try:
        md = c.list_topics(topic, timeout=15).topics.get(topic)
        if md is None or md.error is not None:
            return out
        for rec in read_partitions(c, topic, [0], timeout=30):
            got = decode(rec.value)
            if got is not None:
                out[got[0]] = got[1]
        return out
    except (KafkaException, RuntimeError) as e:
        raise ClusterUnreachable(f"reading {cluster}/{topic}: {e}") from None
    finally:
        c.close()


def write_owned(
    cfg: DrConfig, cluster: str, topic: str, flow: str, record: bytes, resolve: SecretResolver | None
) -> None:
    """Replace ``flow``'s record on ``cluster``; raises unless acknowledged."""
    conf = cfg.cluster(cluster)
    ensure_topic(clients.admin(conf, resolve), topic, partitions=1, config={"cleanup.policy": "compact"})
    p = clients.producer(conf, resolve, **{"message.timeout.ms": 30_000})
    p.produce(topic, key=flow.encode(), value=record)
    if p.flush(45) != 0:
        raise ClusterUnreachable(f"{cluster}/{topic} did not acknowledge flow {flow}'s record")

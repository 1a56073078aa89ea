"""Read and write :class:`~kafka_dr.core.dr_state.DrState` on the clusters.

The state is one record (key ``state``) in the compacted topic ``<prefix>.state``. Reads ask
every cluster that answers and keep the newest version; writes go to every cluster that
answers and report the ones that did not (a failed cluster catches up on the next write
after it returns).
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaError, TopicPartition

from kafka_dr.core.config import DrConfig
from kafka_dr.core.dr_state import DrState, newest
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.topics import ensure_topic

log = logging.getLogger(__name__)
KEY = b"state"


def reachable(cfg: DrConfig, name: str, resolve: SecretResolver | None = None, timeout: float = 8.0) -> bool:
    try:
        clients.cluster_id(cfg.cluster(name), resolve, timeout=timeout)
        return True
    except clients.ClusterUnreachable:
        return False


def read_one(cfg: DrConfig, name: str, resolve: SecretResolver | None = None) -> DrState | None:
    topic = cfg.names.state_topic
    c = clients.consumer(
        cfg.cluster(name), cfg.names.reader_group("state-reader"), resolve, **{"enable.partition.eof": True}
    )
    try:
        md = c.list_topics(topic, timeout=10).topics.get(topic)
        if md is None or md.error is not None:
            return None
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        if high <= low:
            return None
        c.assign([TopicPartition(topic, 0, low)])
        found = None
        while True:
            msg = c.poll(5.0)
            if msg is None:
                break
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    break
                raise RuntimeError(f"reading {name}/{topic}: {msg.error().str()}")
            if msg.key() == KEY:
                found = DrState.decode(msg.value()) or found
            if msg.offset() + 1 >= high:
                break
        return found
    finally:
        c.close()


def read_state(
    cfg: DrConfig, resolve: SecretResolver | None = None, skip: tuple[str, ...] = (), timeout: float = 8.0
) -> DrState:
    """The newest state on the clusters that answer within ``timeout`` seconds each."""
    states = []
    for name in cfg.clusters:
        if name in skip or not reachable(cfg, name, resolve, timeout):
            continue
        states.append(read_one(cfg, name, resolve))
    return newest(states)


def write_state(
    cfg: DrConfig, state: DrState, resolve: SecretResolver | None = None, skip: tuple[str, ...] = ()
) -> dict[str, str]:
    """Write ``state`` to every reachable cluster; returns {cluster: "written" | reason}."""
    out = {}
    for name, cluster in cfg.clusters.items():
        if name in skip:
            out[name] = "skipped"
            continue
        if not reachable(cfg, name, resolve):
            out[name] = "unreachable"
            continue
        admin = clients.admin(cluster, resolve)
        ensure_topic(admin, cfg.names.state_topic, partitions=1, config={"cleanup.policy": "compact"})
        p = clients.producer(cluster, resolve)
        p.produce(cfg.names.state_topic, key=KEY, value=state.encode())
        out[name] = "written" if p.flush(30) == 0 else "not acknowledged"
    return out

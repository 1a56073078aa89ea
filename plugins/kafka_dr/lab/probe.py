"""What a lab cluster says about itself: one metadata request through the AdminClient.

The answer names the cluster id, the brokers the cluster counts as alive (a broker only
answers once it is registered and unfenced) and every partition's leader, replicas and
in-sync replicas, internal topics included, from which the partition health is counted.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClusterView:
    cluster_id: str
    broker_ids: frozenset[int]
    topics: int  #: topics of users (not ``__``-prefixed)
    under_replicated: int  #: partitions whose in-sync replicas are fewer than their replicas
    offline: int  #: partitions without a leader


def partition_health(partitions: list[tuple[int, int, int]]) -> tuple[int, int]:
    """``(under_replicated, offline)`` of ``(leader, replicas, in-sync replicas)`` triples."""
    under = sum(1 for _leader, replicas, isr in partitions if isr < replicas)
    offline = sum(1 for leader, _replicas, _isr in partitions if leader < 0)
    return under, offline


def probe(bootstrap: str, timeout: float) -> ClusterView:
    """Ask any broker of ``bootstrap`` (plaintext, past any proxy) for the cluster's metadata."""
    from confluent_kafka.admin import AdminClient

    # log_level 0: a broker that is down or still starting would fill the terminal with
    # librdkafka's connection-refused lines; failures surface as the exception instead.
    client = AdminClient(
        {"bootstrap.servers": bootstrap, "socket.connection.setup.timeout.ms": int(timeout * 1000), "log_level": 0}
    )
    md = client.list_topics(timeout=timeout)
    if not md.brokers:
        raise RuntimeError(f"{bootstrap} answered without brokers")
    parts = [(p.leader, len(p.replicas), len(p.isrs)) for t in md.topics.values() for p in t.partitions.values()]
    under, offline = partition_health(parts)
    return ClusterView(
        md.cluster_id,
        frozenset(md.brokers),
        len([t for t in md.topics if not t.startswith("__")]),
        under,
        offline,
    )

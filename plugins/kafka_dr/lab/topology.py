"""Which clusters the lab starts, on which ports, and the config file it writes for them.

Two clusters replicate active/active with the ``provenance`` loop policy. Three or more are
laid out as a balanced distribution tree with ``copy_flags`` flows (one per cluster per level
above it), so the N-cluster features have a lab to run on.

Each cluster has one to five brokers. Broker j (0-based) of cluster i listens on
base+100*i+10*j (controller +1, internal +2; proxied clients at base+100*i+50+10*j), so the
first broker of every cluster keeps the ports of a one-broker lab. A one-broker cluster's
broker is named like the cluster (``east``); the brokers of a larger one ``east-1``, ``east-2``...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

CLUSTER_NAMES = ("east", "west", "north", "south", "central", "edge")


MAX_BROKERS = 5  #: broker j uses ports +10*j: five fit below the proxy ports (+50) of the first


@dataclass(frozen=True)
class LabBroker:
    """One broker (a combined KRaft broker and controller node) of a lab cluster."""

    cluster: str
    name: str
    node_id: int
    port: int
    controller_port: int
    secure: bool = False
    proxy_port: int | None = None

    @property
    def internal_port(self) -> int | None:
        return self.port + 2 if (self.secure or self.proxy_port) else None

    @property
    def address(self) -> str:
        """Where clients reach this broker: its advertised client listener (the proxy, if any)."""
        return f"127.0.0.1:{self.proxy_port or self.port}"

    @property
    def direct(self) -> str:
        """Where the lab itself checks the broker: plaintext, past any proxy."""
        return f"127.0.0.1:{self.internal_port or self.port}"


@dataclass(frozen=True)
class LabCluster:
    """One lab cluster of ``brokers`` nodes; ``port``, ``controller_port`` and ``proxy_port``
    are its first broker's, the others' follow from them (:attr:`nodes`). ``port`` is the
    client listener (SASL_SSL when ``secure``).

    ``proxy_port``: clients are told (advertised listener) to reach the broker there, where a
    test's TCP proxy forwards to ``port``; cutting the proxy cuts the network for every client.
    A secure or proxied cluster also gets a plaintext loopback listener on ``internal_port``
    for the broker itself and the lab's health checks, never for product clients.
    """

    name: str
    port: int
    controller_port: int
    secure: bool = False
    proxy_port: int | None = None
    brokers: int = 1

    @property
    def nodes(self) -> tuple[LabBroker, ...]:
        return tuple(
            LabBroker(
                self.name,
                self.name if self.brokers == 1 else f"{self.name}-{j + 1}",
                j + 1,
                self.port + 10 * j,
                self.controller_port + 10 * j,
                self.secure,
                self.proxy_port + 10 * j if self.proxy_port else None,
            )
            for j in range(self.brokers)
        )

    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.nodes)

    @property
    def internal_port(self) -> int | None:
        return self.nodes[0].internal_port

    @property
    def direct(self) -> str:
        """Where the lab itself checks the cluster: plaintext, past any proxy."""
        return ",".join(b.direct for b in self.nodes)

    @property
    def voters(self) -> str:
        """``controller.quorum.voters``: every node of the cluster is a static voter."""
        return ",".join(f"{b.node_id}@127.0.0.1:{b.controller_port}" for b in self.nodes)


def lab_clusters(
    count: int, base_port: int, secure: bool = False, proxied: tuple[str, ...] = (), brokers: int = 1
) -> list[LabCluster]:
    """Cluster i listens on base+100*i (controller +1, internal +2); a proxied cluster's
    clients are sent to base+100*i+50, where the test's proxy listens. Its further brokers
    follow 10 ports apart."""
    if not 1 <= count <= len(CLUSTER_NAMES):
        raise ValueError(f"--clusters must be between 1 and {len(CLUSTER_NAMES)}, got {count}")
    if not 1 <= brokers <= MAX_BROKERS:
        raise ValueError(f"--brokers must be between 1 and {MAX_BROKERS}, got {brokers}")
    return [
        LabCluster(
            name,
            base_port + 100 * i,
            base_port + 100 * i + 1,
            secure,
            base_port + 100 * i + 50 if name in proxied else None,
            brokers,
        )
        for i, name in enumerate(CLUSTER_NAMES[:count])
    ]


def known_names(clusters: list[LabCluster]) -> str:
    """The names a lab verb takes, for an error line: ``east, west`` or ``east (east-1, east-2), ...``."""
    return ", ".join(c.name if c.brokers == 1 else f"{c.name} ({', '.join(b.name for b in c.nodes)})" for c in clusters)


def find_named(clusters: list[LabCluster], name: str) -> tuple[LabCluster, tuple[LabBroker, ...]] | None:
    """A cluster name means all its brokers; a broker name that one broker; None if unknown."""
    for c in clusters:
        if c.name == name:
            return c, c.nodes
        for b in c.nodes:
            if b.name == name:
                return c, (b,)
    return None


#: environment variables the secure lab's config refers to (values in <lab>/secrets.env)
LAB_USER_ENV = "KAFKA_DR_LAB_SASL_USERNAME"
LAB_PASSWORD_ENV = "KAFKA_DR_LAB_SASL_PASSWORD"


def secure_client(ca_file: str) -> dict[str, str]:
    """Client settings of the secure lab: SCRAM-SHA-512 over TLS; secrets stay references."""
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "ssl.ca.location": ca_file,
        "sasl.username": f"${{env:{LAB_USER_ENV}}}",
        "sasl.password": f"${{env:{LAB_PASSWORD_ENV}}}",
    }


def balanced_tree(names: list[str]) -> Any:
    if len(names) == 1:
        return names[0]
    mid = (len(names) + 1) // 2
    return [balanced_tree(names[:mid]), balanced_tree(names[mid:])]


def _leaves(tree: Any) -> list[str]:
    return [tree] if isinstance(tree, str) else [leaf for child in tree for leaf in _leaves(child)]


def tree_flows(tree: Any) -> list[tuple[str, str]]:
    """One flow per cluster per level: from each leaf to the first leaf of the other side."""
    if isinstance(tree, str):
        return []
    left, right = tree
    flows = tree_flows(left) + tree_flows(right)
    ll, rl = _leaves(left), _leaves(right)
    flows += [(c, rl[0]) for c in ll] + [(c, ll[0]) for c in rl]
    return flows


#: The lab's Spark on a cluster master. The driver on loopback too, where the lab's executors
#: reach it (Spark would pick the machine's external address and listen on every interface);
#: the JVMs without the compiler and collector threads that take a small machine's cores from
#: the copy, as in local mode (kafka_dr.spark.driver_options).
CLUSTER_CONF = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
    "spark.executor.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
}


def spark_section(master: str | None = None) -> dict[str, Any]:
    """The lab config's ``spark`` section: local Spark, or the lab's Spark cluster at ``master``."""
    return {"master": "local[2]"} if master is None else {"master": master, "conf": dict(CLUSTER_CONF)}


def lab_config(
    clusters: list[LabCluster], cluster_ids: dict[str, str], ca_file: str | None = None, spark_master: str | None = None
) -> dict[str, Any]:
    """The kafka-dr config for the lab, as plain data ready for YAML; ``spark_master``: the
    lab's Spark cluster while it runs (``kafka-dr lab spark up``), else local Spark."""
    names = [c.name for c in clusters]
    doc: dict[str, Any] = {
        "clusters": {
            c.name: {
                "bootstrap_servers": c.bootstrap,
                **({"cluster_id": cluster_ids[c.name]} if c.name in cluster_ids else {}),
                **({"client": secure_client(ca_file)} if c.secure and ca_file else {}),
            }
            for c in clusters
        },
        "flows": [],
        "spark": spark_section(spark_master),
        "thresholds": {"heartbeat_max_age_seconds": 120},
    }
    if len(clusters) == 2:
        a, b = names
        doc["flows"] = [
            {"source": a, "target": b, "loop_policy": "provenance"},
            {"source": b, "target": a, "loop_policy": "provenance"},
        ]
        doc["schema_mirror"] = {"primary": a, "targets": [b]}
    elif len(clusters) > 2:
        tree = balanced_tree(names)
        doc["distribution"] = {"tree": tree}
        doc["flows"] = [{"source": s, "target": t, "loop_policy": "copy_flags"} for s, t in tree_flows(tree)]
        doc["schema_mirror"] = {"primary": names[0]}
    return doc


def lab_config_yaml(
    clusters: list[LabCluster], cluster_ids: dict[str, str], ca_file: str | None = None, spark_master: str | None = None
) -> str:
    header = "# Written by `kafka-dr lab up`: the local lab's clusters and flows. Regenerated on every `up`.\n"
    return header + yaml.safe_dump(lab_config(clusters, cluster_ids, ca_file, spark_master), sort_keys=False)

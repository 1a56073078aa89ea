"""Which clusters the lab starts, on which ports, and the config file it writes for them.

Two clusters replicate active/active with the ``provenance`` loop policy. Three or more are
laid out as a balanced distribution tree with ``copy_flags`` flows (one per cluster per level
above it), so the N-cluster features have a lab to run on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

CLUSTER_NAMES = ("east", "west", "north", "south", "central", "edge")


@dataclass(frozen=True)
class LabCluster:
    """One lab cluster. ``port`` is the client listener (SASL_SSL when ``secure``).

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

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.proxy_port or self.port}"

    @property
    def internal_port(self) -> int | None:
        return self.port + 2 if (self.secure or self.proxy_port) else None

    @property
    def direct(self) -> str:
        """Where the lab itself checks the broker: plaintext, past any proxy."""
        return f"127.0.0.1:{self.internal_port or self.port}"


def lab_clusters(count: int, base_port: int, secure: bool = False, proxied: tuple[str, ...] = ()) -> list[LabCluster]:
    """Cluster i listens on base+100*i (controller +1, internal +2); a proxied cluster's
    clients are sent to base+100*i+50, where the test's proxy listens."""
    if not 1 <= count <= len(CLUSTER_NAMES):
        raise ValueError(f"--clusters must be between 1 and {len(CLUSTER_NAMES)}, got {count}")
    return [
        LabCluster(
            name,
            base_port + 100 * i,
            base_port + 100 * i + 1,
            secure,
            base_port + 100 * i + 50 if name in proxied else None,
        )
        for i, name in enumerate(CLUSTER_NAMES[:count])
    ]


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


def lab_config(clusters: list[LabCluster], cluster_ids: dict[str, str], ca_file: str | None = None) -> dict[str, Any]:
    """The kafka-dr config for the lab, as plain data ready for YAML."""
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
        "spark": {"master": "local[2]"},
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


def lab_config_yaml(clusters: list[LabCluster], cluster_ids: dict[str, str], ca_file: str | None = None) -> str:
    header = "# Written by `kafka-dr lab up`: the local lab's clusters and flows. Regenerated on every `up`.\n"
    return header + yaml.safe_dump(lab_config(clusters, cluster_ids, ca_file), sort_keys=False)

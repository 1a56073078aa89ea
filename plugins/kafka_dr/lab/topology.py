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
    name: str
    port: int
    controller_port: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


def lab_clusters(count: int, base_port: int) -> list[LabCluster]:
    if not 1 <= count <= len(CLUSTER_NAMES):
        raise ValueError(f"--clusters must be between 1 and {len(CLUSTER_NAMES)}, got {count}")
    return [LabCluster(name, base_port + 100 * i, base_port + 100 * i + 1) for i, name in enumerate(CLUSTER_NAMES[:count])]


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


def lab_config(clusters: list[LabCluster], cluster_ids: dict[str, str]) -> dict[str, Any]:
    """The kafka-dr config for the lab, as plain data ready for YAML."""
    names = [c.name for c in clusters]
    doc: dict[str, Any] = {
        "clusters": {
            c.name: {"bootstrap_servers": c.bootstrap, **({"cluster_id": cluster_ids[c.name]} if c.name in cluster_ids else {})}
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


def lab_config_yaml(clusters: list[LabCluster], cluster_ids: dict[str, str]) -> str:
    header = "# Written by `kafka-dr lab up`: the local lab's clusters and flows. Regenerated on every `up`.\n"
    return header + yaml.safe_dump(lab_config(clusters, cluster_ids), sort_keys=False)

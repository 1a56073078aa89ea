"""``<lab>/lab.json``: what the lab started, so every later command acts on exactly that.

::

    {"kafka_version": "4.3.1", "secure": false,
     "clusters": [{"name": "east", "port": 19092, "controller_port": 19093, "secure": false,
                   "proxy_port": null, "brokers": 3, "cluster_id": "...",
                   "pids": {"east-1": 4242, "east-2": null, "east-3": 4250}}]}

``cluster_id`` is chosen before the first node is formatted and shared by every node of the
cluster. The file is re-read on every access and replaced atomically, so two commands on
one lab see each other's pids. A cluster entry of a lab written before brokers were counted
(one ``pid``, no ``brokers``) reads as a one-broker cluster.
"""

from __future__ import annotations

import json
from pathlib import Path

from kafka_dr.lab.topology import LabCluster


class LabState:
    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict:
        if not self.path.exists():
            return {}
        doc = json.loads(self.path.read_text())
        for entry in doc.get("clusters", []):
            if "pids" not in entry:  # one broker, named like its cluster
                entry["brokers"] = 1
                entry["pids"] = {entry["name"]: entry.pop("pid", None)}
        return doc

    def save(self, doc: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=2))
        tmp.replace(self.path)

    def create(self, kafka_version: str, secure: bool, clusters: list[LabCluster]) -> None:
        self.save(
            {
                "kafka_version": kafka_version,
                "secure": secure,
                "clusters": [
                    {
                        "name": c.name,
                        "port": c.port,
                        "controller_port": c.controller_port,
                        "secure": c.secure,
                        "proxy_port": c.proxy_port,
                        "brokers": c.brokers,
                        "cluster_id": None,
                        "pids": {b.name: None for b in c.nodes},
                    }
                    for c in clusters
                ],
            }
        )

    def clusters(self) -> list[LabCluster]:
        return [
            LabCluster(
                c["name"], c["port"], c["controller_port"], c.get("secure", False), c.get("proxy_port"), c["brokers"]
            )
            for c in self.load().get("clusters", [])
        ]

    def pid(self, broker: str) -> int | None:
        for entry in self.load().get("clusters", []):
            if broker in entry["pids"]:
                return entry["pids"][broker]
        return None

    def set_pids(self, pids: dict[str, int | None]) -> None:
        doc = self.load()
        if not doc:
            return
        for entry in doc["clusters"]:
            entry["pids"].update({b: p for b, p in pids.items() if b in entry["pids"]})
        self.save(doc)

    def cluster_id(self, cluster: str) -> str | None:
        return next((e["cluster_id"] for e in self.load().get("clusters", []) if e["name"] == cluster), None)

    def set_cluster_id(self, cluster: str, cluster_id: str | None) -> None:
        doc = self.load()
        for entry in doc["clusters"]:
            if entry["name"] == cluster:
                entry["cluster_id"] = cluster_id
        self.save(doc)

    def cluster_ids(self) -> dict[str, str]:
        return {e["name"]: e["cluster_id"] for e in self.load().get("clusters", []) if e["cluster_id"]}

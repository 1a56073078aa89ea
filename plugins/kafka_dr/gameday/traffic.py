"""Steady game-day traffic on both clusters: the game-day topics, and the apps' producers.

Each app (``east``, ``west``, named after its home cluster) runs two threads
(:mod:`kafka_dr.gameday.producers`): an idempotent producer (acks=all) writing the keyed,
second and compacted topics, and a transactional producer that commits most transactions on
its own topic and aborts every ``abort_every``-th. Every record carries ``gd.id``/``gd.seq``
and a key from the app's small key space. The :class:`Ledger` records each record's fate:
acknowledged (where it landed), aborted, or uncertain (the delivery failed or a commit's
outcome is unknown: the record may or may not be on the cluster).

A cluster that is down delays an app, never stops it: errors go to the ledger and the thread
backs off. :meth:`Traffic.redirect` moves an app's producers to another cluster (apps move
with the failover); its ids stay the app's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from kafka_dr.gameday.model import NAMES, GamedayNames, Ledger, LedgerView
from kafka_dr.gameday.producers import PlainProducer, Route, TrafficSettings, TransactionalProducer
from kafka_dr.kafka import clients
from kafka_dr.kafka.topics import ensure_topic

__all__ = ["Ledger", "Traffic", "TrafficSettings", "ensure_topics"]


def ensure_topics(cluster_cfg, names: GamedayNames = NAMES, timeout: float = 30.0) -> list[str]:
    """Create the game-day topics on ``cluster_cfg`` (replication factor: the cluster's
    default). Returns those this call created."""
    admin = clients.admin(cluster_cfg)
    created = [t for t in names.topics if ensure_topic(admin, t, names.partitions(t), names.topic_config(t))]
    # a consumer that subscribes before the brokers serve a topic looks again only minutes later
    deadline = time.monotonic() + timeout
    while (waiting := _not_served(admin, names)) and time.monotonic() < deadline:
        time.sleep(0.2)
    if waiting:
        raise TimeoutError(
            f"game-day topics {', '.join(waiting)} on {cluster_cfg.name}: no leader after {timeout:.0f}s"
        )
    return created


def _not_served(admin, names: GamedayNames) -> list[str]:
    """The game-day topics some partition of which has no leader in the cluster's metadata."""
    md = admin.list_topics(timeout=10).topics
    return [
        t
        for t in names.topics
        if t not in md or md[t].error is not None or any(p.leader < 0 for p in md[t].partitions.values())
    ]


class Traffic:
    """All apps' producer threads. ``clusters`` maps each app of ``names.apps`` to its home
    cluster's config (``ClusterConfig``)."""

    def __init__(
        self,
        clusters: Mapping,
        names: GamedayNames = NAMES,
        settings: TrafficSettings | None = None,
        ledger: Ledger | None = None,
    ) -> None:
        missing = [a for a in names.apps if a not in clusters]
        if missing:
            raise ValueError(
                f"game-day traffic: no cluster for app(s) {', '.join(missing)} (given: {sorted(clusters)})"
            )
        settings = settings or TrafficSettings()
        self.names, self.settings = names, settings
        self.ledger = ledger or Ledger()
        self.routes = {app: Route(clusters[app]) for app in names.apps}
        self.threads = {
            app: [
                kind(app, self.routes[app], names, settings, self.ledger)
                for kind in (PlainProducer, TransactionalProducer)
            ]
            for app in names.apps
        }

    def start(self) -> Traffic:
        for ts in self.threads.values():
            for t in ts:
                t.start()
        return self

    def where(self, app: str) -> str | None:
        """The cluster ``app`` writes to now (``None``: stopped)."""
        cluster = self.routes[app].get()[0]
        return None if cluster is None else cluster.name

    def redirect(self, app: str, cluster_cfg, timeout: float = 60.0) -> float:
        """From now on ``app`` writes to ``cluster_cfg`` (``None``: stops writing, as an operator
        stops producers). Returns when both its producers have switched (the old ones retired,
        every record they held acknowledged or failed); the time of the switch (epoch seconds)."""
        if app not in self.routes:
            raise ValueError(f"game-day traffic: unknown app {app!r} (known: {', '.join(self.routes)})")
        version = self.routes[app].set(cluster_cfg)
        names = [t.name for t in self.threads[app]]
        if not self.routes[app].wait_taken(names, version, timeout):
            raise TimeoutError(
                f"game-day traffic: app {app} did not switch to {getattr(cluster_cfg, 'name', 'nowhere')} "
                f"within {timeout:.0f}s"
            )
        return time.time()

    def view(self) -> LedgerView:
        return self.ledger.view()

    def stop(self, timeout: float = 60.0) -> LedgerView:
        """Stop every producer (queued records get ``retire_flush_s``); the final ledger."""
        threads = [t for ts in self.threads.values() for t in ts]
        for t in threads:
            t.stopping.set()
        deadline = time.monotonic() + timeout
        for t in threads:
            if t.is_alive():
                t.join(max(0.0, deadline - time.monotonic()))
        stuck = [t.name for t in threads if t.is_alive()]
        if stuck:
            self.ledger.error("traffic", f"threads still running after {timeout:.0f}s: {', '.join(stuck)}")
        return self.view()

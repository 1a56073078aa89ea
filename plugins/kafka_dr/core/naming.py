"""Topic naming for replication, after MirrorMaker 2's ``ReplicationPolicy``.

Two policies: ``identity`` (same name on both sides; ``provenance`` and ``copy_flags`` flows)
and ``prefix`` (``<source><sep><topic>``, MM2's DefaultReplicationPolicy). Failover and
offset translation use the same functions to find where a topic's copy lives, so the naming
rule exists once.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PrefixNaming:
    """Remote topics are ``<source cluster><separator><topic>``."""

    clusters: frozenset[str]
    separator: str = "."

    def remote_topic(self, source: str, topic: str) -> str:
        return f"{source}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        """The cluster a remote topic came from, or ``None`` for a local topic.

        The longest known cluster name followed by the separator: cluster names may contain
        the separator (``us_east`` with ``_``), so splitting at its first occurrence would
        make ``us_east_orders`` look local and let it loop back to ``us_east``.
        """
        heads = [c for c in self.clusters if topic.startswith(c + self.separator)]
        return max(heads, key=len) if heads else None

    def upstream_topic(self, topic: str) -> str | None:
        """One hop back: ``east.orders`` -> ``orders``; ``None`` for a local topic."""
        source = self.topic_source(topic)
        if source is None:
            return None
        return topic[len(source) + len(self.separator) :]

    def original_topic(self, topic: str) -> str:
        """All hops back: ``west.east.orders`` -> ``orders``."""
        while (up := self.upstream_topic(topic)) is not None:
            topic = up
        return topic

    def is_cycle(self, topic: str, target: str) -> bool:
        """Would copying ``topic`` to ``target`` bring data home? (any hop came from it)."""
        while (src := self.topic_source(topic)) is not None:
            if src == target:
                return True
            topic = self.upstream_topic(topic) or topic
        return False

    def target_topic(self, source: str, topic: str, target: str) -> str | None:
        """Where ``source``'s ``topic`` goes on ``target``; ``None`` when it must not go.

        Remote topics are not replicated further back to any cluster in their chain (the
        cycle rule); a two-cluster active/active pair therefore never copies ``east.orders``
        from west back to east.
        """
        if self.is_cycle(topic, target):
            return None
        return self.remote_topic(source, topic)


def identity_target_topic(topic: str) -> str:
    return topic


@dataclass(frozen=True)
class InternalNames:
    """Every topic, consumer group and ``transactional.id`` the product creates on a cluster.

    All start with the configured ``internal_prefix``, so topic selection, group sync and the
    parity checks can tell the product's own names from the user's with one test
    (:meth:`is_internal`). Nothing else in the package spells an internal name.
    """

    prefix: str

    def is_internal(self, name: str) -> bool:
        return name.startswith(self.prefix)

    # --- topics -----------------------------------------------------------------------------

    @property
    def heartbeat_topic(self) -> str:
        """Heartbeats: emitted on every cluster and replicated like data."""
        return f"{self.prefix}.heartbeats"

    @property
    def metrics_topic(self) -> str:
        """One JSON row per micro-batch of a flow, keyed by flow name, on the flow's target."""
        return f"{self.prefix}.metrics"

    @property
    def offset_sync_topic(self) -> str:
        """The translated group positions recorded on a target (what a failover reads)."""
        return f"{self.prefix}.offset-sync"

    @property
    def dq_results_topic(self) -> str:
        """Where every data-quality run publishes its summary (one JSON record per run)."""
        return f"{self.prefix}.dq-results"

    @property
    def dq_watermarks_topic(self) -> str:
        """The compacted topic, on each flow's target, of the verified data-quality watermarks."""
        return f"{self.prefix}.dq-watermarks"

    @property
    def acl_state_topic(self) -> str:
        """Compacted, on every synced target: the ACL bindings the product created there, per flow."""
        return f"{self.prefix}.acl-sync"

    @property
    def parity_topic(self) -> str:
        """Compacted, on each cluster: the last parity report of failing over to it, per source."""
        return f"{self.prefix}.parity"

    @property
    def quota_state_topic(self) -> str:
        """Compacted, on every synced target: the client quotas the product set there, per flow."""
        return f"{self.prefix}.quota-sync"

    @property
    def seed_map_topic(self) -> str:
        """Runs of (source offset, target offset) written while a failback seeds a cluster."""
        return f"{self.prefix}.seed-map"

    @property
    def dr_runs_topic(self) -> str:
        """Each failover's and failback's outcome and figures (the exporter serves the newest)."""
        return f"{self.prefix}.dr-runs"

    @property
    def state_topic(self) -> str:
        """The compacted topic holding the active/standby state (one record, key ``state``)."""
        return f"{self.prefix}.state"

    # --- consumer groups --------------------------------------------------------------------

    def progress_group(self, flow: str) -> str:
        """The group whose committed offsets on the target are a flow's copy progress."""
        return f"{self.prefix}.progress.{flow}"

    def progress_scan_group(self, flow: str) -> str:
        """Reads a flow's progress without ever committing (never the progress group itself)."""
        return f"{self.progress_group(flow)}.scan"

    def schema_mirror_group(self, primary: str, target: str) -> str:
        """The schema mirror's progress group on the target; also its fixed ``transactional.id``."""
        return f"{self.prefix}.schemas.{primary}_to_{target}"

    def reader_group(self, purpose: str) -> str:
        """A ``group.id`` for a reader that assigns partitions and never commits.

        :param purpose: one of :data:`READERS`.
        """
        if purpose not in READERS:
            raise ValueError(f"unknown reader {purpose!r} (known: {', '.join(READERS)})")
        return f"{self.prefix}.{purpose}"

    # --- transient flows (their names key the progress group and transactional ids) ---------

    @staticmethod
    def reseed_flow(survivor: str, recovered: str) -> str:
        """The failback's seed flow that copies everything onto a rebuilt cluster."""
        return f"reseed_{survivor}_to_{recovered}"

    @staticmethod
    def failback_flow(survivor: str, recovered: str) -> str:
        """The failback's transient flow that brings a survivor's outage writes back."""
        return f"failback_{survivor}_to_{recovered}"

    # --- transactional ids ------------------------------------------------------------------

    def transactional_id(self, flow: str, source_topic: str, partition: int) -> str:
        """The copier's ``transactional.id`` for one source partition: fixed, so a new producer
        fences every earlier one (zombies included), and the only producer id that commits this
        partition's progress."""
        return f"{self.prefix}.{flow}.{source_topic}.{partition}"

    def task_transactional_id(self, flow: str) -> str:
        """The ``transactional.id`` of a streaming task that copies all of a flow's partitions in
        one transaction. Never equal to a per-partition id, which always ends in ``.<partition>``."""
        return f"{self.prefix}.{flow}.task"


#: The purposes of the product's non-committing readers (each its own ``group.id``).
READERS = (
    "failover-reader",
    "failback-reader",
    "failback-gate",
    "status-reader",
    "offset-translation",
    "heartbeat-reader",
    "state-reader",
    "dq-reader",
    "sync-state-reader",
    "parity-reader",
    "drain-reader",
    "group-commits-reader",
    "exporter-reader",
)

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

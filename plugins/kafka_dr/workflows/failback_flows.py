"""One failback run's inputs (:class:`FailbackRun`) and the flows it copies with: the seed flow of
a ``reseed`` and the flow that brings the survivor's outage writes back in a ``resync``."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from kafka_dr.core.config import DrConfig, FlowConfig, LoopPolicy, TopicSelection
from kafka_dr.core.failback import RESEED, FailbackRefused, narrowed, transient_flow
from kafka_dr.kafka.clients import SecretResolver


@dataclass(frozen=True)
class FailbackRun:
    """What one failback was asked to do; every step takes it.

    :param recovered: the cluster that failed and is back (or was rebuilt empty).
    :param survivor: the cluster that served during the outage.
    :param mode: ``resync`` or ``reseed`` (:data:`kafka_dr.core.failback.MODES`).
    :param topics: a regex narrowing the topics copied back (``None``: every topic of the flows).
    :param groups: a regex selecting the consumer groups that move back.
    :param since_ms: with ``until_ms``, narrows a resync's transient back flow to records with
        ``since_ms <= timestamp < until_ms``.
    :param data_quality: whether the gate also runs the data-quality comparison (Spark + GX) of
        everything the two hold; the record comparison always runs.
    """

    cfg: DrConfig
    recovered: str
    survivor: str
    mode: str
    topics: str | None = None
    groups: str = ".*"
    dry_run: bool = True
    force: bool = False
    since_ms: int | None = None
    until_ms: int | None = None
    data_quality: bool = True
    resolve: SecretResolver | None = None

    def flows(self, src: str, dst: str) -> list[FlowConfig]:
        """The configured flows ``src -> dst``."""
        return [f for f in self.cfg.flows if f.source == src and f.target == dst]

    def selection(self) -> TopicSelection:
        """The topics the failback copies survivor -> recovered: those of the recovered cluster's
        own outgoing flows (what it held before the outage), narrowed by the operator's regex."""
        out = self.flows(self.recovered, self.survivor) or self.flows(self.survivor, self.recovered)
        if not out:
            raise FailbackRefused(
                f"no flow between {self.recovered!r} and {self.survivor!r} in the config: nothing to fail back"
            )
        allow = tuple(a for f in out for a in f.topics.allow)
        deny = tuple(d for f in out for d in f.topics.deny)
        return narrowed(TopicSelection(allow=allow, deny=deny), self.topics)

    def back_flow(self) -> FlowConfig:
        """The flow that brings the survivor's outage writes back: the configured reverse flow, or
        (active/passive) a transient provenance flow that skips records of the recovered cluster."""
        configured = self.flows(self.survivor, self.recovered)
        if configured:
            return configured[0]
        out = self.flows(self.recovered, self.survivor)
        if out and out[0].loop_policy is not LoopPolicy.PROVENANCE:
            raise FailbackRefused(
                f"flow {out[0].name} uses loop policy {out[0].loop_policy.value}; a failback without a configured "
                f"{self.survivor} -> {self.recovered} flow needs provenance (same topic names)"
            )
        return transient_flow(
            self.cfg.names.failback_flow(self.survivor, self.recovered), self.survivor, self.recovered, self.selection()
        )

    def seed_flow(self) -> FlowConfig:
        sel = self.selection()
        for f in self.cfg.flows:
            if (
                self.recovered in (f.source, f.target)
                and self.survivor in (f.source, f.target)
                and f.loop_policy is not LoopPolicy.PROVENANCE
            ):
                raise FailbackRefused(
                    f"reseed rewrites provenance headers of same-named topics; flow {f.name} uses loop policy "
                    f"{f.loop_policy.value}: recreate the cluster with resync from a restored copy instead"
                )
        if self.cfg.schema_mirror is not None:
            registry = self.cfg.cluster(self.survivor).schema_registry.topic
            sel = replace(sel, allow=(*sel.allow, re.escape(registry)))
        return transient_flow(
            self.cfg.names.reseed_flow(self.survivor, self.recovered), self.survivor, self.recovered, sel
        )

    def copied_flow(self) -> FlowConfig:
        """The flow whose topics the gate compares and whose groups move back: the seed flow of a
        ``reseed``, the back flow of a ``resync``."""
        return self.seed_flow() if self.mode == RESEED else self.back_flow()

"""The driver side of a flow: which source partitions exist, where they go, how far they reach.

Runs on the Spark driver once per micro-batch (cheap: one ListOffsets request for all
partitions) and, every ``topic_refresh_seconds``, re-lists the source topics so topics created
while the job runs are picked up without a restart. Missing target topics are created with
the source's partition count and replicable configs; a target topic with *fewer* partitions
than its source is an error naming the topic (partition ``p`` must map to partition ``p``).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.loop import router_for
from kafka_dr.core.topic_config import replicable_configs
from kafka_dr.kafka.clients import AuthenticationFailed, ClusterUnreachable, SecretResolver, client_config, refusal
from kafka_dr.kafka.topic_admin import create_topics, describe_topic_configs, wait_until_served
from kafka_dr.kafka.topics import ensure_topic, query_offsets

log = logging.getLogger(__name__)

METADATA_TIMEOUT = 15.0

#: planner offsets: {source topic: {partition (str, JSON keys are strings): offset}}
Offsets = dict[str, dict[str, int]]


class TargetTopicMismatch(RuntimeError):
    """A target topic cannot take its source's partitions one to one."""


@dataclass(frozen=True)
class TopicRoute:
    source_topic: str
    target_topic: str
    partitions: int


class FlowPlanner:
    def __init__(
        self,
        cfg: DrConfig,
        flow: FlowConfig,
        resolve: SecretResolver | None = None,
        clock=time.monotonic,
        create_targets: bool = True,
    ) -> None:
        """:param create_targets: create missing target topics on discovery (``False``: plan only,
        as a dry run must)."""
        self.cfg, self.flow, self.clock, self.resolve = cfg, flow, clock, resolve
        self.create_targets = create_targets
        self.router = router_for(cfg, flow)
        # the clients' own error events: a refused login or TLS handshake is named from them,
        # so a dead cluster costs one metadata timeout, not a second probe on top (bounded: the
        # planner lives as long as the job)
        self._errors = {"source": deque(maxlen=32), "target": deque(maxlen=32)}
        self.source = AdminClient(
            client_config(cfg.cluster(flow.source), resolve, error_cb=self._errors["source"].append)
        )
        self.target = AdminClient(
            client_config(cfg.cluster(flow.target), resolve, error_cb=self._errors["target"].append)
        )
        self._routes: dict[str, TopicRoute] = {}
        self._refreshed_at: float | None = None

    # --- discovery ---------------------------------------------------------------------

    def routes(self, force: bool = False) -> dict[str, TopicRoute]:
        now = self.clock()
        if force or self._refreshed_at is None or now - self._refreshed_at >= self.flow.topic_refresh_seconds:
            self._routes = self._discover()
            self._refreshed_at = now
        return self._routes

    def _answer(self, which: str, call):
        """Run an admin call; an unreachable cluster becomes one clear error naming it."""
        self._errors[which].clear()
        try:
            return call()
        except KafkaException as e:
            name = self.flow.source if which == "source" else self.flow.target
            cluster = self.cfg.cluster(name)
            client = self.source if which == "source" else self.target
            problem = refusal(cluster, client, list(self._errors[which]))
            if problem:
                raise AuthenticationFailed(
                    f"flow {self.flow.name}: {which} cluster {name!r} ({cluster.bootstrap_servers}): {problem}"
                ) from None
            raise ClusterUnreachable(
                f"flow {self.flow.name}: {which} cluster {name!r} ({cluster.bootstrap_servers}) did not answer: "
                f"{e.args[0].str()}"
            ) from None

    def _discover(self) -> dict[str, TopicRoute]:
        md = self._answer("source", lambda: self.source.list_topics(timeout=METADATA_TIMEOUT))
        if self.flow.dead_letter_topic and not self._routes:
            self._answer("target", lambda: ensure_topic(self.target, self.flow.dead_letter_topic, partitions=1))
        wanted: dict[str, TopicRoute] = {}
        for name, t in md.topics.items():
            if t.error is not None:
                continue
            target = self.router.target_topic(name)
            if target is not None:
                wanted[name] = TopicRoute(name, target, len(t.partitions))
        new = [r for n, r in wanted.items() if n not in self._routes or self._routes[n].partitions != r.partitions]
        if new and self.create_targets:
            self._ensure_targets(new)
            for r in new:
                log.info(
                    "flow %s: replicating %s[%d partitions] -> %s/%s",
                    self.flow.name,
                    r.source_topic,
                    r.partitions,
                    self.flow.target,
                    r.target_topic,
                )
        return wanted

    def _ensure_targets(self, routes: list[TopicRoute]) -> None:
        tmd = self._answer("target", lambda: self.target.list_topics(timeout=METADATA_TIMEOUT)).topics
        missing = [r for r in routes if r.target_topic not in tmd]
        for r in routes:
            t = tmd.get(r.target_topic)
            if t is not None and len(t.partitions) < r.partitions:
                raise TargetTopicMismatch(
                    f"flow {self.flow.name}: {self.flow.target}/{r.target_topic} has {len(t.partitions)} "
                    f"partitions but {self.flow.source}/{r.source_topic} has {r.partitions}; "
                    f"raise the target's partition count "
                    f"(dr_topic_config_sync does) so partition p can map to partition p"
                )
        if not missing:
            return
        configs = self._source_configs([r.source_topic for r in missing])
        new_topics = [
            NewTopic(
                r.target_topic,
                num_partitions=r.partitions,
                replication_factor=-1,
                config=configs.get(r.source_topic, {}),
            )
            for r in missing
        ]
        for name, error in create_topics(self.target, new_topics).items():
            if error is not None and error != "exists":
                raise RuntimeError(f"flow {self.flow.name}: creating {self.flow.target}/{name}: {error}")
        try:  # the job reads them at once (progress, copies): wait until their leaders serve them
            wait_until_served(self.target, {r.target_topic: r.partitions for r in missing})
        except TimeoutError as e:
            raise RuntimeError(f"flow {self.flow.name}: new topics on {self.flow.target}: {e}") from None

    def _source_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        excludes = self.cfg.topic_config.exclude
        return {
            t: replicable_configs(explicit, excludes)
            for t, explicit in describe_topic_configs(self.source, topics).items()
        }

    # --- offsets -----------------------------------------------------------------------

    def _list(self, spec: OffsetSpec) -> Offsets:
        routes = self.routes()
        request = {TopicPartition(r.source_topic, p): spec for r in routes.values() for p in range(r.partitions)}
        if not request:
            return {}

        def call() -> Offsets:
            out: Offsets = {}
            for (topic, partition), offset in query_offsets(self.source, request, METADATA_TIMEOUT).items():
                out.setdefault(topic, {})[str(partition)] = offset
            return out

        return self._answer("source", call)

    def latest(self) -> Offsets:
        """The last stable offset of every selected partition: committed data ends there."""
        return self._list(OffsetSpec.latest())

    def earliest(self) -> Offsets:
        return self._list(OffsetSpec.earliest())

    def target_topic(self, source_topic: str) -> str:
        return self.routes()[source_topic].target_topic

"""Pre-flight validation against the real clusters: gather topic metadata, run the pure rules.

For every cluster an enabled flow touches: every topic's partition count (one metadata
request), and the effective ``cleanup.policy`` of the topics a flow copies or writes to (one
DescribeConfigs request per cluster). The rules themselves are in
:mod:`kafka_dr.core.preflight`.
"""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from kafka_dr.core.config import DrConfig
from kafka_dr.core.loop import router_for
from kafka_dr.core.preflight import Metadata, Violation, validate
from kafka_dr.core.selection import EmptySelection, empty_selections
from kafka_dr.kafka.clients import ClusterUnreachable, SecretResolver, client_config
from kafka_dr.kafka.topic_admin import describe_topic_configs, topic_partitions

METADATA_TIMEOUT = 15.0
#: the effective topic configs the rules compare
CONFIGS = ("cleanup.policy",)


def _ask(cfg: DrConfig, name: str, call):
    try:
        return call()
    except KafkaException as e:
        cluster = cfg.cluster(name)
        raise ClusterUnreachable(
            f"pre-flight: cluster {name!r} ({cluster.bootstrap_servers}) did not answer: {e.args[0].str()}"
        ) from None


def gather_metadata(cfg: DrConfig, resolve: SecretResolver | None = None) -> Metadata:
    """cluster -> topic -> {"partitions": n, "configs": {"cleanup.policy": ...}} for the
    clusters of the enabled flows; configs only for topics a flow copies or writes to."""
    flows = [f for f in cfg.flows if f.enabled]
    names = sorted({c for f in flows for c in (f.source, f.target)})
    clients = {n: AdminClient(client_config(cfg.cluster(n), resolve)) for n in names}
    partitions = {n: _ask(cfg, n, lambda n=n: topic_partitions(clients[n], METADATA_TIMEOUT)) for n in names}

    relevant: dict[str, set[str]] = {n: set() for n in names}
    for f in flows:
        router = router_for(cfg, f)
        for topic in partitions[f.source]:
            target = router.target_topic(topic)
            if target is None:
                continue
            relevant[f.source].add(topic)
            if target in partitions[f.target]:
                relevant[f.target].add(target)

    out: dict[str, dict[str, dict]] = {}
    for n in names:
        configs = _ask(
            cfg,
            n,
            lambda n=n: describe_topic_configs(clients[n], sorted(relevant[n]), explicit_only=False, missing_ok=True),
        )
        out[n] = {
            topic: {"partitions": count, "configs": {k: v for k, v in configs.get(topic, {}).items() if k in CONFIGS}}
            for topic, count in partitions[n].items()
        }
    return out


def run(cfg: DrConfig, resolve: SecretResolver | None = None) -> list[Violation]:
    """Every violation of every rule on the clusters as they are now (exclusions applied)."""
    return validate(cfg, gather_metadata(cfg, resolve))


def findings(cfg: DrConfig, resolve: SecretResolver | None = None) -> tuple[list[Violation], list[EmptySelection]]:
    """(violations, warnings) from one gathering: the warnings are enabled flows that select no
    data topic on their source (:mod:`kafka_dr.core.selection`), which do not stop a flow."""
    metadata = gather_metadata(cfg, resolve)
    return validate(cfg, metadata), empty_selections(cfg, metadata)

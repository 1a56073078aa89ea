"""The typed, frozen configuration: clusters, flows, schedules, thresholds, alerts.

One object, built once by :func:`kafka_dr.core.config_load.load_config`, handed to every
layer. Nothing here does I/O. Secret values stay :class:`~kafka_dr.core.secret_refs.SecretRef`
until an adapter resolves them while building a client.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kafka_dr.core.distribution import DistributionTree
from kafka_dr.core.naming import InternalNames
from kafka_dr.core.secret_refs import SecretRef

#: Topics that are never replicated unless a flow names them explicitly in ``allow``:
#: Kafka's own (``__consumer_offsets``, ``__transaction_state``), the schema registry's,
#: MirrorMaker 2's, and this product's (``internal_prefix``).
BUILTIN_INTERNAL_PATTERNS = (r"__.*", r"_schemas", r".*\.internal", r"mm2-.*", r"(.*\.)?heartbeats", r"_kafka_dr.*")


class LoopPolicy(str, enum.Enum):
    """How a flow keeps a record from travelling back where it came from."""

    PROVENANCE = "provenance"  #: same topic names; origin headers on every copy
    PREFIX = "prefix"  #: remote topics ``<source><sep><topic>``; never copied back
    COPY_FLAGS = "copy_flags"  #: bitmask header over a distribution tree (N clusters)


class ProvenanceRule(str, enum.Enum):
    """Which records a ``provenance`` flow skips."""

    #: skip a record whose origin is the target cluster (Replicator's default): a record
    #: hops on, but never returns home.
    NOT_TO_ORIGIN = "not_to_origin"
    #: skip any record that carries an origin header (the Redpanda seed's simpler rule):
    #: only locally produced records leave a cluster. Right for two clusters.
    LOCAL_ONLY = "local_only"


class FlowMode(str, enum.Enum):
    CONTINUOUS = "continuous"  #: long-running job, supervised by its DAG
    INCREMENTAL = "incremental"  #: copy what is there, then exit; run on a schedule


@dataclass(frozen=True)
class SchemaRegistryConfig:
    """Where a cluster's schema registry is and which topic it keeps its state in."""

    url: str | None = None
    topic: str = "_schemas"


@dataclass(frozen=True)
class ClusterConfig:
    """A named Kafka cluster and how to reach it.

    ``client`` holds librdkafka settings (``security.protocol``, ``sasl.*``, ``ssl.*``...);
    values may be secret references. ``connection`` names an Airflow connection whose extra
    supplies further client settings (its password becomes ``sasl.password``).
    """

    name: str
    bootstrap_servers: str
    #: not in the repr: literal secrets are allowed here (``secret_refs.mask_config`` gives a log-safe view)
    client: Mapping[str, str | SecretRef] = field(default_factory=lambda: MappingProxyType({}), repr=False)
    connection: str | None = None
    cluster_id: str | None = None  #: expected Kafka cluster id, checked when set
    schema_registry: SchemaRegistryConfig = field(default_factory=SchemaRegistryConfig)


@dataclass(frozen=True)
class TopicSelection:
    """Which topics a flow replicates: full-match regexes, deny wins over allow."""

    allow: tuple[str, ...] = (".*",)
    deny: tuple[str, ...] = ()
    #: a continuous flow's job syncs the groups' positions onto its target this often
    sync_interval_seconds: float = 5.0
    internal: tuple[str, ...] = BUILTIN_INTERNAL_PATTERNS

    def selects(self, topic: str) -> bool:
        if any(re.fullmatch(p, topic) for p in self.deny):
            return False
        named = any(p == topic or literal_topic(p) == topic for p in self.allow)
        if not named and any(re.fullmatch(p, topic) for p in self.internal):
            return False
        return any(re.fullmatch(p, topic) for p in self.allow)


def literal_topic(pattern: str) -> str | None:
    """The one topic a pattern without metacharacters names (``mm2-offsets\\.x``), else None."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern) and not pattern[i + 1].isalnum():
            out.append(pattern[i + 1])
            i += 2
        elif ch in "\\.^$*+?{}[]|()":
            return None
        else:
            out.append(ch)
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class FlowConfig:
    """One direction of replication, ``source -> target``."""

    name: str
    source: str
    target: str
    topics: TopicSelection = field(default_factory=TopicSelection)
    loop_policy: LoopPolicy = LoopPolicy.PROVENANCE
    provenance_rule: ProvenanceRule = ProvenanceRule.NOT_TO_ORIGIN
    prefix_separator: str = "."
    mode: FlowMode = FlowMode.CONTINUOUS
    schedule: str | None = None  #: for incremental flows; continuous flows are supervised
    max_duration_seconds: int | None = None
    topic_refresh_seconds: int = 30
    #: the copiers' producers' ``transaction.timeout.ms`` (and their delivery timeout at most
    #: this): a transaction its copier abandoned is aborted by the target this long after it began
    transaction_timeout_seconds: int = 60
    dead_letter_topic: str | None = None
    enabled: bool = True


@dataclass(frozen=True)
class Schedules:
    """Cron expressions or presets for the periodic DAGs (``None`` = trigger only)."""

    heartbeat: str | None = "* * * * *"
    topic_config_sync: str | None = "*/10 * * * *"
    acl_sync: str | None = "*/10 * * * *"
    quota_sync: str | None = "*/10 * * * *"
    parity: str | None = "*/10 * * * *"
    schema_mirror: str | None = "*/5 * * * *"
    offset_sync: str | None = "* * * * *"
    data_quality: str | None = "@hourly"
    cluster_health: str | None = "*/5 * * * *"
    #: every minute: a continuous flow whose job ended (max duration, or a failure past its
    #: restarts) runs again within a minute; while it runs, max_active_runs=1 starts nothing
    replication_supervisor: str | None = "* * * * *"


@dataclass(frozen=True)
class Thresholds:
    heartbeat_max_age_seconds: float = 120.0
    #: a replication job alerts a failed query once its flow has copied nothing for this long
    #: (at once when a cluster did not answer); a shorter failure it rides out (a leader
    #: election, a broker restart) is logged only
    restart_alert_after_seconds: float = 30.0
    replication_lag_max_records: int = 100_000
    #: the flows' RPO: the greatest age the oldest uncopied source record may reach (alert rules)
    replication_lag_max_seconds: float = 120.0
    latency_p99_max_seconds: float = 60.0
    #: data quality judges latency over the copies made in the last this many seconds (0: all
    #: retained): an outage's late copies leave the check once they are older, not at retention
    latency_window_seconds: float = 900.0
    timestamp_margin_seconds: float = 60.0  #: offset translation without provenance
    #: the parity report calls a group's synced position on the other cluster stale past this
    group_sync_max_age_seconds: float = 300.0


@dataclass(frozen=True)
class EmailAlert:
    smtp_host: str
    to: tuple[str, ...]
    smtp_port: int = 25
    sender: str = "kafka-dr@localhost"
    username: str | None = None
    password: SecretRef | str | None = field(default=None, repr=False)
    starttls: bool = False
    #: PEM file of the CAs that sign the SMTP server's certificate (the system's CAs when unset)
    ca_file: str | None = None


@dataclass(frozen=True)
class WebhookAlert:
    url: str


@dataclass(frozen=True)
class Alerts:
    email: EmailAlert | None = None
    webhook: WebhookAlert | None = None


#: an incremental run with at most this many offsets to copy copies them in its driver, without
#: a Spark session: below it, starting Spark's JVM and its workers takes longer and costs more
#: CPU than the copy they would speed up (docs/benchmarks.md, "Small backlogs without Spark")
DRIVER_COPY_MAX_RECORDS = 2_000_000


@dataclass(frozen=True)
class SparkConfig:
    """Where Spark jobs run. ``connection`` is the Airflow Spark connection id."""

    master: str = "local[*]"
    connection: str = "kafka_dr_spark"
    conf: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: the archive ``kafka-dr spark pack-env`` made (a path or a URL Spark fetches): executors
    #: with nothing installed import kafka-dr and its clients from it
    executor_env: str | None = None
    #: the Python the executors run with ``executor_env`` (None: the driver's ``python3.<minor>``)
    executor_python: str | None = None
    #: incremental runs: a backlog of at most this many offsets is copied without Spark (0: never)
    driver_copy_max_records: int = DRIVER_COPY_MAX_RECORDS
    #: processes copying such a backlog: 2 (the driver and a helper it forks, on a host with
    #: more than one core) or 1 (the driver alone: a third less peak memory, docs/benchmarks.md)
    driver_copy_processes: int = 2


@dataclass(frozen=True)
class SchemaMirrorConfig:
    """One-way mirroring of the registry topic from the primary cluster."""

    primary: str
    targets: tuple[str, ...]
    subject_template: str = "{subject}"


@dataclass(frozen=True)
class TopicConfigSync:
    """Topic-config sync settings: config names (regexes) never synced, on top of the
    built-in exclusions (``kafka_dr.core.topic_config.DEFAULT_EXCLUDES``)."""

    exclude: tuple[str, ...] = ()


MIN_GROUP_SYNC_SECONDS, MAX_GROUP_SYNC_SECONDS = 1.0, 60.0


@dataclass(frozen=True)
class ConsumerGroups:
    """Which consumer groups the offset sync and the failover move (full-match regexes; deny
    wins). The product's own groups (``<internal_prefix>...``) and groups starting with ``_``
    are always left out, whatever ``allow`` says."""

    allow: tuple[str, ...] = (".*",)
    deny: tuple[str, ...] = ()
    #: a continuous flow's job syncs the groups' positions onto its target this often
    sync_interval_seconds: float = 5.0


@dataclass(frozen=True)
class Preflight:
    """Pre-flight validation settings: topics (regexes) the rules skip."""

    exclude_topics: tuple[str, ...] = ()


@dataclass(frozen=True)
class DataQuality:
    """Data-quality settings: where the GX runtime context (results, Data Docs) is written
    (``None``: ``data-quality/`` next to the config file); whether scheduled runs compare only
    what arrived since the last verified watermark, and how often a run compares everything."""

    dir: str | None = None
    incremental: bool = True
    full_sweep_hours: float = 24.0  #: 0: never a scheduled full sweep (incremental runs only)


@dataclass(frozen=True)
class AclSync:
    """ACL sync settings. ``principals`` names one application's principal on each cluster
    (``{logical name: {cluster: "User:..."}}``); a principal not named there is the same on
    every cluster."""

    #: MirrorMaker 2's behaviour: topic bindings lose WRITE and the like, ALL becomes READ
    read_only: bool = False
    transactional_ids_allow: tuple[str, ...] = (".*",)
    transactional_ids_deny: tuple[str, ...] = ()
    principals: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: MappingProxyType({}))

    def principal_on(self, principal: str, source: str, target: str) -> str:
        """``principal`` of cluster ``source`` as it is called on ``target``."""
        for by_cluster in self.principals.values():
            if by_cluster.get(source) == principal:
                return by_cluster.get(target, principal)
        return principal


@dataclass(frozen=True)
class DrConfig:
    """The whole configuration. Build it with ``load_config``/``parse_config``."""

    clusters: Mapping[str, ClusterConfig]
    flows: tuple[FlowConfig, ...]
    schedules: Schedules = field(default_factory=Schedules)
    thresholds: Thresholds = field(default_factory=Thresholds)
    alerts: Alerts = field(default_factory=Alerts)
    spark: SparkConfig = field(default_factory=SparkConfig)
    schema_mirror: SchemaMirrorConfig | None = None
    distribution: DistributionTree | None = None
    topic_config: TopicConfigSync = field(default_factory=TopicConfigSync)
    preflight: Preflight = field(default_factory=Preflight)
    consumer_groups: ConsumerGroups = field(default_factory=ConsumerGroups)
    data_quality: DataQuality = field(default_factory=DataQuality)
    acl_sync: AclSync = field(default_factory=AclSync)
    internal_prefix: str = "_kafka_dr"
    source_path: str | None = None  #: where it was loaded from, for messages

    def cluster(self, name: str) -> ClusterConfig:
        return self.clusters[name]

    def flows_from(self, cluster: str) -> tuple[FlowConfig, ...]:
        return tuple(f for f in self.flows if f.source == cluster)

    def flows_into(self, cluster: str) -> tuple[FlowConfig, ...]:
        return tuple(f for f in self.flows if f.target == cluster)

    @property
    def names(self) -> InternalNames:
        """Every internal topic, group and transactional id (:mod:`kafka_dr.core.naming`)."""
        return InternalNames(self.internal_prefix)

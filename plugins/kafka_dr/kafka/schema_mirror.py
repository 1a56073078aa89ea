"""Mirror the schema registry's topic from the primary to one target, exactly once; verify it.

The registry's storage topic (``schema_registry.topic`` of each cluster, ``_schemas`` by
default) is copied one way, record by record, in order: key, value, headers and timestamp
as they are (tombstones included), so a registry pointed at the target rebuilds the same
subjects, versions and ids. With ``schema_mirror.subject_template`` other than
``{subject}`` only the subject names in keys and values are rewritten
(:func:`kafka_dr.core.schema_registry.rename_record`).

Exactly once, the way the replication copier does it (``kafka_dr.kafka.copier``):

1. one transactional producer per (primary, target) with a fixed ``transactional.id``;
   ``init_transactions`` fences an earlier run that is still alive or crashed mid-way and
   aborts its open transaction;
2. the progress (next source offset) is the committed offset of group
   ``<internal_prefix>.schemas.<primary>_to_<target>`` on the target topic, written with
   ``send_offsets_to_transaction`` in the same transaction as the records;
3. the source is read ``read_committed`` up to its last stable offset.

A run with nothing to copy still commits the progress (an offsets-only transaction), so the
group's offsets never expire while the DAG runs, however rarely schemas change. Progress
missing while the target topic already holds records is refused (:class:`SchemaProgressLost`)
instead of copying everything a second time.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_dr.core.config import DrConfig, SchemaMirrorConfig
from kafka_dr.core.schema_registry import diff_states, rebuild_state, rename_record
from kafka_dr.kafka.clients import SecretResolver, client_config
from kafka_dr.kafka.progress_store import committed_with_retry
from kafka_dr.kafka.reading import read_partitions
from kafka_dr.kafka.topics import ensure_topic, partition_count, partition_ranges

log = logging.getLogger(__name__)

PARTITION = 0  #: the registry's topic has exactly one partition
TIMEOUT = 30.0


class SchemaProgressLost(RuntimeError):
    """No committed progress, but the target topic already holds records."""


class SchemaTopicProblem(RuntimeError):
    """A registry topic is missing or not shaped like one (one partition)."""


@dataclass
class MirrorResult:
    primary: str
    target: str
    source_topic: str
    target_topic: str
    start: int = 0  #: first source offset this run looked at
    end: int = 0  #: source last stable offset when the run started
    read: int = 0
    copied: int = 0
    renamed: int = 0  #: records whose key or value changed under the subject template
    transactions: int = 0
    topic_created: bool = False
    seconds: float = 0.0
    #: why nothing was mirrored when the primary has no registry topic (no registry there yet)
    not_set_up: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class VerifyResult:
    primary: str
    target: str
    differences: list[str] = field(default_factory=list)
    primary_records: int = 0  #: primary records compared (up to the mirror's progress)
    target_records: int = 0
    compared_up_to: int | None = None  #: primary offset compared up to; None = its end
    subjects: int = 0
    #: records a registry would skip as unreadable, per side
    skipped: dict[str, list[str]] = field(default_factory=dict)
    not_set_up: str | None = None  #: neither side has a registry topic: nothing to compare

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _settings(cfg: DrConfig, target: str) -> SchemaMirrorConfig:
    sm = cfg.schema_mirror
    if sm is None:
        raise ValueError("schema mirroring is not configured (no 'schema_mirror' section)")
    if target not in sm.targets:
        raise ValueError(f"{target!r} is not a schema_mirror target (targets: {', '.join(sm.targets)})")
    return sm


def _one_partition(admin: AdminClient, cluster: str, topic: str) -> int | None:
    n = partition_count(admin, topic, timeout=TIMEOUT)
    if n is not None and n != 1:
        raise SchemaTopicProblem(f"{cluster}/{topic} has {n} partitions; a schema registry topic has exactly 1")
    return n


def _source_end(admin: AdminClient, cluster: str, topic: str) -> tuple[int, int]:
    """(log start, last stable offset) of the source partition."""
    return partition_ranges(admin, [TopicPartition(topic, PARTITION)], cluster)[(topic, PARTITION)]


def mirror(
    cfg: DrConfig,
    target: str,
    resolve: SecretResolver | None = None,
    chunk_records: int = 10_000,
    allow_reset: bool = False,
) -> MirrorResult:
    """Copy what the primary's registry topic gained since the last run to ``target``."""
    t0 = time.monotonic()
    sm = _settings(cfg, target)
    src, dst = cfg.cluster(sm.primary), cfg.cluster(target)
    group = cfg.names.schema_mirror_group(sm.primary, target)
    res = MirrorResult(sm.primary, target, src.schema_registry.topic, dst.schema_registry.topic)
    where = f"schema mirror {sm.primary}/{res.source_topic} -> {target}/{res.target_topic}"

    src_admin = AdminClient(client_config(src, resolve))
    if _one_partition(src_admin, sm.primary, res.source_topic) is None:
        # A registry creates its topic when it first starts: until then there is nothing to mirror,
        # a state to report, not a failure to retry.
        res.not_set_up = (
            f"{where}: not set up: {sm.primary} has no topic {res.source_topic!r} (no schema registry has "
            f"started there with kafkastore.topic={res.source_topic}; set clusters.{sm.primary}.schema_registry.topic "
            f"if it uses another)"
        )
        log.warning("%s", res.not_set_up)
        res.seconds = time.monotonic() - t0
        return res
    dst_admin = AdminClient(client_config(dst, resolve))
    res.topic_created = ensure_topic(dst_admin, res.target_topic, 1, {"cleanup.policy": "compact"}, timeout=TIMEOUT)
    if res.topic_created:
        log.info("%s: created %s on %s (compacted, 1 partition)", where, res.target_topic, target)
    else:
        _one_partition(dst_admin, target, res.target_topic)

    producer = Producer(
        client_config(
            dst,
            resolve,
            **{
                "transactional.id": group,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "transaction.timeout.ms": 60_000,
                "delivery.timeout.ms": 60_000,
            },
        )
    )
    meta = Consumer(
        client_config(
            dst, resolve, **{"group.id": group, "enable.auto.commit": False, "isolation.level": "read_committed"}
        )
    )
    source = Consumer(
        client_config(
            src,
            resolve,
            **{
                "group.id": f"{group}.reader",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
            },
        )
    )
    try:
        try:
            producer.init_transactions(TIMEOUT)  # fences any earlier run; aborts its open transaction
        except KafkaException as e:
            raise RuntimeError(
                f"{where}: initialising transactional id {group!r} on {target}: {e.args[0].str()}"
            ) from None
        target_tp = TopicPartition(res.target_topic, PARTITION)
        try:
            tp = committed_with_retry(meta, [target_tp], 60)[0]
        except KafkaException as e:
            raise RuntimeError(f"{where}: reading progress group {group!r} on {target}: {e.args[0].str()}") from None
        if tp.error is not None:
            raise RuntimeError(f"{where}: reading progress group {group!r} on {target}: {tp.error.str()}")
        committed = tp.offset if tp.offset >= 0 else None
        low, end = _source_end(src_admin, sm.primary, res.source_topic)
        if committed is None and not allow_reset:
            present = read_partitions(meta, res.target_topic, [PARTITION], timeout=60)
            if present:
                raise SchemaProgressLost(
                    f"{where}: no progress committed in group {group!r} on {target}, but {target}/{res.target_topic} "
                    f"already holds {len(present)} record(s): the progress was lost, or something else writes there. "
                    f"Copying from the start would duplicate them; check the topic, then re-run with allow_reset"
                )
        if committed is not None and committed > end:
            raise SchemaProgressLost(
                f"{where}: progress group {group!r} on {target} is at source offset {committed}, beyond the end of "
                f"{sm.primary}/{res.source_topic} ({end}): the primary's topic was recreated? Mirroring into the old "
                f"target topic would mix two registries; delete the group (and the target topic) to start over"
            )
        if committed is not None and committed < low:
            log.error("%s: source records %d..%d were removed before they were mirrored", where, committed, low - 1)
        res.start = max(committed if committed is not None else low, low)
        res.end = end
        group_meta = meta.consumer_group_metadata()
        if res.start >= end:
            # nothing new: still commit the progress so the group's offsets never expire
            producer.begin_transaction()
            producer.send_offsets_to_transaction(
                [TopicPartition(res.target_topic, PARTITION, res.start)], group_meta, TIMEOUT
            )
            producer.commit_transaction(TIMEOUT)
        else:
            _copy(producer, source, group_meta, res, sm.subject_template, chunk_records, where)
    finally:
        source.close()
        meta.close()
    res.seconds = round(time.monotonic() - t0, 3)
    log.info("%s: %s", where, res.to_dict())
    return res


def _copy(
    producer: Producer, source: Consumer, group_meta, res: MirrorResult, template: str, chunk_records: int, where: str
) -> None:
    source.assign([TopicPartition(res.source_topic, PARTITION, res.start)])
    errors: list[str] = []

    def on_delivery(err, msg):
        if err is not None and len(errors) < 5:
            errors.append(err.str())

    next_offset, done = res.start, False
    last_progress = time.monotonic()
    while not done:
        producer.begin_transaction()
        in_chunk = 0
        try:
            while not done and in_chunk < chunk_records:
                msgs = source.consume(num_messages=5000, timeout=0.1)
                if msgs:
                    last_progress = time.monotonic()
                elif time.monotonic() - last_progress > 120:
                    raise TimeoutError(
                        f"{where}: no records from the primary for 120s at offset {next_offset} (end {res.end})"
                    )
                for msg in msgs:
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            # a fresh consumer: EOF is at the last stable offset, past any
                            # transaction markers and aborted records below it
                            if msg.offset() >= res.end:
                                next_offset, done = res.end, True
                                break
                            continue
                        raise RuntimeError(f"{where}: reading offset {next_offset}: {err.str()}")
                    off = msg.offset()
                    if off >= res.end:
                        next_offset, done = res.end, True
                        break
                    res.read += 1
                    key, value = msg.key(), msg.value()
                    out_key, out_value = rename_record(key, value, template)
                    if out_key != key or out_value != value:
                        res.renamed += 1
                    kwargs = {
                        "key": out_key,
                        "value": out_value,
                        "partition": PARTITION,
                        "timestamp": msg.timestamp()[1],
                        "on_delivery": on_delivery,
                    }
                    if msg.headers():
                        kwargs["headers"] = msg.headers()
                    while True:
                        try:
                            producer.produce(res.target_topic, **kwargs)
                            break
                        except BufferError:
                            producer.poll(0.05)
                    in_chunk += 1
                    next_offset = off + 1
                    if next_offset >= res.end:
                        done = True
                        break
            left = producer.flush(120)
            if errors or left:
                raise RuntimeError(
                    f"{where}: the target refused records before source offset {next_offset}: "
                    f"{errors or [f'{left} unacknowledged after 120s']}; the transaction was rolled back"
                )
            producer.send_offsets_to_transaction(
                [TopicPartition(res.target_topic, PARTITION, next_offset)], group_meta, TIMEOUT
            )
            producer.commit_transaction(60)
        except Exception:
            try:
                producer.abort_transaction(TIMEOUT)
            except KafkaException:
                pass  # the next run's init_transactions aborts it for certain
            raise
        res.copied += in_chunk
        res.transactions += 1
    source.unassign()


def verify(cfg: DrConfig, target: str, resolve: SecretResolver | None = None) -> VerifyResult:
    """Rebuild the registry state from both topics and list every difference.

    The primary is read up to the mirror's committed progress (what the target can have by
    now; a schema registered a moment ago is not a difference), with the subject template
    applied; the target is read whole, so anything written there directly shows up.
    """
    sm = _settings(cfg, target)
    src, dst = cfg.cluster(sm.primary), cfg.cluster(target)
    src_topic, dst_topic = src.schema_registry.topic, dst.schema_registry.topic
    group = cfg.names.schema_mirror_group(sm.primary, target)
    res = VerifyResult(sm.primary, target)
    progress = Consumer(
        client_config(
            dst, resolve, **{"group.id": group, "enable.auto.commit": False, "isolation.level": "read_committed"}
        )
    )
    src_reader = Consumer(
        client_config(
            src,
            resolve,
            **{"group.id": f"{group}.verify", "enable.auto.commit": False, "isolation.level": "read_committed"},
        )
    )
    try:
        dst_admin = AdminClient(client_config(dst, resolve))
        if partition_count(AdminClient(client_config(src, resolve)), src_topic, timeout=TIMEOUT) is None:
            held = (
                0
                if partition_count(dst_admin, dst_topic, timeout=TIMEOUT) is None
                else len(read_partitions(progress, dst_topic, [PARTITION], timeout=120))
            )
            if held:
                res.differences = [
                    f"{sm.primary} has no topic {src_topic!r} but {target}/{dst_topic} holds {held} record(s)"
                ]
            else:
                res.not_set_up = f"not set up: neither {sm.primary}/{src_topic} nor {target}/{dst_topic} holds a record"
            return res
        if partition_count(dst_admin, dst_topic, timeout=TIMEOUT) is None:
            target_records = []
        else:
            tp = committed_with_retry(progress, [TopicPartition(dst_topic, PARTITION)], 60)[0]
            if tp.error is None and tp.offset >= 0:
                res.compared_up_to = tp.offset
            target_records = read_partitions(progress, dst_topic, [PARTITION], timeout=120)
        primary_records = read_partitions(src_reader, src_topic, [PARTITION], timeout=120)
    except KafkaException as e:
        raise RuntimeError(
            f"verifying {sm.primary}/{src_topic} against {target}/{dst_topic}: {e.args[0].str()}"
        ) from None
    finally:
        progress.close()
        src_reader.close()
    if res.compared_up_to is not None:
        primary_records = [r for r in primary_records if r.offset < res.compared_up_to]
    a = rebuild_state((r.offset, *rename_record(r.key, r.value, sm.subject_template)) for r in primary_records)
    b = rebuild_state((r.offset, r.key, r.value) for r in target_records)
    res.primary_records, res.target_records, res.subjects = a.records, b.records, len(a.subjects)
    res.differences = diff_states(a, b, sm.primary, target)
    res.skipped = {name: s.skipped for name, s in ((sm.primary, a), (target, b)) if s.skipped}
    return res

"""A consumer group on one cluster: its state, and committing translated offsets there under the
sync rules (:func:`kafka_dr.core.offsets.commit_decision`). The offset sync and the failover
both commit through :func:`commit_translations`.

Committed offsets are read with ``Consumer.committed`` (never the admin
ListConsumerGroupOffsets, which crashes librdkafka 2.16 while a coordinator loads).
"""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kafka_dr.core import offsets as core
from kafka_dr.core.offsets import Translation
from kafka_dr.kafka import clients, permissions
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.progress_store import committed_with_retry

TIMEOUT = 30.0


def group_state(admin, group: str, where: str) -> str:
    """The group's state on the cluster ``where`` as the broker names it; ``NOT_FOUND`` for a
    group it does not know and ``HAS_MEMBERS`` for an inactive-looking group that has members."""
    try:
        desc = admin.describe_consumer_groups([group], request_timeout=TIMEOUT)[group].result(timeout=TIMEOUT)
    except KafkaException as e:
        if e.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND:
            return "NOT_FOUND"
        if permissions.is_denied(e):
            raise permissions.denied(where, f"describe group {group!r}", "DESCRIBE", permissions.group(group)) from None
        raise RuntimeError(f"describing group {group!r} on {where}: {e.args[0].str()}") from None
    state = getattr(desc.state, "name", str(desc.state))
    if desc.members and state.upper() in core.INACTIVE_GROUP_STATES:
        return "HAS_MEMBERS"
    return state


def commit_translations(
    target,
    group: str,
    translations: list[Translation],
    state: str,
    resolve: SecretResolver | None = None,
    metadata=None,
    dry_run: bool = False,
) -> list[tuple[Translation, bool, str]]:
    """Commit ``group``'s translated offsets on ``target`` under the sync rules
    (:func:`kafka_dr.core.offsets.commit_decision`: no active member, a translated offset,
    never backwards). Returns ``(translation, committed, why)`` per partition; with
    ``dry_run`` nothing is committed and what would be says "would commit". ``metadata`` maps
    a translation to the commit's metadata string. Shared by the periodic sync and failover.
    """
    c = clients.consumer(target, group, resolve)
    try:
        try:
            got = committed_with_retry(c, [TopicPartition(t.target_topic, t.partition) for t in translations], 60)
        except KafkaException as e:
            if permissions.is_denied(e):
                raise permissions.group_offsets_refused(target.name, group) from None
            raise
        current = {(tp.topic, tp.partition): (tp.offset if tp.offset >= 0 else None) for tp in got}
        rows, to_commit = [], []
        for t in translations:
            now_at = current.get((t.target_topic, t.partition))
            ok, why = core.commit_decision(t, now_at, state)
            if not ok and t.target_offset is not None and now_at == t.target_offset:
                why = "already there"
            elif ok and dry_run:
                why = "would commit"
            rows.append((t, ok and not dry_run, why))
            if ok and not dry_run:
                args = (t.target_topic, t.partition, t.target_offset) + ((metadata(t),) if metadata else ())
                to_commit.append(TopicPartition(*args))
        if to_commit:
            try:
                c.commit(offsets=to_commit, asynchronous=False)
            except KafkaException as e:  # a member joined meanwhile: the broker refuses, we touch nothing
                if permissions.is_denied(e):
                    doing = f"commit offsets of group {group!r}"
                    raise permissions.denied(target.name, doing, "READ", permissions.group(group)) from None
                why = f"commit refused by {target.name}: {e.args[0].str()}"
                rows = [(t, False, why if ok else w) for t, ok, w in rows]
    finally:
        c.close()
    return rows

"""Refusals by a cluster's authorizer, named for the operator.

Kafka answers a missing ACL with an ``*_AUTHORIZATION_FAILED`` code and no word of which
operation was missing. Each caller knows what it was doing, so it names the operation and
the resource; this module turns that into one line: what kafka-dr's principal may not do, on
which cluster, and the binding that grants it (docs/operations.md, "kafka-dr's own ACLs").
A refusal is permanent for the job: retrying cannot grant a permission, and no record is at
fault (a copy refused for a permission is never dead-lettered).
"""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

#: the resource type each authorization error is about
DENIED = {
    KafkaError.TOPIC_AUTHORIZATION_FAILED: "topic",
    KafkaError.GROUP_AUTHORIZATION_FAILED: "group",
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "transactional id",
    KafkaError.CLUSTER_AUTHORIZATION_FAILED: "cluster",
}


class PermissionDenied(RuntimeError):
    """kafka-dr's principal lacks an ACL the step needs; the message names it and the cluster."""


def code_of(e: BaseException | KafkaError | None) -> int | None:
    """The Kafka error code of ``e`` (a ``KafkaError``, or a ``KafkaException`` carrying one)."""
    if isinstance(e, KafkaError):
        return e.code()
    if isinstance(e, KafkaException) and e.args and isinstance(e.args[0], KafkaError):
        return e.args[0].code()
    return None


def is_denied(e: BaseException | KafkaError | None) -> bool:
    return code_of(e) in DENIED


def denied(cluster: str, doing: str, operation: str, resource: str) -> PermissionDenied:
    """``doing``: what was refused ("read topic 'orders'"); ``operation`` and ``resource``: the
    binding that grants it ("READ", "topic 'orders'")."""
    return PermissionDenied(
        f"kafka-dr's principal may not {doing} on cluster {cluster!r}: it needs {operation} on {resource}"
    )


def in_flow(flow: str, refusal: PermissionDenied) -> PermissionDenied:
    """``refusal`` as a replication job says it: prefixed with its flow."""
    return PermissionDenied(f"flow {flow}: {refusal}")


def read_refused(cluster: str, name: str) -> PermissionDenied:
    return denied(cluster, f"read topic {name!r}", "READ", topic(name))


def write_refused(cluster: str, name: str) -> PermissionDenied:
    return denied(cluster, f"write to topic {name!r}", "WRITE", topic(name))


def group_offsets_refused(cluster: str, name: str) -> PermissionDenied:
    return denied(cluster, f"read the offsets of group {name!r}", "DESCRIBE", group(name))


def topic(name: str) -> str:
    return f"topic {name!r}"


def group(name: str) -> str:
    return f"group {name!r}"


def transactional_id(name: str) -> str:
    return f"transactional id {name!r}"


CLUSTER = "the cluster resource"


def write_refusal(admin, cluster: str, topics) -> PermissionDenied | None:
    """Why a transactional producer's records came back purged, when it is a missing WRITE.

    A transaction refused by the authorizer (AddPartitionsToTxn: topic authorization failed)
    purges its queued records; their delivery reports say only "purged", as for a fenced
    producer. The topics' authorized operations tell the two apart. ``None``: WRITE is there,
    or the cluster did not say (the caller treats the producer as lost, as before)."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AclOperation

    names = sorted(set(topics))
    try:
        futs = admin.describe_topics(TopicCollection(names), include_authorized_operations=True, request_timeout=10)
        for name in names:
            ops = futs[name].result(timeout=15).authorized_operations
            if ops is not None and AclOperation.WRITE not in ops:
                return write_refused(cluster, name)
    except (KafkaException, TimeoutError, KeyError):
        return None
    return None

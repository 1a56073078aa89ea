"""ACL bindings on one cluster through the AdminClient: describe, create, delete.

:class:`~kafka_dr.core.acl_sync.Acl` carries Kafka's enum names as strings; this module is the
only place that converts them. A cluster without an authorizer answers ``SECURITY_DISABLED``
(:class:`NoAuthorizer`); a principal that may not read or change ACLs gets one error naming
the cluster and the permission it lacks.
"""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from kafka_dr.core.acl_sync import Acl
from kafka_dr.kafka.clients import ClusterUnreachable
from kafka_dr.kafka.topic_admin import REQUEST_TIMEOUT, RESULT_TIMEOUT


class NoAuthorizer(RuntimeError):
    """The cluster has no authorizer: it keeps no ACLs at all."""


class AclPermissionDenied(RuntimeError):
    """kafka-dr's principal lacks the cluster permission an ACL call needs."""


#: what each call needs of kafka-dr's own principal (docs/operations.md, "Least privilege")
NEEDS = {"describe": "DESCRIBE on the cluster resource", "change": "ALTER on the cluster resource"}


def _fail(cluster: str, verb: str, e: KafkaException) -> Exception:
    err = e.args[0]
    if err.code() == KafkaError.SECURITY_DISABLED:
        return NoAuthorizer(f"cluster {cluster!r} has no authorizer (authorizer.class.name): it keeps no ACLs")
    if err.code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
        need = NEEDS["describe" if verb == "describe" else "change"]
        return AclPermissionDenied(
            f"ACL sync: kafka-dr's principal may not {verb} ACLs on cluster {cluster!r}: it needs {need}"
        )
    return ClusterUnreachable(f"ACL sync: {verb} ACLs on cluster {cluster!r}: {err.str()}")


#: confluent-kafka calls Kafka's CLUSTER resource type BROKER
_TO_CLIENT = {"CLUSTER": "BROKER"}
_FROM_CLIENT = {v: k for k, v in _TO_CLIENT.items()}


def _restype(name: str) -> ResourceType:
    return ResourceType[_TO_CLIENT.get(name, name)]


def _fields(a: Acl) -> tuple:
    """The constructor arguments of a binding, and of the filter that matches exactly it."""
    return (
        _restype(a.resource_type),
        a.name,
        ResourcePatternType[a.pattern],
        a.principal,
        a.host,
        AclOperation[a.operation],
        AclPermissionType[a.permission],
    )


def _binding(a: Acl) -> AclBinding:
    return AclBinding(*_fields(a))


def _acl(b: AclBinding) -> Acl:
    return Acl(
        _FROM_CLIENT.get(b.restype.name, b.restype.name),
        b.name,
        b.resource_pattern_type.name,
        b.principal,
        b.host,
        b.operation.name,
        b.permission_type.name,
    )


def describe_acls(admin: AdminClient, cluster: str) -> set[Acl]:
    """Every ACL binding of the cluster.

    The client answers "no bindings" where the broker refused the request (no permission, no
    authorizer): read as the truth, that would make the sync delete what it created on the
    target. So the principal's DESCRIBE on the cluster is checked first."""
    try:
        d = admin.describe_cluster(include_authorized_operations=True, request_timeout=REQUEST_TIMEOUT)
        ops = d.result(timeout=RESULT_TIMEOUT).authorized_operations
    except KafkaException as e:
        raise _fail(cluster, "describe", e) from None
    # the broker lists the principal's cluster operations (implied ones included) only to a
    # principal allowed to DESCRIBE the cluster; without an authorizer it lists them all
    if ops is None or "DESCRIBE" not in {o.name for o in ops}:
        raise AclPermissionDenied(
            f"ACL sync: kafka-dr's principal may not describe ACLs on cluster {cluster!r}: it needs {NEEDS['describe']}"
        )
    every = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    try:
        found = admin.describe_acls(every, request_timeout=REQUEST_TIMEOUT).result(timeout=RESULT_TIMEOUT)
    except KafkaException as e:
        raise _fail(cluster, "describe", e) from None
    return {_acl(b) for b in found}


def create_acls(admin: AdminClient, cluster: str, acls: Iterable[Acl]) -> dict[Acl, str]:
    """Create ``acls``; returns the ones the cluster refused, each with why. Raises
    :class:`NoAuthorizer` for a cluster without one (describing ACLs there answers "none")."""
    acls = sorted(acls)
    if not acls:
        return {}
    errors = {}
    futs = admin.create_acls([_binding(a) for a in acls], request_timeout=REQUEST_TIMEOUT)
    for b, fut in futs.items():
        try:
            fut.result(timeout=RESULT_TIMEOUT)
        except KafkaException as e:
            why = _fail(cluster, "create", e)
            if isinstance(why, NoAuthorizer):
                raise why from None
            errors[_acl(b)] = f"create {_acl(b)}: {why}"
    return errors


def delete_acls(admin: AdminClient, cluster: str, acls: Iterable[Acl]) -> dict[Acl, str]:
    """Delete exactly ``acls`` (each filter names every field: nothing else can match);
    returns the ones the cluster refused, each with why."""
    acls = sorted(acls)
    if not acls:
        return {}
    errors = {}
    by_filter = {_filter(a): a for a in acls}
    futs = admin.delete_acls(list(by_filter), request_timeout=REQUEST_TIMEOUT)
    for f, fut in futs.items():
        try:
            fut.result(timeout=RESULT_TIMEOUT)
        except KafkaException as e:
            errors[by_filter[f]] = f"delete {by_filter[f]}: {_fail(cluster, 'delete', e)}"
    return errors


def _filter(a: Acl) -> AclBindingFilter:
    return AclBindingFilter(*_fields(a))

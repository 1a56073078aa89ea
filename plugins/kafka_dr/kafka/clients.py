"""Build confluent-kafka clients for a configured cluster.

Secrets are resolved here, at the edge, and only into the dict handed to librdkafka; errors
name the cluster and the reference, never a value
(:func:`~kafka_dr.core.secret_refs.mask_config` gives a log-safe view).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from kafka_dr.core.config import ClusterConfig
from kafka_dr.core.secret_refs import SecretRef, env_resolver

SecretResolver = Callable[[SecretRef], str]

#: librdkafka's own log lines go to Python logging under this name (served when a client
#: polls), so they land in task and job logs with everything else instead of raw stderr.
LIBRDKAFKA_LOG = logging.getLogger("kafka_dr.librdkafka")


class ClusterUnreachable(RuntimeError):
    """A cluster did not answer within the time allowed."""


class AuthenticationFailed(ClusterUnreachable):
    """The cluster answered but refused the credentials (or the TLS handshake): retrying
    cannot help. The message names the cluster and the setting, never the secret."""


def auth_problem(cluster: ClusterConfig, resolve: SecretResolver | None = None, timeout: float = 6.0) -> str | None:
    """Why ``cluster`` refuses us, when it is an authentication or TLS failure; else ``None``.

    librdkafka reports a refused SASL login or TLS handshake only to the error callback (the
    call itself just times out as "transport failure"), so a short probe listens for it.
    """
    seen: list = []
    try:
        conf = client_config(cluster, resolve, error_cb=seen.append, log_level=0)
    except LookupError as e:
        return f"a credential could not be resolved: {e}"
    client = AdminClient(conf)
    try:
        client.list_topics(timeout=timeout)
    except KafkaException:
        pass
    return refusal(cluster, client, seen)


def refusal(cluster: ClusterConfig, client: AdminClient, seen) -> str | None:
    """The authentication or TLS failure among the errors ``client``'s error callback collected
    in ``seen`` (served here), named with the setting to check; else ``None``."""
    client.poll(0.5)  # error callbacks are served by poll
    from confluent_kafka import KafkaError

    for err in seen:
        if err.code() == KafkaError._AUTHENTICATION:
            who = cluster.client.get("sasl.username")
            return (
                f"authentication failed ({cluster.client.get('sasl.mechanisms', 'SASL')} as user from {who}; "
                f"check sasl.username/sasl.password)"
            )
        if err.code() == KafkaError._SSL:
            return "TLS handshake failed (check ssl.ca.location and the broker certificate)"
    return None


def unreachable(
    cluster: ClusterConfig, what: str, error: str, resolve: SecretResolver | None = None
) -> ClusterUnreachable:
    """The error for a cluster that did not answer ``what``: :class:`AuthenticationFailed` when
    the probe finds refused credentials, else :class:`ClusterUnreachable`."""
    problem = auth_problem(cluster, resolve)
    if problem:
        return AuthenticationFailed(f"{what}: cluster {cluster.name!r} ({cluster.bootstrap_servers}): {problem}")
    return ClusterUnreachable(f"{what}: cluster {cluster.name!r} ({cluster.bootstrap_servers}) did not answer: {error}")


def client_config(cluster: ClusterConfig, resolve: SecretResolver | None = None, **overrides: Any) -> dict[str, Any]:
    """The librdkafka settings for ``cluster`` with secrets resolved."""
    resolve = resolve or env_resolver()
    conf: dict[str, Any] = {"bootstrap.servers": cluster.bootstrap_servers, "logger": LIBRDKAFKA_LOG}
    for key, value in cluster.client.items():
        if isinstance(value, SecretRef):
            try:
                conf[key] = resolve(value)
            except LookupError as e:
                raise LookupError(f"cluster {cluster.name!r}, client.{key}: {e}") from None
        else:
            conf[key] = value
    conf.update(overrides)
    return conf


def admin(cluster: ClusterConfig, resolve: SecretResolver | None = None, **overrides: Any) -> AdminClient:
    return AdminClient(client_config(cluster, resolve, **overrides))


def producer(cluster: ClusterConfig, resolve: SecretResolver | None = None, **overrides: Any) -> Producer:
    defaults = {"enable.idempotence": True, "linger.ms": 5, "compression.type": "lz4"}
    return Producer(client_config(cluster, resolve, **{**defaults, **overrides}))


def one_shot_transactional_config(
    cluster: ClusterConfig, resolve: SecretResolver | None, txn_id: str, **overrides: Any
) -> dict[str, Any]:
    """Settings of a producer that lives for one ``init_transactions`` (and perhaps an abort):
    fencing another copier's id, clearing an orphaned commit.

    Why ``enable.sparse.connections`` is off: with librdkafka's sparse connections (the
    default) ``init_transactions`` waits for the transaction coordinator's broker connection,
    which is only opened at the next turn of a 500 ms timer when the bootstrap connection is
    retired first ("broker has no address yet: postponing connect"). Measured on the lab, 8
    fresh producers each: 55 or about 505 ms per ``init_transactions`` (half of them the
    latter) against 3-8 ms with every broker connected at once. A fixed-range copy fences the
    flow's task id with each new producer, a task copier every per-partition id of its
    partitions: each paid it.

    Why only here: the copiers' own producers live on through broker restarts and network
    cuts. With this setting on them too, the lab's network-cut drill once stalled for six
    minutes after the cut (its task copier stuck in a call until the query's watchdog
    restarted it; nothing lost or duplicated) in a clean-clone CI run, and a run of four lab
    test files was 8 minutes slower; the cause was not found, so they keep librdkafka's
    default and avoid the wait another way (:func:`connect_to_a_known_broker`)."""
    return client_config(
        cluster, resolve, **{"transactional.id": txn_id, "enable.sparse.connections": False, **overrides}
    )


#: Kafka's internal topic of committed offsets (transactional progress commits go there)
OFFSETS_TOPIC = "__consumer_offsets"


def connect_to_a_known_broker(client: Producer, timeout: float = 10.0, tries: int = 3) -> None:
    """Have ``client`` hold a connection to a broker it knows by id (not its bootstrap entry)
    before its first coordinator request. Called before ``init_transactions`` by the copiers'
    own producers, which keep librdkafka's sparse connections
    (:func:`one_shot_transactional_config` says why).

    Why: librdkafka retires the bootstrap connection once metadata names the brokers. A
    transaction-coordinator lookup that finds no connection up then, or whose request was
    lost with the retired one, is retried only by a fixed 500 ms timer (``rdkafka_txnmgr.c``);
    a broker coming up does not cut it short. A metadata request waits for a usable broker to
    connect, so asking until a broker known by id answers leaves one up for the lookup.

    Measured on the lab (fresh producers, one broker): ``init_transactions`` alone took 55 ms,
    or about 505 ms in 3 of 40 tries; after this call
    (about 54 ms, librdkafka's connect throttle) it took 2-8 ms in 40 of 40. A backlog of
    1,000,000 records of 100 B, interleaved runs: 171,000 records/s on average against
    163,000 without, the job's start-up 16 s against 17.6 s. A cluster that does not answer
    within ``timeout`` is left to ``init_transactions``, which reports it in its own terms.

    The request names one topic, ``__consumer_offsets`` (where the transactions' progress
    goes), not all topics: it runs for every new producer, and a whole cluster's metadata is
    large on a cluster of many topics. A broker creates that internal topic when it is first
    asked for it, as it does for a first consumer group."""
    deadline = time.monotonic() + timeout
    for _ in range(tries):
        left = deadline - time.monotonic()
        if left <= 0:
            return
        try:
            if client.list_topics(topic=OFFSETS_TOPIC, timeout=left).orig_broker_id >= 0:
                return
        except KafkaException:
            return


def consumer(
    cluster: ClusterConfig, group_id: str, resolve: SecretResolver | None = None, **overrides: Any
) -> Consumer:
    defaults = {
        "group.id": group_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
    }
    return Consumer(client_config(cluster, resolve, **{**defaults, **overrides}))


def cluster_id(cluster: ClusterConfig, resolve: SecretResolver | None = None, timeout: float = 10.0) -> str:
    """Ask the cluster for its id; raises :class:`ClusterUnreachable` naming the cluster (as
    :class:`AuthenticationFailed` when it refused the login, which this same client heard: a
    dead cluster costs ``timeout``, not a second probe on top)."""
    seen: list = []
    client = admin(cluster, resolve, error_cb=seen.append)
    try:
        md = client.list_topics(timeout=timeout)
    except KafkaException as e:
        problem = refusal(cluster, client, seen)
        if problem:
            raise AuthenticationFailed(f"cluster {cluster.name!r} ({cluster.bootstrap_servers}): {problem}") from None
        raise ClusterUnreachable(
            f"cluster {cluster.name!r} ({cluster.bootstrap_servers}) did not answer a metadata request "
            f"within {timeout:.0f}s: {e.args[0]}"
        ) from None
    return md.cluster_id

"""SCRAM users of a cluster: names and mechanisms only. Kafka never returns the salted
credentials, so they can be compared but not copied (docs/operations.md, "Client-quota sync")."""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from kafka_dr.kafka.clients import ClusterUnreachable
from kafka_dr.kafka.topic_admin import REQUEST_TIMEOUT, RESULT_TIMEOUT


def describe_scram_users(admin: AdminClient, cluster: str) -> dict[str, set[str]]:
    """``{user: {"SCRAM-SHA-256", ...}}``; empty on a cluster without SCRAM users."""
    try:
        found = admin.describe_user_scram_credentials(request_timeout=REQUEST_TIMEOUT).result(timeout=RESULT_TIMEOUT)
    except KafkaException as e:
        raise ClusterUnreachable(f"describing SCRAM users on cluster {cluster!r}: {e.args[0].str()}") from None
    return {user: {i.mechanism.name.replace("_", "-") for i in d.scram_credential_infos} for user, d in found.items()}

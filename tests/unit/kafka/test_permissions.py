"""How a refusal by a cluster's authorizer is recognised and named."""

from confluent_kafka import KafkaError, KafkaException

from kafka_dr.kafka import permissions
from kafka_dr.spark.supervision import is_permanent


def test_each_authorization_error_is_a_refusal_and_nothing_else_is():
    for code in (
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    ):
        assert permissions.is_denied(KafkaError(code))
        assert permissions.is_denied(KafkaException(KafkaError(code)))
    for code in (KafkaError._PURGE_QUEUE, KafkaError._TRANSPORT, KafkaError.SASL_AUTHENTICATION_FAILED):
        assert not permissions.is_denied(KafkaError(code))
    assert not permissions.is_denied(RuntimeError("Topic authorization failed"))
    assert not permissions.is_denied(None)


def test_the_line_names_the_operation_the_resource_and_the_cluster():
    e = permissions.denied("east", "read topic 'orders'", "READ", permissions.topic("orders"))
    assert (
        str(e) == "kafka-dr's principal may not read topic 'orders' on cluster 'east': it needs READ on topic 'orders'"
    )
    g = permissions.denied("west", "commit offsets of group 'billing'", "READ", permissions.group("billing"))
    assert str(g).endswith("on cluster 'west': it needs READ on group 'billing'")


def test_a_refusal_stops_the_replication_job_instead_of_restarting_it():
    line = "flow east_to_west: " + str(
        permissions.denied("west", "write to topic 'o'", "WRITE", permissions.topic("o"))
    )
    assert is_permanent(line)
    assert is_permanent("PermissionDenied: whatever the wrapping")

"""kafka-dr as an Airflow provider (the ``apache_airflow_provider`` entry point): Airflow lists
it with its version among the installed providers. The status page registers as a plugin of
its own (``airflow.plugins``); listing it here too would register it twice."""

from __future__ import annotations


def get_provider_info() -> dict:
    from kafka_dr import __version__

    return {
        "package-name": "kafka-dr",
        "name": "kafka-dr",
        "description": "Disaster recovery for Apache Kafka: replication on Spark, failover and failback DAGs, "
        "data-quality proof that the clusters agree.",
        "versions": [__version__],
    }

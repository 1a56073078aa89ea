"""kafka-dr: Airflow-scheduled disaster recovery for Apache Kafka.

Layers (data flows one way: config -> plan -> Spark job / Airflow task -> Kafka):

- ``kafka_dr.core``: pure domain (config model, loop policies, provenance, translation).
- ``kafka_dr.kafka``: adapters over confluent-kafka.
- ``kafka_dr.lab``: the local lab of real Apache Kafka brokers.
- ``kafka_dr.airflow``: hooks, operators and wiring for Airflow.
"""

__version__ = "0.2.0"

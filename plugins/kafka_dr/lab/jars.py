"""The lab's Apache Kafka jars: the broker, the tools and MirrorMaker 2, from Maven Central.

The pom next to this file names them; :func:`kafka_dr.kafka.jvm.fetch` copies their runtime
classpath into ``$KAFKA_DR_CACHE/kafka-<version>/`` (default ``~/.cache/kafka-dr``) once.
"""

from __future__ import annotations

from pathlib import Path

from kafka_dr.kafka.jvm import KAFKA_VERSION, fetch

DEFAULT_KAFKA_VERSION = KAFKA_VERSION
POM = Path(__file__).with_name("pom.xml")


def ensure_jars(version: str = DEFAULT_KAFKA_VERSION) -> Path:
    """Return the folder holding Kafka ``version``'s jars, downloading them if needed."""
    return fetch(POM, "kafka", version, "kafka_2.13-*.jar")

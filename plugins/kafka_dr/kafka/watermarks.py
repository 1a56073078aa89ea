"""A partition's watermarks, read from its leader while its leadership settles."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaException, TopicPartition

from kafka_dr.kafka.topic_admin import SETTLING


def watermarks(consumer: Consumer, tp: TopicPartition, timeout: float) -> tuple[int, int]:
    """(low, high) of ``tp`` from its leader, waiting up to ``timeout`` seconds while the
    partition's leadership settles (a topic just created, by the planner or anyone else;
    :data:`~kafka_dr.kafka.topic_admin.SETTLING`)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return consumer.get_watermark_offsets(tp, timeout=max(1.0, deadline - time.monotonic()), cached=False)
        except KafkaException as e:
            if e.args[0].code() not in SETTLING or time.monotonic() >= deadline:
                raise
            time.sleep(0.1)

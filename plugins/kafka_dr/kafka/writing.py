"""Produce many records without tripping over librdkafka's local queue limit."""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka import Producer

#: (key, value, headers, timestamp_ms or None, partition or None)
Row = tuple


def produce_all(producer: Producer, topic: str, rows: Iterable[Row], timeout: float = 60.0) -> int:
    """Produce every row, waiting for queue space when full; raise if any is not acknowledged.

    Returns the number of records acknowledged. Errors name the topic and the first failure.
    """
    errors: list[str] = []

    def on_delivery(err, msg):
        if err is not None and len(errors) < 5:
            errors.append(f"{msg.topic()}[{msg.partition()}]: {err.str()}")

    n = 0
    for key, value, headers, ts, partition in rows:
        kwargs = {"key": key, "value": value, "headers": headers, "on_delivery": on_delivery}
        if ts is not None:
            kwargs["timestamp"] = ts
        if partition is not None:
            kwargs["partition"] = partition
        while True:
            try:
                producer.produce(topic, **kwargs)
                break
            except BufferError:
                producer.poll(0.05)
        n += 1
        if n % 1000 == 0:
            producer.poll(0)
    left = producer.flush(timeout)
    if left or errors:
        raise RuntimeError(
            f"producing to {topic}: {left} record(s) unacknowledged after {timeout:.0f}s; errors: {errors}"
        )
    return n

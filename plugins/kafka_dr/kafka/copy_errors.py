"""What a copy's errors mean, as the copiers act on them.

- a record the target refuses stops the flow, or is set aside in the dead-letter topic;
- a lost producer (fenced by a newer one of its transactional id, or failed fatally) is no
  refusal: the range is redone from committed progress with a fresh producer;
- a target that did not answer in time is no refusal either: the chunk is rolled back and the
  job restarts with backoff;
- a source whose log now starts past the copy position is read again from its log start.
"""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException, Producer


class RecordRejected(RuntimeError):
    """The target refused a record and no dead-letter topic is configured."""


class ProducerLost(RuntimeError):
    """This copier's producer was fenced or failed fatally; a fresh one can redo the range."""


class BelowLogStart(Exception):
    """The source answered "offset out of range": its log now starts after our position."""


#: delivery errors that mean "the target did not answer in time", not "the target refused this record"
TARGET_UNAVAILABLE = {
    KafkaError._MSG_TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError._TIMED_OUT,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError.NOT_ENOUGH_REPLICAS,
    KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError._ALL_BROKERS_DOWN,
}

#: errors that mean "this producer instance is done" (fenced by a newer one with the same
#: transactional id, or fatal): its queued records come back purged. Spark running a
#: partition's task in another Python worker, whose cached copier fences this one, causes it.
PRODUCER_LOST = {
    KafkaError._PURGE_QUEUE,
    KafkaError._PURGE_INFLIGHT,
    KafkaError._FENCED,
    KafkaError._FATAL,
    KafkaError.INVALID_PRODUCER_EPOCH,
    KafkaError.PRODUCER_FENCED,
}

#: client errors that mean a connection to the cluster was lost
CONNECTION_LOST = {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN}


def producer_lost(e: BaseException) -> bool:
    """Does ``e`` mean this producer is done (a redo with a fresh one is safe), not a refusal?"""
    if isinstance(e, ProducerLost):
        return True
    if isinstance(e, SystemError) and isinstance(e.__cause__, KafkaException):
        # confluent-kafka raises a fatal error (fenced) from the poll or flush that serves it; when
        # that call serves a delivery report next, Python raises SystemError caused by it
        return producer_lost(e.__cause__)
    if isinstance(e, SystemError) and e.__cause__ is None and producer_call_returned_null(e):
        return True
    if isinstance(e, KafkaException) and e.args and isinstance(e.args[0], KafkaError):
        err = e.args[0]
        return err.code() in PRODUCER_LOST or err.fatal()
    return False


def producer_call_returned_null(e: SystemError) -> bool:
    """A ``cimpl.Producer`` method returned NULL without an exception: only the binding's error
    path for a fatal (fenced) producer does that, the same race as above with nothing chained."""
    return "of 'cimpl.Producer' objects> returned NULL" in str(e)


def target_missing(producer: Producer, topic: str) -> bool:
    """Is the target topic gone? (A refused chunk then is no record's fault: no dead letter.)"""
    try:
        t = producer.list_topics(topic, timeout=10).topics.get(topic)
    except KafkaException:
        return False
    return t is None or (t.error is not None and t.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART)

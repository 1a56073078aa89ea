"""Which producer errors mean "this producer is done, redo the range with a fresh one" rather
than "the target refused the record" (a refusal stops the flow; a lost producer must not)."""

from confluent_kafka import KafkaError, KafkaException

from kafka_dr.kafka.copy_errors import ProducerLost, producer_lost


def test_fenced_purged_and_fatal_errors_mean_a_lost_producer():
    for code in (KafkaError._FENCED, KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT, KafkaError.PRODUCER_FENCED):
        assert producer_lost(KafkaException(KafkaError(code)))
    assert producer_lost(KafkaException(KafkaError(KafkaError._STATE, fatal=True)))
    assert producer_lost(ProducerLost("x"))


def test_a_system_error_caused_by_a_fatal_error_means_a_lost_producer():
    """A flush that serves a fatal error and then a delivery report raises SystemError caused
    by the fatal error (confluent-kafka 2.16.1, a fenced task copier's flush)."""
    fenced = KafkaException(KafkaError(KafkaError._FENCED, fatal=True))
    try:
        raise SystemError("Reports.delivery returned a result with an exception set") from fenced
    except SystemError as e:
        assert producer_lost(e)
    assert not producer_lost(SystemError("no cause"))


def test_a_producer_call_that_returned_null_without_an_exception_means_a_lost_producer():
    """The same race can leave no exception to chain (1 in 8 fenced flushes on the lab, 2.16.1):
    only a producer method's own NULL counts, not any SystemError."""
    assert producer_lost(
        SystemError("<method 'flush' of 'cimpl.Producer' objects> returned NULL without setting an exception")
    )
    assert producer_lost(
        SystemError("<method 'poll' of 'cimpl.Producer' objects> returned NULL without setting an exception")
    )
    assert not producer_lost(
        SystemError("<method 'poll' of 'cimpl.Consumer' objects> returned NULL without setting an exception")
    )
    assert not producer_lost(SystemError("error return without exception set"))


def test_refusals_and_other_errors_are_not_a_lost_producer():
    assert not producer_lost(KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)))
    assert not producer_lost(KafkaException(KafkaError(KafkaError.INVALID_RECORD)))
    assert not producer_lost(RuntimeError("anything"))

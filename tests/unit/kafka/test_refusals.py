"""Which record a refusal by the target is blamed on (kafka_dr.kafka.refusals), and the batch
sizing that keeps batches of several records within the target topics' limits
(kafka_dr.kafka.target_limits.producer_sizing). Delivery reports are plain stand-ins: what the
copier reads of one is its key and value."""

from types import SimpleNamespace

from confluent_kafka import KafkaError

from kafka_dr.kafka.refusals import Chunk
from kafka_dr.kafka.target_limits import producer_sizing

TOO_LARGE = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)
H = [("h", b"1")]


def _report(value: bytes):
    return SimpleNamespace(key=lambda: b"k", value=lambda: value, offset=lambda: -1)


def test_batches_stay_within_the_smallest_limit_and_nothing_below_the_largest_is_refused_at_produce():
    assert producer_sizing([200_000]) == {"batch.size": 200_000, "message.max.bytes": 1_000_000}
    assert producer_sizing([4_000_000, 1_048_588]) == {"batch.size": 1_000_000, "message.max.bytes": 4_000_000}
    assert producer_sizing([20_000, None, 1_048_588]) == {"batch.size": 20_000, "message.max.bytes": 1_048_588}
    assert producer_sizing([None]) == producer_sizing([]) == {"batch.size": 1_000_000, "message.max.bytes": 1_000_000}


def test_a_refusal_for_size_is_blamed_on_the_record_too_large_on_its_own_not_the_first_of_its_batch():
    chunk = Chunk(first_offset=3, precise=True, limit=20_000)
    for off in (3, 4):  # refused with it, each about 80 bytes on its own
        chunk.delivered(off, H, TOO_LARGE, _report(b"small"))
    chunk.delivered(5, H, TOO_LARGE, _report(b"x" * 30_000))
    chunk.delivered(6, H, TOO_LARGE, _report(b"x" * 30_000))
    # 61 + length 3 + (attributes, deltas 3 + key 2 + value 3 + 30,000 + header count 1 + header 4)
    assert (chunk.error_offset, chunk.blamed(), chunk.too_large_bytes) == (3, 5, 30_077)
    assert chunk.reason("west", "orders", 20_000) == (
        "Broker: Message size too large (its own record batch is 30077 bytes, above "
        "west/orders's max.message.bytes of 20000)"
    )


def test_a_refusal_for_size_with_no_record_too_large_on_its_own_is_blamed_on_none():
    chunk = Chunk(first_offset=0, precise=True, limit=20_000)
    chunk.delivered(0, H, TOO_LARGE, _report(b"x" * 15_000))
    chunk.delivered(1, H, TOO_LARGE, _report(b"x" * 15_000))
    assert chunk.blamed() == -1


def test_without_a_known_limit_or_for_other_refusals_the_first_refused_record_is_blamed():
    unknown = Chunk(first_offset=0, precise=True)
    unknown.delivered(0, H, TOO_LARGE, _report(b"small"))
    other = Chunk(first_offset=0, precise=True, limit=20_000)
    other.delivered(0, H, KafkaError(KafkaError.INVALID_RECORD), _report(b"x" * 30_000))
    other.delivered(1, H, TOO_LARGE, _report(b"x" * 30_000))
    assert (unknown.blamed(), other.blamed()) == (0, 0)


def test_a_chunk_that_was_not_precise_blames_no_record_until_redone():
    chunk = Chunk(first_offset=0)
    chunk.error = TOO_LARGE  # from the producer's error-only reports
    assert chunk.blamed() == -1


def test_a_record_refused_at_produce_is_blamed_with_its_size():
    chunk = Chunk(first_offset=0)
    chunk.refused_at_produce(7, TOO_LARGE, 1_500_100)
    assert (chunk.blamed(), chunk.reason("west", "t", None)) == (
        7,
        "Broker: Message size too large (its own record batch is 1500100 bytes)",
    )

"""Records against the target topic's ``max.message.bytes``, on the lab's real brokers.

What must hold: a record whose own record batch fits the target topic's limit is copied,
whatever the size of its neighbours (the copier's batches stay within the limit); a record
whose own batch does not fit is the one named (or, with a dead-letter topic, the only one set
aside), also when the limit was lowered after the copier sized its batches.
"""

from __future__ import annotations

import random
import re
import time

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
from test_bad_input import _big_source_topic
from test_replication import flow_config
from test_task_copier import _until_progress

from kafka_checks import check_replica, read_sent, read_topic
from kafka_dr.core.config_load import load_config
from kafka_dr.core.record_batch import own_batch_bytes
from kafka_dr.kafka import clients
from kafka_dr.kafka.copier import RangeCopier
from kafka_dr.kafka.copy_errors import RecordRejected
from kafka_dr.kafka.copy_spec import OPEN, RangeSpec
from kafka_dr.kafka.progress_store import read_committed_progress
from kafka_dr.kafka.task_copier import TaskCopier
from kafka_dr.kafka.topic_admin import describe_topic_configs
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.kafka.writing import produce_all

pytestmark = [pytest.mark.lab]

SMALL_LIMIT = 20_000  #: the target topic's max.message.bytes in the refusal tests
BIG = 30_000  #: a value that does not fit SMALL_LIMIT on its own


def _rows(values: dict[int, bytes], n: int, first: int = 0) -> list:
    """``n`` records from source offset ``first``: small ones, except the values given by offset."""
    return [(b"k%d" % i, values.get(i, b"small-%d" % i), [("h", b"%d" % i)], None, 0) for i in range(first, first + n)]


def _random(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)  # incompressible: lz4 cannot make it fit


def _setup(lab, tmp_path, topic: str, target_limit: int, rows: list, **flow_keys):
    """Config, flow, and ``topic`` with one partition on east (holding ``rows``) and on west
    (``max.message.bytes`` = ``target_limit``); the dead-letter topic too when configured."""
    cfg = load_config(flow_config(lab, tmp_path, [topic], **flow_keys))
    flow = next(f for f in cfg.flows if f.source == "east" and f.target == "west")
    east, west = cfg.cluster("east"), cfg.cluster("west")
    ensure_topic(clients.admin(east), topic, partitions=1)
    ensure_topic(clients.admin(west), topic, partitions=1, config={"max.message.bytes": str(target_limit)})
    if flow.dead_letter_topic:
        ensure_topic(clients.admin(west), flow.dead_letter_topic, partitions=1)
    produce_all(clients.producer(east), topic, rows)
    return cfg, flow


def test_a_record_is_taken_alone_up_to_its_own_batch_size_and_refused_a_byte_above(lab, lab_config, topic_name):
    """own_batch_bytes is what the broker measures: a topic whose max.message.bytes is exactly
    a record's own batch takes it, one a byte smaller refuses it."""
    west = lab_config.cluster("west")
    key, value, headers = b"kkk", _random(5000, 1), [("a", b"xyz"), ("nul", None)]
    answers = {}
    for limit in (5084, 5083):
        topic = f"{topic_name}.{limit}"
        ensure_topic(clients.admin(west), topic, partitions=1, config={"max.message.bytes": str(limit)})
        errors: list = []
        p = clients.producer(west, **{"compression.type": "none"})
        p.produce(
            topic,
            key=key,
            value=value,
            headers=headers,
            partition=0,
            on_delivery=lambda err, _msg, errors=errors: errors.append(err),
        )
        assert p.flush(30) == 0
        answers[limit] = errors[0] and errors[0].code()
    assert own_batch_bytes(key, value, headers) == 5084
    assert answers == {5084: None, 5083: KafkaError.MSG_SIZE_TOO_LARGE}


def test_a_record_above_the_limit_is_named_and_nothing_after_the_committed_point_copied(lab, tmp_path, topic_name):
    cfg, flow = _setup(lab, tmp_path, topic_name, SMALL_LIMIT, _rows({5: _random(BIG, 5)}, 10))
    east, west = cfg.cluster("east"), cfg.cluster("west")
    copier = RangeCopier(cfg, flow)
    try:
        assert copier.copy(RangeSpec(topic_name, 0, 0, 3, topic_name)).written == 3
        with pytest.raises(
            RecordRejected, match=rf"refused east/{re.escape(topic_name)}\[0\]@5 .*max\.message\.bytes of {SMALL_LIMIT}"
        ):
            copier.copy(RangeSpec(topic_name, 0, 3, 10, topic_name))
    finally:
        copier.close()
    check_replica(
        "west",
        read_topic(west, topic_name),
        [s for s in read_sent(east, topic_name) if s.offset < 3],
        source_topic=topic_name,
    )
    assert read_committed_progress(cfg, flow, [(topic_name, 0)])[(topic_name, 0)]["next_offset"] == 3


def test_with_a_dead_letter_topic_only_the_record_above_the_limit_is_set_aside(lab, tmp_path, topic_name):
    cfg, flow = _setup(
        lab, tmp_path, topic_name, SMALL_LIMIT, _rows({5: _random(BIG, 5)}, 10), dead_letter_topic=f"{topic_name}.dlq"
    )
    east, west = cfg.cluster("east"), cfg.cluster("west")
    copier = RangeCopier(cfg, flow)
    try:
        result = copier.copy(RangeSpec(topic_name, 0, 0, 10, topic_name))
    finally:
        copier.close()
    assert (result.read, result.written, result.dead_lettered) == (10, 9, 1)
    # the refusal is counted: the record once, the transactions it rolled back each
    assert result.refused == 1 and result.aborted >= 1, (result.refused, result.aborted)
    check_replica(
        "west",
        read_topic(west, topic_name),
        [s for s in read_sent(east, topic_name) if s.offset != 5],
        source_topic=topic_name,
    )
    dlq = read_topic(west, f"{topic_name}.dlq")
    assert [dict(r.headers)["dr.dlq.source"] for r in dlq] == [f"east/{topic_name}[0]@5".encode()]
    assert (
        dlq[0].key == b"k5" and dlq[0].value is None and dict(dlq[0].headers)["dr.dlq.value.bytes"] == str(BIG).encode()
    )


#: 12 records of 120 KiB: each fits a limit of 200,000 bytes on its own, two together do not
FITTING = {i: _random(120 * 1024, i) for i in range(12)}


def test_records_that_each_fit_the_limit_are_all_copied(lab, tmp_path, topic_name):
    cfg, flow = _setup(lab, tmp_path, topic_name, 200_000, _rows(FITTING, 12))
    east, west = cfg.cluster("east"), cfg.cluster("west")
    copier = RangeCopier(cfg, flow)
    try:
        result = copier.copy(RangeSpec(topic_name, 0, 0, 12, topic_name))
    finally:
        copier.close()
    assert (result.written, result.dead_lettered, result.transactions) == (12, 0, 1)
    assert (result.refused, result.aborted) == (0, 0)
    check_replica("west", read_topic(west, topic_name), read_sent(east, topic_name), source_topic=topic_name)


def test_a_streaming_task_copies_records_that_each_fit_the_limit(lab, tmp_path, topic_name):
    cfg, flow = _setup(lab, tmp_path, topic_name, 200_000, _rows(FITTING, 12))
    east, west = cfg.cluster("east"), cfg.cluster("west")
    copier = TaskCopier(cfg, flow)
    try:
        results = copier.copy(
            [RangeSpec(topic_name, 0, 0, OPEN, topic_name)], until=_until_progress(cfg, flow, topic_name, {0: 12})
        )
    finally:
        copier.close()
    assert (results[0].written, results[0].dead_lettered) == (12, 0)
    assert copier.helper.producers.held == {}  # no transaction was refused and handed to the per-partition copier
    check_replica("west", read_topic(west, topic_name), read_sent(east, topic_name), source_topic=topic_name)


def test_a_limit_lowered_while_copying_sets_aside_only_the_record_above_it(lab, tmp_path, topic_name):
    """The copier sized its batches for 200,000 bytes; the limit then drops to 20,000. The
    refused transaction's batch held the large record with others: the redo sizes the batches
    again, sets aside the large record only, and copies the records of 15,000 bytes, which fit
    the new limit one by one but not two together."""
    cfg, flow = _setup(lab, tmp_path, topic_name, 200_000, _rows({}, 5), dead_letter_topic=f"{topic_name}.dlq")
    east, west = cfg.cluster("east"), cfg.cluster("west")
    copier = RangeCopier(cfg, flow)
    try:
        assert copier.copy(RangeSpec(topic_name, 0, 0, 5, topic_name)).written == 5
        _set_limit(west, topic_name, SMALL_LIMIT)
        produce_all(
            clients.producer(east),
            topic_name,
            _rows(
                {6: _random(15_000, 6), 7: _random(15_000, 7), 10: _random(BIG, 10), 11: _random(15_000, 11)},
                10,
                first=5,
            ),
        )
        result = copier.copy(RangeSpec(topic_name, 0, 5, 15, topic_name))
    finally:
        copier.close()
    assert (result.written, result.dead_lettered) == (9, 1)
    check_replica(
        "west",
        read_topic(west, topic_name),
        [s for s in read_sent(east, topic_name) if s.offset != 10],
        source_topic=topic_name,
    )
    assert [dict(r.headers)["dr.dlq.source"] for r in read_topic(west, f"{topic_name}.dlq")] == [
        f"east/{topic_name}[0]@10".encode()
    ]


def _set_limit(cluster, topic: str, limit: int) -> None:
    admin = clients.admin(cluster)  # referenced until its futures complete
    res = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[ConfigEntry("max.message.bytes", str(limit), incremental_operation=AlterConfigOpType.SET)],
    )
    for fut in admin.incremental_alter_configs([res]).values():
        fut.result(timeout=30)
    deadline = time.monotonic() + 30
    while describe_topic_configs(admin, [topic])[topic].get("max.message.bytes") != str(limit):
        assert time.monotonic() < deadline, "the topic's new limit did not show"
        time.sleep(0.2)


def test_a_record_above_librdkafkas_default_limit_is_copied_when_the_target_topic_takes_it(lab, tmp_path, topic_name):
    """librdkafka refuses a record above 1,000,000 bytes at produce() unless told otherwise; a
    target topic whose limit is 4,000,000 bytes takes the record of 1,500,000, and so must the copier."""
    cfg = load_config(flow_config(lab, tmp_path, [topic_name]))
    flow = next(f for f in cfg.flows if f.source == "east" and f.target == "west")
    east, west = cfg.cluster("east"), cfg.cluster("west")
    _big_source_topic(east, topic_name)  # small-0, small-1, 1,500,000 bytes, small-3
    ensure_topic(clients.admin(west), topic_name, partitions=1, config={"max.message.bytes": "4000000"})
    copier = RangeCopier(cfg, flow)
    try:
        result = copier.copy(RangeSpec(topic_name, 0, 0, 4, topic_name))
    finally:
        copier.close()
    assert (result.written, result.dead_lettered) == (4, 0)
    check_replica("west", read_topic(west, topic_name), read_sent(east, topic_name), source_topic=topic_name)

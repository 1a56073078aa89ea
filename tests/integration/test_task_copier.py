"""A streaming task's copier (kafka_dr.kafka.task_copier): all of a flow's partitions in one
transaction at a time, on the lab's real brokers.

What must hold, as with the per-partition copier: every record exactly once with key, value,
headers and timestamp, progress committed per partition with the records, zombies fenced
(another task copier, or a per-partition copier of the same partitions, in both
directions), and the rare cases (a refused record, records deleted by retention) handled as
the per-partition copier handles them.
"""

from __future__ import annotations

import gc
import logging
import threading
import time

import pytest
from confluent_kafka import KafkaException, TopicPartition
from test_bad_input import _big_source_topic
from test_replication import flow_config, own_internal_prefix

from kafka_checks import check_replica, produce_varied, read_topic
from kafka_dr.core.config_load import load_config
from kafka_dr.kafka import clients
from kafka_dr.kafka.copier import RangeCopier
from kafka_dr.kafka.copy_errors import ProducerLost, RecordRejected, producer_lost
from kafka_dr.kafka.copy_spec import OPEN, RangeSpec
from kafka_dr.kafka.progress_store import read_committed_progress
from kafka_dr.kafka.task_copier import TaskCopier
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.kafka.transactions import Reports, transactional_producer
from kafka_dr.kafka.writing import produce_all

pytestmark = [pytest.mark.lab]

PARTITIONS = 4


def _flow(lab, tmp_path, topic: str, partitions: int = PARTITIONS, own_prefix: bool = False, **flow_keys):
    """The east -> west flow narrowed to ``topic``; ``own_prefix``: with internal names (its
    progress group above all) of its own, for a test that deletes the flow's progress group:
    deleting the lab's would make every later test's flow refuse to start (the heartbeat
    topic's copies are on west without their progress), as designed."""
    path = flow_config(lab, tmp_path, [topic], **flow_keys)
    if own_prefix:
        own_internal_prefix(path, topic)
    cfg = load_config(path)
    for name in ("east", "west"):
        ensure_topic(clients.admin(cfg.cluster(name)), topic, partitions=partitions)
    return cfg, next(f for f in cfg.flows if f.source == "east" and f.target == "west")


def _specs(topic: str, partitions: int = PARTITIONS) -> list[RangeSpec]:
    return [RangeSpec(topic, p, 0, OPEN, topic) for p in range(partitions)]


def _until_progress(cfg, flow, topic: str, wanted: dict[int, int], timeout: float = 90.0):
    """An ``until`` that turns true once the committed progress reaches ``wanted`` (partition ->
    next offset), checked every half second; fails the test after ``timeout``."""
    deadline, state = time.monotonic() + timeout, {"at": 0.0, "done": False}

    def until() -> bool:
        now = time.monotonic()
        if not state["done"] and now - state["at"] > 0.5:
            state["at"] = now
            got = read_committed_progress(cfg, flow, [(topic, p) for p in wanted])
            state["done"] = all(got.get((topic, p), {}).get("next_offset", -1) >= n for p, n in wanted.items())
        assert now < deadline, "the copy did not reach its progress in time"
        return state["done"]

    return until


def _copy_until_fenced(copier: TaskCopier, specs: list[RangeSpec]) -> tuple[threading.Thread, list[BaseException]]:
    """Run ``copier`` in a thread with no end and no redo (a zombie's copy); returns the thread,
    once the copy knows its start, and the list its failure will be put in."""
    failure: list[BaseException] = []
    started = threading.Event()

    def run() -> None:
        try:
            copier.copy(specs, until=lambda: False, on_commit=lambda *_: started.set(), may_redo=lambda: False)
        except BaseException as e:  # noqa: BLE001 - asserted by the caller
            failure.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert started.wait(60)
    return t, failure


def _assert_fenced(producer, topic: str) -> None:
    """``producer`` can no longer commit anything (a newer producer fenced it)."""
    with pytest.raises(KafkaException):
        producer.begin_transaction()
        producer.produce(topic, b"zombie", partition=0)
        producer.commit_transaction(30)


def _ends(sent, partitions: int = PARTITIONS) -> dict[int, int]:
    return {p: max([s.offset + 1 for s in sent if s.partition == p], default=0) for p in range(partitions)}


def _copy_until_sent(cfg, flow, topic: str, sent) -> list:
    """A fresh task copier copies every partition up to what ``sent`` holds, then closes."""
    copier = TaskCopier(cfg, flow)
    try:
        return copier.copy(_specs(topic), until=_until_progress(cfg, flow, topic, _ends(sent)))
    finally:
        copier.close()


def test_one_transaction_at_a_time_copies_every_partition_once(lab, tmp_path, topic_name):
    cfg, flow = _flow(lab, tmp_path, topic_name)
    east, west = cfg.cluster("east"), cfg.cluster("west")
    sent = produce_varied(east, topic_name, "tc", 400, PARTITIONS)
    results = _copy_until_sent(cfg, flow, topic_name, sent)
    check_replica("west", read_topic(west, topic_name), sent, source_topic=topic_name)
    assert [r.written for r in results] == [100] * PARTITIONS
    assert [r.end for r in results] == [100] * PARTITIONS
    progress = read_committed_progress(cfg, flow, [(topic_name, p) for p in range(PARTITIONS)])
    assert {p: progress[(topic_name, p)]["next_offset"] for p in range(PARTITIONS)} == _ends(sent)


def test_a_new_task_copier_fences_the_old_one_and_nothing_is_copied_twice(lab, tmp_path, topic_name):
    """The old copier (a zombie: its query is gone) fails on its next transaction; the new one
    resumes from committed progress. Records keep arriving through the hand-over."""
    cfg, flow = _flow(lab, tmp_path, topic_name)
    east, west = cfg.cluster("east"), cfg.cluster("west")
    sent = produce_varied(east, topic_name, "one", 200, PARTITIONS)
    old = TaskCopier(cfg, flow)
    t, failure = _copy_until_fenced(old, _specs(topic_name))
    new = TaskCopier(cfg, flow)
    state: dict = {}

    def until() -> bool:
        # first called once the new copier has fenced the old one and knows its start: records
        # that arrive now reach the old copier too, whose next transaction must fail
        if "until" not in state:
            sent.extend(produce_varied(east, topic_name, "two", 200, PARTITIONS))
            state["until"] = _until_progress(cfg, flow, topic_name, _ends(sent))
        return state["until"]()

    try:
        new.copy(_specs(topic_name), until=until)
        t.join(60)
    finally:
        new.close()
        old.close()
    assert not t.is_alive(), "the fenced copier stopped"
    assert failure and isinstance(failure[0], (ProducerLost, KafkaException)), failure
    check_replica("west", read_topic(west, topic_name), sent, source_topic=topic_name)


def test_task_and_per_partition_copiers_fence_each_other(lab, tmp_path, topic_name, caplog):
    """Two kinds of transactional id cover the same partitions (a task's and each partition's):
    each kind fences the other's ids before it copies, so a zombie of either kind is stopped."""
    cfg, flow = _flow(lab, tmp_path, topic_name, partitions=2)
    east, west = cfg.cluster("east"), cfg.cluster("west")
    sent = produce_varied(east, topic_name, "a", 100, 2)
    task = TaskCopier(cfg, flow)
    t, failure = _copy_until_fenced(task, _specs(topic_name, 2))
    per_partition = RangeCopier(cfg, flow)
    try:
        # a per-partition copy of partition 0 fences the task's id before it copies
        sent += produce_varied(east, topic_name, "b", 100, 2)
        per_partition.copy(RangeSpec(topic_name, 0, 0, _ends(sent, 2)[0], topic_name))
        sent += produce_varied(east, topic_name, "c", 100, 2)  # the task copier's next transaction fails
        t.join(60)
        assert not t.is_alive() and failure, "the task copier was fenced"
        # and a task copier fences the per-partition ids: that copier's producer is done
        fresh = TaskCopier(cfg, flow)
        fresh.copy(_specs(topic_name, 2), until=_until_progress(cfg, flow, topic_name, _ends(sent, 2)))
        # the per-partition copier's next copy finds its producer fenced and redoes with a fresh
        # one, which fences the task id again (as a redo fences its own id's zombie) before it
        # reads progress
        sent += produce_varied(east, topic_name, "d", 100, 2)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="kafka_dr.kafka.copier"):
            per_partition.copy(RangeSpec(topic_name, 0, 0, _ends(sent, 2)[0], topic_name))
        assert "producer fenced or failed" in caplog.text and "redoing the range with a fresh one" in caplog.text
        _assert_fenced(fresh._producer, topic_name)
        fresh.close()
        last = TaskCopier(cfg, flow)
        try:
            last.copy(_specs(topic_name, 2), until=_until_progress(cfg, flow, topic_name, _ends(sent, 2)))
        finally:
            last.close()
    finally:
        per_partition.close()
        task.close()
    check_replica("west", read_topic(west, topic_name), sent, source_topic=topic_name)


def test_a_fenced_producer_holding_a_record_counts_as_lost_and_its_copier_closes_quietly(lab, tmp_path, topic_name):
    """librdkafka reports the fence as a fatal error when it serves the held record; confluent-kafka
    raises it from that flush, as SystemError when the same flush serves the record's delivery
    report next (2.16.1: every time here). Either way the producer is lost (the range is redone
    with a fresh one), and closing a copier that holds it raises nothing: the record is purged."""
    cfg, flow = _flow(lab, tmp_path, topic_name, partitions=1)

    def fenced_holding_a_record(txn_id: str):
        zombie = transactional_producer(cfg, flow, None, txn_id, Reports())
        transactional_producer(cfg, flow, None, txn_id, Reports())  # fences it
        zombie.begin_transaction()
        zombie.produce(topic_name, b"zombie", partition=0)
        return zombie

    with pytest.raises((KafkaException, SystemError)) as raised:
        fenced_holding_a_record(f"{topic_name}.flushed").flush(10)
    assert producer_lost(raised.value), repr(raised.value)
    task, ranges = TaskCopier(cfg, flow), RangeCopier(cfg, flow)
    task._producer = fenced_holding_a_record(f"{topic_name}.task")
    ranges.producers.held[(topic_name, 0)] = fenced_holding_a_record(f"{topic_name}.range")
    task.close()
    ranges.close()
    assert task._producer is None and not ranges.producers.held


def test_a_refused_record_is_set_aside_by_the_per_partition_copier(lab, tmp_path, topic_name):
    """The target refuses a record: the task's transaction (with other partitions' records) is
    rolled back, and the per-partition copier redoes those offsets, the refused record going to
    the dead-letter topic; the task copier then goes on after them."""
    cfg = load_config(flow_config(lab, tmp_path, [topic_name], dead_letter_topic=f"{topic_name}.dlq"))
    flow = next(f for f in cfg.flows if f.source == "east" and f.target == "west")
    east, west = cfg.cluster("east"), cfg.cluster("west")
    _big_source_topic(east, topic_name)  # one partition: small-0, small-1, big (refused by west), small-3
    ensure_topic(clients.admin(west), topic_name, partitions=1)
    ensure_topic(clients.admin(west), f"{topic_name}.dlq", partitions=1)  # the job creates it (preflight)
    copier = TaskCopier(cfg, flow)
    try:
        results = copier.copy(_specs(topic_name, 1), until=_until_progress(cfg, flow, topic_name, {0: 4}))
        produce_all(clients.producer(east), topic_name, [(b"d", b"small-4", [], None, 0)])
        results = copier.copy(_specs(topic_name, 1), until=_until_progress(cfg, flow, topic_name, {0: 5}))
    finally:
        copier.close()
    assert [r.value for r in read_topic(west, topic_name)] == [b"small-0", b"small-1", b"small-3", b"small-4"]
    dlq = read_topic(west, f"{topic_name}.dlq")
    assert len(dlq) == 1 and dict(dlq[0].headers)["dr.dlq.source"] == f"east/{topic_name}[0]@2".encode()
    assert results[0].written == 1 and results[0].end == 5


def test_a_refused_record_without_a_dead_letter_topic_is_named_and_nothing_after_it_copied(lab, tmp_path, topic_name):
    cfg = load_config(flow_config(lab, tmp_path, [topic_name]))
    flow = next(f for f in cfg.flows if f.source == "east" and f.target == "west")
    east, west = cfg.cluster("east"), cfg.cluster("west")
    _big_source_topic(east, topic_name)
    ensure_topic(clients.admin(west), topic_name, partitions=1)
    copier = TaskCopier(cfg, flow)
    try:
        with pytest.raises(RecordRejected, match=rf"east/{topic_name}\[0\]@2"):
            copier.copy(_specs(topic_name, 1), until=_until_progress(cfg, flow, topic_name, {0: 4}))
    finally:
        copier.close()
    # nothing from the refused record on is copied (what came before it may have been
    # committed in an earlier transaction, with its progress)
    copied = [r.value for r in read_topic(west, topic_name)]
    assert copied in ([], [b"small-0"], [b"small-0", b"small-1"])
    progress = read_committed_progress(cfg, flow, [(topic_name, 0)])
    assert progress.get((topic_name, 0), {}).get("next_offset", 0) == len(copied)


def test_records_deleted_by_retention_before_the_copy_are_counted_as_lost(lab, tmp_path, topic_name):
    cfg, flow = _flow(lab, tmp_path, topic_name, partitions=1)
    east, west = cfg.cluster("east"), cfg.cluster("west")
    produce_all(clients.producer(east), topic_name, [(b"k", b"v%d" % i, [], None, 0) for i in range(40)])
    copier = TaskCopier(cfg, flow)
    try:
        first = copier.copy(_specs(topic_name, 1), until=_until_progress(cfg, flow, topic_name, {0: 40}))[0]
        assert (first.written, first.end) == (40, 40)
        produce_all(clients.producer(east), topic_name, [(b"k", b"v%d" % i, [], None, 0) for i in range(40, 100)])
        admin = clients.admin(east)  # referenced until its futures complete
        for fut in admin.delete_records([TopicPartition(topic_name, 0, 70)], operation_timeout=30).values():
            fut.result()
        copier.close()  # a restarted query: its consumer starts from committed progress, now below the log start
        copier = TaskCopier(cfg, flow)
        second = copier.copy(_specs(topic_name, 1), until=_until_progress(cfg, flow, topic_name, {0: 100}))[0]
    finally:
        copier.close()
    assert (second.lost_to_retention, second.end) == (30, 100)
    assert [r.value for r in read_topic(west, topic_name)] == [b"v%d" % i for i in [*range(40), *range(70, 100)]]


def test_records_deleted_before_a_first_copy_are_counted_once_with_their_offsets(lab, tmp_path, topic_name, caplog):
    """A first copy starts at the log start: what the source deleted below it was never
    replicated. Counted in lost_to_retention with its offsets and logged, once per partition: the
    copy starting again (partition 1 has nothing past its log start, so no progress) is quiet."""
    cfg, flow = _flow(lab, tmp_path, topic_name, partitions=2)
    east, west = cfg.cluster("east"), cfg.cluster("west")
    produce_all(clients.producer(east), topic_name, [(b"k", b"v%d" % i, [], None, 0) for i in range(10)])
    produce_all(clients.producer(east), topic_name, [(b"k", b"w%d" % i, [], None, 1) for i in range(3)])
    admin = clients.admin(east)  # referenced until its futures complete
    for fut in admin.delete_records(
        [TopicPartition(topic_name, 0, 4), TopicPartition(topic_name, 1, 3)], operation_timeout=30
    ).values():
        fut.result()
    copier = TaskCopier(cfg, flow)
    try:
        with caplog.at_level(logging.WARNING, logger="kafka_dr.kafka.first_run_gap"):
            first = copier.copy(_specs(topic_name, 2), until=_until_progress(cfg, flow, topic_name, {0: 10}))
            again = copier.copy(_specs(topic_name, 2), until=lambda: True)
    finally:
        copier.close()

    def lost(results):
        return [(r.partition, r.start, r.written, r.lost_to_retention, r.lost_first, r.lost_last) for r in results]

    assert lost(first) == [(0, 4, 6, 4, 0, 3), (1, 3, 0, 3, 0, 2)]
    assert lost(again) == [(0, 10, 0, 0, None, None), (1, 3, 0, 0, None, None)]
    assert [
        r.getMessage().split(" (retention")[0] for r in caplog.records if r.name == "kafka_dr.kafka.first_run_gap"
    ] == [
        f"flow east_to_west: east/{topic_name}[0] records 0..3 were deleted on the source "
        f"before this flow first copied the partition",
        f"flow east_to_west: east/{topic_name}[1] records 0..2 were deleted on the source "
        f"before this flow first copied the partition",
    ]
    assert [r.value for r in read_topic(west, topic_name)] == [b"v%d" % i for i in range(4, 10)]


def test_a_progress_commit_of_the_task_id_that_no_transaction_owns_is_cleared(lab, tmp_path, topic_name):
    """The orphaned pending commit of test_faults (a target restart left it behind), here left
    by the task's id: the task copier clears it by itself, and so does the job's start."""
    from kafka_dr.spark.source import ReplicationStreamReader
    from kafka_wire import orphaned_progress_commit, transaction_verification

    config = flow_config(lab, tmp_path, [topic_name])
    cfg, flow = _flow(lab, tmp_path, topic_name, partitions=1)
    east, west = cfg.cluster("east"), cfg.cluster("west")
    admin = clients.admin(west)

    def orphan(offset: int) -> None:
        orphaned_progress_commit(
            west.bootstrap_servers.split(",")[0],
            cfg.names.task_transactional_id(flow.name),
            cfg.names.progress_group(flow.name),
            topic_name,
            0,
            offset,
        )

    transaction_verification(admin, False)  # the broker would refuse a TxnOffsetCommit outside a transaction
    try:
        produce_all(clients.producer(east), topic_name, [(b"k", b"v%d" % i, [], None, 0) for i in range(10)])
        first = TaskCopier(cfg, flow)  # the task's id exists, and has committed progress
        try:
            first.copy(_specs(topic_name, 1), until=_until_progress(cfg, flow, topic_name, {0: 10}))
        finally:
            first.close()
        produce_all(clients.producer(east), topic_name, [(b"k", b"v%d" % i, [], None, 0) for i in range(10, 30)])
        orphan(25)  # would skip records 20..24 if it ever counted
        copier = TaskCopier(cfg, flow)
        try:
            copier.copy(_specs(topic_name, 1), until=_until_progress(cfg, flow, topic_name, {0: 30}))
        finally:
            copier.close()
        orphan(28)
        planned = ReplicationStreamReader({"config": str(config), "flow": flow.name}).initialOffset()
    finally:
        transaction_verification(admin, None)
    assert planned[topic_name]["0"] == 30
    assert [r.value for r in read_topic(west, topic_name)] == [b"v%d" % i for i in range(30)]


def test_the_cyclic_collector_is_off_while_either_copier_moves_records_and_on_again_after(lab, tmp_path, topic_name):
    """kafka_dr.kafka.gc_pause: the collector walking the fetched batches was 17% of the copy
    loop; it is paused while a chunk is filled, by the per-partition copier and the task copier."""
    cfg, flow = _flow(lab, tmp_path, topic_name)
    sent = produce_varied(cfg.cluster("east"), topic_name, "gc", 200, PARTITIONS)
    ends = _ends(sent)
    enabled_per_record: list[bool] = []
    per_partition, task = RangeCopier(cfg, flow), TaskCopier(cfg, flow)
    for copier in (per_partition, task):

        def recording(*args, _inner=copier.transform):
            enabled_per_record.append(gc.isenabled())
            return _inner(*args)

        copier.transform = recording
    assert gc.isenabled()
    try:
        first = per_partition.copy(RangeSpec(topic_name, 0, 0, ends[0], topic_name))
        assert gc.isenabled()
        rest = task.copy(
            [RangeSpec(topic_name, p, 0, OPEN, topic_name) for p in range(1, PARTITIONS)],
            until=_until_progress(cfg, flow, topic_name, {p: ends[p] for p in range(1, PARTITIONS)}),
        )
    finally:
        per_partition.close()
        task.close()
    assert gc.isenabled()
    assert first.written + sum(r.written for r in rest) == len(sent) == len(enabled_per_record)
    assert not any(enabled_per_record)
    check_replica("west", read_topic(cfg.cluster("west"), topic_name), sent, source_topic=topic_name)


def _progress_set_back(cfg, flow, topic: str, behind: dict[int, int], forgotten: list[int]) -> None:
    """What a target broker's replay of the progress group has been seen to answer after a
    restart: progress behind the copies (``behind``: partition -> next offset) or none at all
    (``forgotten``), written here the way any member of the group could write it."""
    from kafka_dr.core.progress import encode_metadata
    from kafka_dr.kafka.progress_store import commit_with_retry, progress_reader

    west, group = cfg.cluster("west"), cfg.names.progress_group(flow.name)
    if forgotten:  # the admin API deletes a group's offsets as a whole: the others are written again below
        kept = read_committed_progress(cfg, flow, [(topic, p) for p in range(PARTITIONS) if p not in forgotten])
        behind = {**{p: v["next_offset"] for (_, p), v in kept.items()}, **behind}
        admin = clients.admin(west)
        for fut in admin.delete_consumer_groups([group], request_timeout=30).values():
            fut.result()
    reader = progress_reader(cfg, flow)
    try:
        meta = encode_metadata(topic, int(time.time() * 1000))
        commit_with_retry(reader, [TopicPartition(topic, p, n, meta) for p, n in behind.items()])
    finally:
        reader.close()
    progress = read_committed_progress(cfg, flow, [(topic, p) for p in range(PARTITIONS)])
    assert {p: progress[(topic, p)]["next_offset"] for p in behind} == behind
    assert not any((topic, p) in progress for p in forgotten)


def test_progress_read_behind_the_copies_on_the_target_is_moved_up_to_them(lab, tmp_path, topic_name, caplog):
    """Either copier, starting where the target answers progress behind the copies it holds (or
    none), starts after the newest copy instead: nothing copied twice, and progress committed
    where the copies are (kafka_dr.kafka.progress_floor)."""
    cfg, flow = _flow(lab, tmp_path, topic_name, own_prefix=True)
    east, west = cfg.cluster("east"), cfg.cluster("west")
    sent = produce_varied(east, topic_name, "one", 400, PARTITIONS)
    _copy_until_sent(cfg, flow, topic_name, sent)
    assert _ends(sent) == dict.fromkeys(range(PARTITIONS), 100)
    _progress_set_back(cfg, flow, topic_name, {0: 40, 3: 0}, forgotten=[1])
    sent.extend(produce_varied(east, topic_name, "two", 200, PARTITIONS))
    caplog.set_level(logging.WARNING, logger="kafka_dr.kafka.progress_floor")
    results = _copy_until_sent(cfg, flow, topic_name, sent)
    check_replica("west", read_topic(west, topic_name), sent, source_topic=topic_name)
    assert {r.partition: r.start for r in results} == dict.fromkeys(range(PARTITIONS), 100)
    moved = sorted(r.getMessage().split(" (")[0] for r in caplog.records if r.name == "kafka_dr.kafka.progress_floor")
    assert moved == [
        f"flow east_to_west: progress of west/{topic_name}[{p}] was {was} while copies up to source offset 99 "
        f"were on the target"
        for p, was in ((0, 40), (1, None), (3, 0))
    ]

    # the per-partition copier (an incremental run, a hand-off) reads its progress the same way
    _progress_set_back(cfg, flow, topic_name, {2: 10}, forgotten=[])
    sent.extend(produce_varied(east, topic_name, "three", 40, PARTITIONS))
    per_partition = RangeCopier(cfg, flow)
    try:
        result = per_partition.copy(RangeSpec(topic_name, 2, 10, _ends(sent)[2], topic_name))
    finally:
        per_partition.close()
    assert (result.start, result.written) == (150, 10)
    copied = [r for r in read_topic(west, topic_name) if r.partition == 2]
    assert len(copied) == _ends(sent)[2] == 160

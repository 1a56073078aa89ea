"""The task copier's read (kafka_dr.kafka.task_copier.read_fetched): what is fetched is taken at
once; only an empty queue waits, and only until the first record. A stand-in consumer with
plain values records every call (the copy itself is tested on the lab, tests/integration/
test_task_copier.py)."""

from kafka_dr.core.config_load import parse_config
from kafka_dr.kafka.task_copier import FETCH_HOLD_MS, READ_MAX, TaskCopier, read_fetched


class Queue:
    """What librdkafka has fetched (``queued``), and what arrives during a blocking call (``later``)."""

    def __init__(self, queued=(), later=()):
        self.queued, self.later, self.calls = list(queued), list(later), []

    def consume(self, num_messages, timeout):
        self.calls.append(("consume", num_messages, timeout))
        if not self.queued and timeout > 0:
            self.queued, self.later = self.later, []
        out, self.queued = self.queued[:num_messages], self.queued[num_messages:]
        return out

    def poll(self, timeout):
        self.calls.append(("poll", timeout))
        if not self.queued:
            self.queued, self.later = self.later, []
        return self.queued.pop(0) if self.queued else None


def test_fetched_records_are_taken_without_waiting():
    q = Queue(queued=["r1", "r2", "r3"], later=["r4"])
    assert read_fetched(q, 0.01) == ["r1", "r2", "r3"]
    assert q.calls == [("consume", READ_MAX, 0)]  # no call that blocks


def test_an_empty_queue_waits_for_the_first_record_and_takes_what_came_with_it():
    q = Queue(later=["r1", "r2"])
    assert read_fetched(q, 0.01) == ["r1", "r2"]
    assert q.calls == [("consume", READ_MAX, 0), ("poll", 0.01), ("consume", READ_MAX - 1, 0)]


def test_nothing_within_the_wait_is_an_empty_read():
    q = Queue()
    assert read_fetched(q, 0.01) == [] and q.calls == [("consume", READ_MAX, 0), ("poll", 0.01)]


def test_a_full_read_takes_at_most_read_max_records():
    q = Queue(queued=list(range(READ_MAX + 7)))
    assert len(read_fetched(q, 0.01)) == READ_MAX and len(q.queued) == 7


def test_the_source_broker_holds_a_fetch_within_a_chunks_time():
    cfg = parse_config(
        {
            "clusters": {"east": {"bootstrap_servers": "127.0.0.1:1"}, "west": {"bootstrap_servers": "127.0.0.1:2"}},
            "flows": [{"name": "e2w", "source": "east", "target": "west", "topics": {"allow": ["orders"]}}],
        }
    )
    flow = cfg.flows[0]
    assert TaskCopier(cfg, flow).fetch_hold_ms == FETCH_HOLD_MS == 16  # chunks of 0.1 s by default
    assert TaskCopier(cfg, flow, chunk_seconds=0.01).fetch_hold_ms == 8  # never longer than most of a chunk

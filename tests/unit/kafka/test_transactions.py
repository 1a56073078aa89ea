"""Producers that live for one ``init_transactions`` (fencing, clearing orphaned commits)
connect to all brokers at once (kafka_dr.kafka.clients.one_shot_transactional_config): with
librdkafka's sparse connections each took 55 or about 505 ms instead of 3-8 ms. The copiers'
own producers keep librdkafka's default (see the function's docstring) and first connect to a
broker known by id (kafka_dr.kafka.clients.connect_to_a_known_broker)."""

import textwrap
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_dr.core.config_load import parse_config_text
from kafka_dr.kafka import copier, orphaned_offsets, transactions
from kafka_dr.kafka.clients import connect_to_a_known_broker, one_shot_transactional_config

CONFIG = textwrap.dedent("""\
    clusters:
      east: {bootstrap_servers: "127.0.0.1:1"}
      west: {bootstrap_servers: "127.0.0.1:2", client: {client.id: west-client}}
    flows:
      - {name: east_to_west, source: east, target: west, topics: {allow: ["orders"]}}
""")


class _Recorded:
    """Stands in for confluent_kafka.Producer: records each config and the calls made."""

    made: list = []

    def __init__(self, conf):
        self.conf = conf
        self.calls = []
        _Recorded.made.append(self)

    def init_transactions(self, timeout):
        self.calls.append("init_transactions")

    def list_topics(self, topic=None, timeout=None):
        self.calls.append(f"list_topics {topic}")
        return SimpleNamespace(orig_broker_id=1)

    def __getattr__(self, name):
        return lambda *a, **k: self.calls.append(name)


def _setup(monkeypatch, module):
    _Recorded.made = []
    monkeypatch.setattr(module, "Producer", _Recorded)
    cfg = parse_config_text(CONFIG)
    return cfg, cfg.flows[0]


def test_the_settings_name_the_id_keep_the_clusters_own_and_connect_to_every_broker():
    cfg = parse_config_text(CONFIG)
    conf = one_shot_transactional_config(cfg.cluster("west"), None, "dr.east_to_west.task", **{"linger.ms": 10})
    assert conf["transactional.id"] == "dr.east_to_west.task"
    assert conf["enable.sparse.connections"] is False
    assert conf["bootstrap.servers"] == "127.0.0.1:2" and conf["client.id"] == "west-client"
    assert conf["linger.ms"] == 10


def test_every_fencing_producer_uses_them_and_a_copiers_own_producer_does_not(monkeypatch):
    cfg, flow = _setup(monkeypatch, transactions)
    transactions.transactional_producer(cfg, flow, None, "dr.east_to_west.orders.0", transactions.Reports())
    transactions.fence(cfg, flow, None, ["dr.east_to_west.task", "dr.east_to_west.orders.1"])
    own, *fencing = _Recorded.made
    assert [p.conf["transactional.id"] for p in _Recorded.made] == [
        "dr.east_to_west.orders.0",
        "dr.east_to_west.task",
        "dr.east_to_west.orders.1",
    ]
    assert all(p.conf["enable.sparse.connections"] is False for p in fencing)
    assert all(p.calls == ["init_transactions"] for p in fencing)
    # a known broker's connection first, asking for one topic's metadata, not the whole cluster's
    assert own.calls == ["list_topics __consumer_offsets", "init_transactions"]
    assert "enable.sparse.connections" not in own.conf and own.conf["acks"] == "all"


def test_clearing_orphaned_commits_uses_them_too(monkeypatch):
    cfg, flow = _setup(monkeypatch, orphaned_offsets)

    class _Meta:
        def __init__(self, conf):
            pass

        def consumer_group_metadata(self):
            return object()

        def committed(self, tps, timeout=None):  # still unstable: no progress to repair here
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT))

        def close(self):
            pass

    monkeypatch.setattr(orphaned_offsets, "Consumer", _Meta)
    orphaned_offsets.clear_flow_orphans(cfg, flow, [("orders", "orders", 0)])
    assert len(_Recorded.made) == 2  # the partition's id, then the flow's task id
    assert all(p.conf["enable.sparse.connections"] is False for p in _Recorded.made)


class _Answers:
    """Stands in for a producer whose metadata requests are answered by the given brokers
    (-1: the bootstrap entry) or fail."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.asked = 0

    def list_topics(self, topic=None, timeout=None):
        self.asked += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return SimpleNamespace(orig_broker_id=answer)


@pytest.mark.parametrize(
    "answers, asked",
    [
        ((1,), 1),  # the usual case: a known broker answers the first request
        ((-1, 1, 1), 2),  # the bootstrap entry answered: ask again, a known broker connects
        ((-1, -1, -1, 1), 3),  # at most three tries, then init_transactions goes ahead anyway
    ],
)
def test_connecting_asks_until_a_broker_known_by_id_answers(answers, asked):
    client = _Answers(*answers)
    connect_to_a_known_broker(client)
    assert client.asked == asked


def test_a_cluster_that_does_not_answer_is_left_to_init_transactions():
    client = _Answers(KafkaException(KafkaError(KafkaError._TRANSPORT)), 1)
    connect_to_a_known_broker(client)  # no error of its own
    assert client.asked == 1


class _FencedHandle(_Recorded):
    """A producer in librdkafka's fatal state: purge refuses too."""

    def purge(self, *a, **k):
        self.calls.append("purge")
        raise KafkaException(KafkaError(KafkaError._FENCED, fatal=True))


@pytest.mark.parametrize("handle", [_Recorded, _FencedHandle])
def test_closing_a_copier_purges_what_its_producers_hold_and_flushes_nothing(monkeypatch, handle):
    """What a copier's producer still holds at close belongs to a transaction that is open,
    aborted or fenced: close lets it go unsent (kafka_dr.kafka.transactions.discard). A flush
    of a fenced producer raises its fatal error (or SystemError caused by it) from close."""
    from kafka_dr.kafka.task_copier import TaskCopier

    cfg, flow = _setup(monkeypatch, transactions)
    ranges, task = copier.RangeCopier(cfg, flow), TaskCopier(cfg, flow)
    ranges.producers.held[("orders", 0)] = held = handle({})
    task._producer = task_held = handle({})
    ranges.close()
    task.close()
    assert held.calls == ["purge"] and task_held.calls == ["purge"]
    assert not ranges.producers.held and task._producer is None


def test_the_flows_transaction_timeout_bounds_its_transactions_and_deliveries(monkeypatch):
    import dataclasses

    from confluent_kafka import Producer

    cfg, flow = _setup(monkeypatch, transactions)
    for seconds, delivery_ms in ((60, 60_000), (20, 20_000), (300, 60_000)):
        _Recorded.made = []
        short = dataclasses.replace(flow, transaction_timeout_seconds=seconds)
        transactions.transactional_producer(cfg, short, None, "dr.east_to_west.orders.0", transactions.Reports())
        transactions.fence(cfg, short, None, ["dr.east_to_west.task"])
        own, fencing = _Recorded.made
        assert own.conf["transaction.timeout.ms"] == fencing.conf["transaction.timeout.ms"] == seconds * 1000
        assert own.conf["delivery.timeout.ms"] == delivery_ms
        # librdkafka itself accepts the pair (it refuses a delivery timeout past the transaction's)
        Producer({k: v for k, v in own.conf.items() if k not in ("on_delivery", "error_cb")}).flush(0)

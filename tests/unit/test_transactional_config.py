"""Producers that live for one ``init_transactions`` (fencing, clearing orphaned commits)
connect to all brokers at once (kafka_dr.kafka.clients.one_shot_transactional_config): with
librdkafka's sparse connections each took 55 or about 505 ms instead of 3-8 ms. The copiers'
own producers keep librdkafka's default (see the function's docstring)."""

import textwrap

from kafka_dr.core.config_load import parse_config_text
from kafka_dr.kafka import copier, orphaned_offsets
from kafka_dr.kafka.clients import one_shot_transactional_config

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
    cfg, flow = _setup(monkeypatch, copier)
    copier.transactional_producer(cfg, flow, None, "dr.east_to_west.orders.0", copier.Reports())
    copier.fence(cfg, flow, None, ["dr.east_to_west.task", "dr.east_to_west.orders.1"])
    own, *fencing = _Recorded.made
    assert [p.conf["transactional.id"] for p in _Recorded.made] == [
        "dr.east_to_west.orders.0", "dr.east_to_west.task", "dr.east_to_west.orders.1"]
    assert all(p.conf["enable.sparse.connections"] is False for p in fencing)
    assert all(p.calls[0] == "init_transactions" for p in _Recorded.made)
    assert "enable.sparse.connections" not in own.conf and own.conf["acks"] == "all"


def test_clearing_orphaned_commits_uses_them_too(monkeypatch):
    cfg, flow = _setup(monkeypatch, orphaned_offsets)

    class _Meta:
        def __init__(self, conf):
            pass

        def consumer_group_metadata(self):
            return object()

        def close(self):
            pass

    monkeypatch.setattr(orphaned_offsets, "Consumer", _Meta)
    orphaned_offsets.clear_flow_orphans(cfg, flow, [("orders", "orders", 0)])
    assert len(_Recorded.made) == 2  # the partition's id, then the flow's task id
    assert all(p.conf["enable.sparse.connections"] is False for p in _Recorded.made)

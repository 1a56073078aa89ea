"""Fault injection on the real lab (issue #9): the replication job (spark-submit,
continuous) rides out a broker stopped and restarted, the network to the target cut and
restored, and steady load; after each trial the target holds every source record exactly
once (``check_replica``: nothing lost or duplicated; bytes, headers, timestamps, order equal).

Short versions run in CI. The full figures (10+ kill trials, a 10-minute soak) come from
``kafka-dr drill`` or from these tests with ``KAFKA_DR_SOAK_SECONDS=600`` (docs/reliability.md).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafka_checks import check_replica, read_sent, read_topic
from kafka_dr.core.config_load import load_config
from kafka_dr.lab.drill import Drill
from kafka_dr.lab.proxy import TcpProxy

pytestmark = [pytest.mark.lab]


def _exact(config_path, topic: str, result) -> None:
    cfg = load_config(config_path)
    east, west = cfg.cluster("east"), cfg.cluster("west")
    sent = read_sent(east, topic)
    assert result.produced == len(sent) > 0
    assert (result.lost, result.duplicated) == (0, 0), result
    assert check_replica("west", read_topic(west, topic), sent, source_topic=topic) == {"east": len(sent)}


@pytest.mark.parametrize("which", ["target", "source"])
def test_broker_stopped_and_restarted_mid_run(lab, tmp_path, which):
    drill = Drill(lab, tmp_path)
    try:
        result = drill.broker_restart(which, outage=10)
    finally:
        lab.start("east")  # idempotent: whatever happened, the session's lab is whole again
        lab.start("west")
    _exact(drill.last_config, drill.last_topic, result)


@pytest.fixture(scope="module")
def proxied_lab():
    """A lab whose west clients go through a TCP proxy the test controls (base port + 800)."""
    import atexit

    from kafka_dr.lab.lab import Lab

    test_lab = Path(os.environ.get("KAFKA_DR_TEST_LAB_DIR", Path(__file__).resolve().parents[2] / ".lab-test"))
    base = int(os.environ.get("KAFKA_DR_TEST_BASE_PORT", "29092"))
    lab = Lab(test_lab.with_name(test_lab.name + "-proxied"))
    lab.down(wipe=True)
    atexit.register(lambda: lab.down(wipe=True))
    lab.up(count=2, base_port=base + 800, proxied=("west",))
    west = next(c for c in lab.clusters() if c.name == "west")
    proxy = TcpProxy(west.proxy_port, west.port).start()
    try:
        yield lab, proxy
    finally:
        proxy.close()
        lab.down(wipe=True)


def test_network_to_the_target_cut_and_restored(proxied_lab, tmp_path):
    lab, proxy = proxied_lab
    drill = Drill(lab, tmp_path, proxy=proxy)
    result = drill.network_cut(outage=15)
    assert proxy.connections > 1  # clients really went through the proxy (bootstrap and broker)
    _exact(drill.last_config, drill.last_topic, result)


def test_proxy_cut_refuses_connections_until_restored(proxied_lab):
    from kafka_dr.kafka import clients

    lab, proxy = proxied_lab
    west = load_config(lab.config_file).cluster("west")
    assert clients.cluster_id(west, timeout=10)
    proxy.cut()
    try:
        with pytest.raises(clients.ClusterUnreachable, match=r"cluster 'west' \(127\.0\.0\.1:\d+\) did not answer"):
            clients.cluster_id(west, timeout=3)
    finally:
        proxy.restore()
    assert clients.cluster_id(west, timeout=10)


def test_soak_at_steady_load(lab, tmp_path):
    """``KAFKA_DR_SOAK_SECONDS`` (default 30 in CI; 600 for the documented figures)."""
    seconds = float(os.environ.get("KAFKA_DR_SOAK_SECONDS", "30"))
    drill = Drill(lab, tmp_path)
    result = drill.soak(seconds, sample_every=5 if seconds < 120 else 10)
    print(result.row(), result.figures)
    _exact(drill.last_config, drill.last_topic, result)
    if seconds >= 300:  # flat memory is only meaningful over minutes
        f = result.figures
        assert f["rss_mib_last_minute"] < 1.3 * f["rss_mib_first_minute"], f

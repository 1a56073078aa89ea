"""kafka-dr's health in Prometheus, end to end on the lab: the exporter (``kafka-dr exporter``,
as the lab starts it), Debian's Prometheus evaluating the shipped alert rules and Debian's
Alertmanager posting to a webhook. A flow whose replication job dies is alerted within the
rule's window and resolved once a new job has caught up; the lag Prometheus scraped is the
lag this test reads from the clusters itself; every Grafana panel's query evaluates."""

from __future__ import annotations

import json
import time

import pytest
import yaml
from confluent_kafka import Consumer, TopicPartition

from conftest import TEST_BASE_PORT
from kafka_dr.core.config_load import load_config
from kafka_dr.kafka import clients
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.lab.drill import Job, SteadyProducer, flow_config
from kafka_dr.lab.exporter_service import ExporterService
from kafka_dr.lab.monitoring import Monitoring
from kafka_dr.shipped import folder

pytestmark = [pytest.mark.lab, pytest.mark.slow]

#: Prometheus, Alertmanager and the exporter: above the worker's other ports (the game day
#: takes base+2000..+2340, test_lab_monitoring +2400..+2402)
PORT = TEST_BASE_PORT + 2410
RULES = folder("monitoring") / "prometheus" / "kafka-dr-rules.yml"
DASHBOARD = folder("monitoring") / "grafana" / "kafka-dr.json"
FLOW = "east_to_west"
RPO_S = 6.0
PARTITIONS = 2


def _until(what: str, found, timeout: float, every: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if seen := found():
            return seen
        time.sleep(every)
    raise AssertionError(f"{what}: not within {timeout:.0f}s")


def _notifications(hook, alert: str, status: str) -> list[dict]:
    """Alertmanager's posts of ``alert`` for the flow in ``status`` (firing or resolved)."""
    return [
        a
        for post in hook.received
        for a in post.get("alerts", [])
        if a["labels"].get("alertname") == alert and a["labels"].get("flow") == FLOW and a["status"] == status
    ]


def _flow(metric: str, topic: str | None = None) -> str:
    """``metric``'s series of the flow (and ``topic``)."""
    return f'{metric}{{flow="{FLOW}"' + (f',topic="{topic}"' if topic else "") + "}"


def _lag_from_the_clusters(cfg, topic: str) -> dict[int, int]:
    """Per partition: the source's last stable offset minus the flow's committed progress on the
    target, read with plain clients (the progress group's committed offsets, read_committed)."""
    east, west = cfg.cluster("east"), cfg.cluster("west")
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    reader = Consumer(
        clients.client_config(east, None, **{"group.id": "monitoring-test", "isolation.level": "read_committed"})
    )
    progress = Consumer(
        clients.client_config(
            west, None, **{"group.id": cfg.names.progress_group(FLOW), "isolation.level": "read_committed"}
        )
    )
    try:
        ends = {tp.partition: reader.get_watermark_offsets(tp, timeout=10)[1] for tp in tps}
        committed = {tp.partition: max(tp.offset, 0) for tp in progress.committed(tps, timeout=30)}
    finally:
        reader.close()
        progress.close()
    return {p: ends[p] - committed[p] for p in ends}


def _scraped_lag(monitoring: Monitoring, topic: str) -> dict[int, int]:
    rows = monitoring.query(f'kafka_dr_replication_lag_records{{flow="{FLOW}",topic="{topic}"}}')
    return {int(r["metric"]["partition"]): int(float(r["value"][1])) for r in rows}


@pytest.fixture
def monitored(lab, tmp_path, topic_name):
    from receivers import WebhookReceiver

    config = flow_config(lab.config_file, tmp_path, topic_name)
    doc = yaml.safe_load(config.read_text())
    doc["thresholds"] = {**doc.get("thresholds", {}), "replication_lag_max_seconds": RPO_S}
    for f in doc["flows"]:
        f["enabled"] = (f["source"], f["target"]) == ("east", "west")  # the flow named FLOW
    config.write_text(yaml.safe_dump(doc, sort_keys=False))
    cfg = load_config(config)
    ensure_topic(clients.admin(cfg.cluster("east")), topic_name, partitions=PARTITIONS)
    hook = WebhookReceiver()
    monitoring = Monitoring(tmp_path / "monitoring", PORT, PORT + 1)
    exporter = ExporterService(tmp_path / "monitoring", PORT + 2)
    try:
        exporter.up(config)
        monitoring.up([exporter.target], [RULES], hook.url)
        yield cfg, config, monitoring, hook
    finally:
        monitoring.down()
        exporter.down()
        hook.close()


def test_a_dead_replication_job_is_alerted_and_resolved_and_the_scraped_lag_is_the_clusters(
    monitored, tmp_path, topic_name
):
    cfg, config, monitoring, hook = monitored
    producer = SteadyProducer(cfg.cluster("east"), topic_name, PARTITIONS, batch=10, pause=0.2)
    job = Job(config, tmp_path / "job.log", flow=FLOW)
    try:
        # the job runs its micro-batches before any record waits: its start-up is no outage
        _until(
            "the job's first micro-batch", lambda: monitoring.query(_flow("kafka_dr_last_batch_timestamp_seconds")), 240
        )
        producer.start()
        copied = _flow("kafka_dr_records_copied_total", topic_name)
        _until(
            "records copied, as Prometheus sees it",
            lambda: (v := monitoring.query(copied)) and float(v[0]["value"][1]) > 0,
            120,
        )
        lag = f"max({_flow('kafka_dr_replication_lag_seconds', topic_name)})"
        for _ in range(4):  # copying: the lag stays well under the RPO, and the rule is not even pending
            assert float(monitoring.query(lag)[0]["value"][1]) < RPO_S / 2
            assert not [a for a in monitoring.alerts() if a["labels"].get("flow") == FLOW], monitoring.alerts()
            time.sleep(2)
        assert not _notifications(hook, "KafkaDrReplicationBehind", "firing")

        job.kill9()  # replication stops; the source keeps growing
        died = time.monotonic()
        _until(
            "the firing alert at the webhook", lambda: _notifications(hook, "KafkaDrReplicationBehind", "firing"), 90
        )
        # the oldest uncopied record passes the RPO, the rule holds 10 s, then scrape, evaluation
        # (2 s each), the exporter's read (1 s) and Alertmanager's group wait (1 s); 10 s of margin
        # for a loaded host
        waited = time.monotonic() - died
        print(f"alerted {waited:.1f}s after the job died (RPO {RPO_S:.0f}s)")
        assert waited <= RPO_S + 10 + 2 + 2 + 1 + 1 + 10, waited

        producer.stop()
        producer.join(30)
        # nothing moves now: the lag Prometheus scraped is what the clusters say
        expected = _lag_from_the_clusters(cfg, topic_name)
        assert sum(expected.values()) > 0, expected
        scraped = _until(
            "a scrape of the final lag", lambda: (s := _scraped_lag(monitoring, topic_name)) == expected and s, 20
        )
        assert scraped == expected

        # every Grafana panel's query evaluates against this Prometheus
        for expr in _dashboard_queries():
            monitoring.query(expr.replace("$flow", ".*"))

        job = Job(config, tmp_path / "job2.log", flow=FLOW)
        _until(
            "the resolved alert at the webhook",
            lambda: _notifications(hook, "KafkaDrReplicationBehind", "resolved"),
            240,
        )
        caught_up = dict.fromkeys(range(PARTITIONS), 0)
        _until("the new job caught up", lambda: _lag_from_the_clusters(cfg, topic_name) == caught_up, 120)
    finally:
        producer.stop()
        if job.alive():
            job.kill9()


def _dashboard_queries() -> list[str]:
    def panels(items):
        for p in items:
            yield p
            yield from panels(p.get("panels", []))

    doc = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in panels(doc["panels"]) for t in p.get("targets", []) if t.get("expr")]

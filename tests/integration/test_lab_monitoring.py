"""The lab's monitoring is real: Debian's Prometheus evaluates a rule file and scrapes the
exporter's address, Debian's Alertmanager posts the firing alert to a webhook, and ``down``
leaves nothing listening. A rule file promtool refuses starts nothing."""

from __future__ import annotations

import socket
import time

import pytest

from conftest import TEST_BASE_PORT
from kafka_dr.lab.monitoring import EXPORTER_JOB, Monitoring, MonitoringError

pytestmark = [pytest.mark.lab]

#: above every other port of the worker: the game day takes base+2000..+2340, the labs up to +1900
PROMETHEUS_PORT = TEST_BASE_PORT + 2400
ALERTMANAGER_PORT = TEST_BASE_PORT + 2401
#: the exporter's address: nothing listens there, so its scrape job reports ``up`` 0
EXPORTER = f"127.0.0.1:{TEST_BASE_PORT + 2402}"

RULES = """\
groups:
  - name: lab
    rules:
      - alert: LabAlwaysFiring
        expr: vector(1)
        for: 0s
        labels:
          flow: f1
"""


def _answers(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _within(seconds: float, found):
    """``found()`` once it returns something truthy, else its last (empty) answer after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not (seen := found()) and time.monotonic() < deadline:
        time.sleep(0.25)
    return seen


@pytest.fixture
def monitoring(tmp_path):
    mon = Monitoring(tmp_path / "monitoring", PROMETHEUS_PORT, ALERTMANAGER_PORT)
    try:
        yield mon
    finally:
        mon.down()


def test_a_firing_rule_reaches_the_webhook_and_down_leaves_nothing_listening(monitoring, tmp_path):
    from receivers import WebhookReceiver

    rules = tmp_path / "rules.yml"
    rules.write_text(RULES)
    hook = WebhookReceiver()
    try:
        monitoring.up(scrape_targets=[EXPORTER], rule_files=[str(rules)], webhook_url=hook.url)
        assert monitoring.running()
        assert [g["name"] for g in monitoring.rules()] == ["lab"]
        # Alertmanager posts its own notification: {"status": ..., "alerts": [{"labels": ..., "status": ...}]}
        notified = _within(30, lambda: [n for n in hook.received if n.get("alerts")])
        assert notified, f"no notification at the webhook within 30 s; Prometheus's alerts: {monitoring.alerts()}"
        assert notified[0]["status"] == "firing"
        alert = notified[0]["alerts"][0]
        assert alert["status"] == "firing"
        assert alert["labels"] == {"alertname": "LabAlwaysFiring", "flow": "f1"}
        up = _within(10, lambda: [s for s in monitoring.query("up") if s["metric"].get("job") == EXPORTER_JOB])
        assert [(s["metric"]["instance"], s["value"][1]) for s in up] == [(EXPORTER, "0")]
    finally:
        hook.close()
    monitoring.down()
    assert not monitoring.running()
    assert not _answers(PROMETHEUS_PORT) and not _answers(ALERTMANAGER_PORT)
    monitoring.down()  # nothing left to stop: still fine


def test_a_rule_file_promtool_refuses_is_one_line_naming_it_and_nothing_starts(monitoring, tmp_path):
    rules = tmp_path / "broken.yml"
    rules.write_text(RULES.replace("vector(1)", "vector(1"))
    with pytest.raises(MonitoringError) as info:
        monitoring.up(scrape_targets=[EXPORTER], rule_files=[str(rules)])
    message = str(info.value)
    assert str(rules) in message and "unclosed left parenthesis" in message, message
    assert "\n" not in message
    assert not monitoring.running()
    assert not _answers(PROMETHEUS_PORT) and not _answers(ALERTMANAGER_PORT)

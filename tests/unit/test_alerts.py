"""Alerts reach real local receivers (no lab): the replication job's restart alerts reach both
channels with Airflow not importable, as on a Spark cluster without it; e-mail goes through
STARTTLS and AUTH to a server that requires both."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_dr.lab.secure import prepare, tls_dir
from receivers import SmtpReceiver, WebhookReceiver

PROBE = """
import sys
sys.modules["airflow"] = None  # importing anything from airflow now fails
from kafka_dr.core.config_load import parse_config
from kafka_dr.spark.job import alert_restart
email = {"smtp_host": "127.0.0.1", "smtp_port": int(sys.argv[2]), "from": "dr@lab", "to": ["ops@lab"]}
cfg = parse_config({"clusters": {"east": {"bootstrap_servers": "127.0.0.1:1"},
                                 "west": {"bootstrap_servers": "127.0.0.1:2"}},
                    "flows": [{"source": "east", "target": "west"}],
                    "alerts": {"webhook": {"url": sys.argv[1]}, "email": email}})
alert_restart(cfg, "east_to_west", "source cluster 'east' did not answer", 1, 5, 2.0)
print("airflow" in [m.split(".")[0] for m in sys.modules if sys.modules[m] is not None])
"""


def test_restart_alerts_are_sent_without_airflow():
    hook, smtp = WebhookReceiver(), SmtpReceiver()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", PROBE, hook.url, str(smtp.port)], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip().splitlines()[-1] == "False"  # no airflow module was loaded
        assert [(h["flow"], h["event"], h["restart"]) for h in hook.received] == [("east_to_west", "restart", 1)]
        assert len(smtp.messages) == 1 and "flow east_to_west: replication query failed, restart 1/5" in json.dumps(
            smtp.messages[0]
        )
    finally:
        hook.close()
        smtp.close()


SEND = """
import logging, sys
logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
from kafka_dr.alerts import send_all
from kafka_dr.core.config_load import parse_config
port, ca = int(sys.argv[1]), sys.argv[2]
email = {"smtp_host": "localhost", "smtp_port": port, "from": "dr@lab", "to": ["ops@lab"], "starttls": True,
         "ca_file": ca, "username": "kafka-dr", "password": "${env:KAFKA_DR_TEST_SMTP_PASSWORD}"}
cfg = parse_config({"clusters": {"east": {"bootstrap_servers": "127.0.0.1:1"},
                                 "west": {"bootstrap_servers": "127.0.0.1:2"}},
                    "flows": [{"source": "east", "target": "west"}], "alerts": {"email": email}})
send_all(cfg.alerts, "kafka-dr: test alert", "body of the test alert", {})
"""


def _send_over_starttls(smtp: SmtpReceiver, ca: Path, password: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KAFKA_DR_TEST_SMTP_PASSWORD": password}
    return subprocess.run(
        [sys.executable, "-c", SEND, str(smtp.port), str(ca)], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.fixture(scope="module")
def tls_material(tmp_path_factory) -> Path:
    """A CA and a server certificate for 127.0.0.1/localhost (the secure lab's own making)."""
    root = tmp_path_factory.mktemp("smtp-tls")
    prepare(root)
    return tls_dir(root)


def test_an_email_alert_goes_through_starttls_and_auth_and_never_logs_the_password(tls_material):
    password = secrets.token_urlsafe(16)
    smtp = SmtpReceiver(tls=(tls_material / "broker.pem", tls_material / "broker.key"), users={"kafka-dr": password})
    try:
        done = _send_over_starttls(smtp, tls_material / "ca.pem", password)
        assert done.returncode == 0, done.stderr
        assert smtp.logins == [("kafka-dr", True)] and smtp.tls_sessions == 1
        assert len(smtp.messages) == 1 and "body of the test alert" in smtp.messages[0]["data"]
        assert smtp.messages[0]["to"] == ["ops@lab"]
        assert password not in done.stdout + done.stderr

        wrong = secrets.token_urlsafe(16)  # refused: logged as a failed channel, the password still unseen
        done = _send_over_starttls(smtp, tls_material / "ca.pem", wrong)
        assert done.returncode == 0, done.stderr
        assert smtp.logins[-1] == ("kafka-dr", False) and len(smtp.messages) == 1
        assert f"e-mail via localhost:{smtp.port} failed: (535" in done.stderr
        assert wrong not in done.stdout + done.stderr
    finally:
        smtp.close()


def test_an_email_alert_refuses_a_server_whose_certificate_it_cannot_verify(tls_material, tmp_path):
    """STARTTLS verifies the server: with the system's CAs (no ``ca_file`` for the lab's CA)
    nothing is sent, and no login is tried."""
    password = secrets.token_urlsafe(16)
    smtp = SmtpReceiver(tls=(tls_material / "broker.pem", tls_material / "broker.key"), users={"kafka-dr": password})
    other_ca = tmp_path / "other"
    prepare(other_ca)
    try:
        done = _send_over_starttls(smtp, tls_dir(other_ca) / "ca.pem", password)
        assert done.returncode == 0, done.stderr
        assert "CERTIFICATE_VERIFY_FAILED" in done.stderr
        assert smtp.logins == [] and smtp.messages == []
    finally:
        smtp.close()

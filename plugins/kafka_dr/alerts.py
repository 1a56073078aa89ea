"""Alert senders with no scheduler behind them: a webhook (JSON over HTTP) and e-mail (SMTP).

The Spark job, the CLI and the Airflow notifier (:mod:`kafka_dr.airflow.notifier`, a thin
wrapper) all send through here, so a Spark cluster without Airflow installed still alerts.
Secrets (the SMTP password) are resolved only when sending; neither channel ever carries
client settings.
"""

from __future__ import annotations

import json
import logging
import smtplib
import ssl
import urllib.request
from email.message import EmailMessage

from kafka_dr.core.config import Alerts

log = logging.getLogger(__name__)


def send_webhook(url: str, payload: dict, timeout: float = 10.0) -> None:
    req = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - configured http(s) URL
        if resp.status >= 300:
            raise RuntimeError(f"webhook answered HTTP {resp.status}")


def send_email(alerts: Alerts, subject: str, body: str, resolve=None) -> None:
    """``resolve`` turns a secret reference (the SMTP password) into its value; the default
    reads ``${env:...}`` references."""
    e = alerts.email
    msg = EmailMessage()
    msg["Subject"], msg["From"], msg["To"] = subject, e.sender, ", ".join(e.to)
    msg.set_content(body)
    with smtplib.SMTP(e.smtp_host, e.smtp_port, timeout=15) as smtp:
        if e.starttls:  # the server's certificate and name are verified before any login
            smtp.starttls(context=ssl.create_default_context(cafile=e.ca_file))
        if e.username:
            password = e.password
            if password is not None and not isinstance(password, str):
                if resolve is None:
                    from kafka_dr.core.secret_refs import env_resolver

                    resolve = env_resolver()
                password = resolve(password)
            smtp.login(e.username, password or "")
        smtp.send_message(msg)


def send_all(alerts: Alerts, subject: str, body: str, payload: dict, resolve=None) -> None:
    """Send to every configured channel; a channel that fails is logged and does not stop the
    others (alerting never breaks what it reports on)."""
    if alerts.webhook is not None:
        try:
            send_webhook(alerts.webhook.url, payload)
        except Exception as e:  # noqa: BLE001 - one channel failing must not silence the other
            log.error("kafka-dr alert: webhook failed: %s", e)
    if alerts.email is not None:
        try:
            send_email(alerts, subject, body, resolve)
        except Exception as e:  # noqa: BLE001
            log.error("kafka-dr alert: e-mail via %s:%s failed: %s", alerts.email.smtp_host, alerts.email.smtp_port, e)

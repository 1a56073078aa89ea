"""Alerts: an Airflow notifier that sends to the config's e-mail (SMTP) and webhook.

Used as ``on_failure_callback`` of the DAGs that watch the clusters (heartbeats, data
quality). The message says which DAG and task failed, the failure's own message (which names
flows, topics and partitions) and the run; the webhook gets the same as JSON. Secrets (the
SMTP password) are resolved only when sending; neither channel ever carries client settings.
"""

from __future__ import annotations

import json
import logging
import smtplib
import urllib.request
from email.message import EmailMessage

from airflow.sdk import BaseNotifier

from kafka_dr.core.config import Alerts

log = logging.getLogger(__name__)


def alert_text(context) -> tuple[str, str, dict]:
    ti = context.get("ti") or context.get("task_instance")
    dag_id = getattr(ti, "dag_id", None) or getattr(context.get("dag"), "dag_id", "?")
    task_id = getattr(ti, "task_id", "?")
    run_id = context.get("run_id") or getattr(context.get("dag_run"), "run_id", "?")
    error = context.get("exception")
    subject = f"[kafka-dr] {dag_id}.{task_id} failed"
    body = f"{subject}\nrun: {run_id}\n\n{error}\n"
    payload = {"source": "kafka-dr", "dag_id": dag_id, "task_id": task_id, "run_id": run_id, "error": str(error)}
    return subject, body, payload


def send_webhook(url: str, payload: dict, timeout: float = 10.0) -> None:
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - configured http(s) URL
        if resp.status >= 300:
            raise RuntimeError(f"webhook answered HTTP {resp.status}")


def send_email(alerts: Alerts, subject: str, body: str, resolve=None) -> None:
    e = alerts.email
    msg = EmailMessage()
    msg["Subject"], msg["From"], msg["To"] = subject, e.sender, ", ".join(e.to)
    msg.set_content(body)
    with smtplib.SMTP(e.smtp_host, e.smtp_port, timeout=15) as smtp:
        if e.starttls:
            smtp.starttls()
        if e.username:
            password = e.password
            if password is not None and not isinstance(password, str):
                password = (resolve or _resolver())(password)
            smtp.login(e.username, password or "")
        smtp.send_message(msg)


def _resolver():
    from kafka_dr.airflow.secret_resolver import airflow_resolver

    return airflow_resolver()


class KafkaDrNotifier(BaseNotifier):
    """Send a failure to every configured alert channel; a channel that fails is logged and
    does not stop the others."""

    def __init__(self, alerts: Alerts) -> None:
        super().__init__()
        self.alerts = alerts

    def notify(self, context) -> None:
        subject, body, payload = alert_text(context)
        if self.alerts.webhook is not None:
            try:
                send_webhook(self.alerts.webhook.url, payload)
            except Exception as e:  # noqa: BLE001 - one channel failing must not silence the other
                log.error("kafka-dr alert: webhook failed: %s", e)
        if self.alerts.email is not None:
            try:
                send_email(self.alerts, subject, body)
            except Exception as e:  # noqa: BLE001
                log.error("kafka-dr alert: e-mail via %s:%s failed: %s", self.alerts.email.smtp_host, self.alerts.email.smtp_port, e)


def announce(alerts: Alerts, event: str, subject: str, text: str, summary: dict) -> dict:
    """Log an operator run's summary and send it to the configured channels (failover,
    failback). Returns ``summary`` with ``summary_text`` added, which the UI shows as is (XCom
    tab, DR status page)."""
    import logging

    summary = {**summary, "summary_text": text}
    logging.getLogger(f"kafka_dr.{event}").info("%s", text)
    if alerts.webhook:
        send_webhook(alerts.webhook.url, {"source": "kafka-dr", "event": event, "summary": summary})
    if alerts.email:
        send_email(alerts, subject, text)
    return summary


def failure_callbacks(alerts: Alerts) -> list:
    return [KafkaDrNotifier(alerts)] if (alerts.email or alerts.webhook) else []

"""Alerts from Airflow: a notifier over the plain senders of :mod:`kafka_dr.alerts`.

Used as ``on_failure_callback`` of the DAGs that watch the clusters (heartbeats, data
quality). The message says which DAG and task failed, the failure's own message (which names
flows, topics and partitions) and the run; the webhook gets the same as JSON. Secrets (the
SMTP password) are resolved only when sending; neither channel ever carries client settings.
"""

from __future__ import annotations

import logging

from airflow.sdk import BaseNotifier

from kafka_dr.alerts import send_all, send_email, send_webhook
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


def _resolver():
    from kafka_dr.airflow.secret_resolver import airflow_resolver

    return airflow_resolver()


class KafkaDrNotifier(BaseNotifier):
    """Send a failure to every configured alert channel; a channel that fails is logged and
    does not stop the others."""

    def __init__(self, alerts: Alerts, quiet: tuple[type[BaseException], ...] = ()) -> None:
        super().__init__()
        self.alerts = alerts
        self.quiet = quiet  #: failures that are not alerts of their own

    def notify(self, context) -> None:
        if isinstance(context.get("exception"), self.quiet):
            log.info("not alerted: %s", context.get("exception"))
            return
        subject, body, payload = alert_text(context)
        send_all(self.alerts, subject, body, payload, _resolver())


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
        send_email(alerts, subject, text, _resolver())
    return summary


def failure_callbacks(alerts: Alerts, quiet: tuple[type[BaseException], ...] = ()) -> list:
    return [KafkaDrNotifier(alerts, quiet)] if (alerts.email or alerts.webhook) else []

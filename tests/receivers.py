"""The alert receivers tests use: the product's own (kafka_dr.gameday.receivers)."""

from kafka_dr.gameday.receivers import SmtpReceiver, WebhookReceiver

__all__ = ["SmtpReceiver", "WebhookReceiver"]

"""The game day's kafka-dr config: the lab's, with schedules a scheduler can be judged by in
minutes, alerts to the game day's own receivers, and the game day's consumer groups (pure)."""

from __future__ import annotations

import copy
from typing import Any

from kafka_dr.gameday.script import FULL

#: The periodic DAGs run every minute or two: a game day of minutes must see them act.
#: Heartbeats and the supervisor every minute: they detect a cut and restart a dead flow.
#: The two-minute ones split between even and odd minutes, as an operator staggers cron jobs:
#: six task processes starting at once keep both cores busy for seconds, and a fault or a
#: failover that meets them recovers that much later.
#: Data quality every ten: a Spark job over everything retained, the heaviest load on 2 cores.
SCHEDULES = {
    "heartbeat": "* * * * *",
    "cluster_health": "*/2 * * * *",
    "offset_sync": "*/2 * * * *",
    "replication_supervisor": "* * * * *",
    "topic_config_sync": "1-59/2 * * * *",
    "schema_mirror": "1-59/2 * * * *",
    "data_quality": "5-59/10 * * * *",
}


def game_config(
    lab_doc: dict[str, Any],
    webhook_url: str,
    smtp_port: int,
    groups_regex: str,
    latency_window_s: int = FULL.latency_window_s,
    scheduled_data_quality: bool = FULL.scheduled_data_quality,
) -> dict[str, Any]:
    """``lab_doc``: the lab's config as plain data (its YAML loaded). Returns a new document;
    without ``scheduled_data_quality`` dr_data_quality runs only when triggered."""
    doc = copy.deepcopy(lab_doc)
    doc["schedules"] = {**doc.get("schedules", {}), **SCHEDULES}
    if not scheduled_data_quality:
        doc["schedules"]["data_quality"] = "none"  # trigger only (docs/config.md#schedules)
    doc["alerts"] = {
        "webhook": {"url": webhook_url},
        "email": {"smtp_host": "127.0.0.1", "smtp_port": smtp_port, "to": "oncall@gameday.invalid"},
    }
    doc["consumer_groups"] = {"allow": [groups_regex]}
    # data quality judges the latency of the last copies only: the run at the end comes after
    # every fault, whose own lateness the fault table reports
    doc["thresholds"] = {**doc.get("thresholds", {}), "latency_window_seconds": latency_window_s}
    for flow in doc.get("flows", []):
        flow.setdefault("mode", "continuous")
    return doc

"""The lab's Prometheus and Alertmanager configs, built without starting either
(tests/integration/test_lab_monitoring.py runs them)."""

from __future__ import annotations

from kafka_dr.lab.monitoring import EXPORTER_JOB, alertmanager_config, prometheus_config, promtool_reason


def test_prometheus_scrapes_the_exporter_evaluates_the_rules_and_alerts_to_the_labs_alertmanager():
    config = prometheus_config(
        scrape_targets=["127.0.0.1:9464", "127.0.0.1:9465"],
        rule_files=["/lab/rules/kafka-dr.yml"],
        alertmanager="127.0.0.1:9093",
        scrape_interval="2s",
        evaluation_interval="3s",
    )
    assert config == {
        "global": {"scrape_interval": "2s", "evaluation_interval": "3s"},
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": ["127.0.0.1:9093"]}]}]},
        "rule_files": ["/lab/rules/kafka-dr.yml"],
        "scrape_configs": [
            {"job_name": "kafka-dr-exporter", "static_configs": [{"targets": ["127.0.0.1:9464", "127.0.0.1:9465"]}]}
        ],
    }
    assert EXPORTER_JOB == "kafka-dr-exporter"


def test_prometheus_without_rules_or_targets_is_still_a_whole_config():
    config = prometheus_config([], [], "127.0.0.1:9093", "15s", "15s")
    assert config["rule_files"] == []
    assert config["scrape_configs"] == [{"job_name": "kafka-dr-exporter", "static_configs": [{"targets": []}]}]


def test_alertmanager_posts_every_alert_and_its_resolution_to_the_webhook_grouped_per_alert_and_flow():
    assert alertmanager_config("http://127.0.0.1:8099/alerts") == {
        "route": {
            "receiver": "webhook",
            "group_by": ["alertname", "flow"],
            "group_wait": "1s",
            "group_interval": "5s",
            "repeat_interval": "1h",
        },
        "receivers": [
            {"name": "webhook", "webhook_configs": [{"url": "http://127.0.0.1:8099/alerts", "send_resolved": True}]}
        ],
    }


def test_alertmanager_without_a_webhook_routes_to_a_receiver_that_sends_nothing():
    config = alertmanager_config(None)
    assert config["route"]["receiver"] == "none"
    assert config["route"]["group_by"] == ["alertname", "flow"]
    assert config["receivers"] == [{"name": "none"}]


def test_promtools_complaint_is_one_line_naming_the_file_each_reason_once():
    stderr = (
        "  FAILED:\n"
        "     /lab/rules.yml: yaml: line 3: did not find expected '-' indicator\n"
        "     /lab/rules.yml: yaml: line 3: did not find expected '-' indicator\n"
    )
    assert promtool_reason(stderr) == "/lab/rules.yml: yaml: line 3: did not find expected '-' indicator"
    assert promtool_reason('  FAILED: "/lab/gone.yml" does not point to an existing file\n') == (
        '"/lab/gone.yml" does not point to an existing file'
    )

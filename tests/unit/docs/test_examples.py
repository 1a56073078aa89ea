"""The shipped examples are valid configs (secret references are only resolved later)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_dr.core.config import FlowMode, LoopPolicy, ProvenanceRule
from kafka_dr.core.config_load import load_config
from kafka_dr.core.secret_refs import SecretRef

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.mark.parametrize("name", ["active-active.yaml", "active-passive.yaml"])
def test_example_parses(name, monkeypatch):
    for var in ("KAFKA_EAST_PASSWORD", "SMTP_PASSWORD", "PROD_KAFKA_API_KEY", "PROD_KAFKA_API_SECRET"):
        monkeypatch.delenv(var, raising=False)
    cfg = load_config(EXAMPLES / name)
    assert cfg.alerts.email is not None and cfg.alerts.webhook is not None
    assert cfg.schema_mirror is not None
    for cluster in cfg.clusters.values():
        assert isinstance(cluster.client["sasl.password"], SecretRef)
        assert cluster.client["security.protocol"] == "SASL_SSL"
        assert cluster.schema_registry.url.startswith("https://")


def test_active_active_example():
    cfg = load_config(EXAMPLES / "active-active.yaml")
    assert [(f.source, f.target) for f in cfg.flows] == [("east", "west"), ("west", "east")]
    assert {f.loop_policy for f in cfg.flows} == {LoopPolicy.PROVENANCE}
    assert {f.provenance_rule for f in cfg.flows} == {ProvenanceRule.LOCAL_ONLY}
    sel = cfg.flows[0].topics
    assert sel.selects("orders.eu") and sel.selects("customers")
    assert not sel.selects("orders.eu.tmp") and not sel.selects("_kafka_dr.heartbeats")
    assert cfg.cluster("west").client["sasl.password"] == SecretRef("airflow", "kafka_west")
    assert cfg.alerts.email.password == SecretRef("env", "SMTP_PASSWORD")
    assert cfg.spark.conf["spark.executor.cores"] == "2"


def test_active_passive_example():
    cfg = load_config(EXAMPLES / "active-passive.yaml")
    assert [(f.name, f.enabled) for f in cfg.flows] == [
        ("prod_to_dr", True),
        ("audit_to_dr", True),
        ("dr_to_prod", False),
    ]
    audit = cfg.flows[1]
    assert (audit.mode, audit.schedule, audit.max_duration_seconds) == (FlowMode.INCREMENTAL, "15 * * * *", 1200)
    assert not cfg.flows[0].topics.selects("audit.logins") and audit.topics.selects("audit.logins")
    assert cfg.schema_mirror.targets == ("dr",)
    assert cfg.cluster("dr").client["sasl.username"] == SecretRef("airflow", "kafka_dr_site.login")

"""The shipped Prometheus alert rules: promtool accepts them, their own unit tests
(``kafka-dr-rules.test.yml``: each alert firing and not firing) pass, they query only metrics
the exporter serves, and each names a runbook section that exists."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import yaml

from kafka_dr.core import metric_catalog
from kafka_dr.shipped import folder

RULES = folder("monitoring") / "prometheus" / "kafka-dr-rules.yml"
RULE_TESTS = RULES.with_name("kafka-dr-rules.test.yml")
OPERATIONS = Path(__file__).resolve().parents[3] / "docs" / "operations.md"
MONITORING = OPERATIONS.with_name("monitoring.md")


def _promtool() -> str:
    found = shutil.which("promtool")
    assert found, "promtool is not installed: make debian-packages installs Debian's prometheus (make test does)"
    return found


def _rules() -> list[dict]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


REPO = Path(__file__).resolve().parents[3]


def _as_printed(line: str) -> subprocess.CompletedProcess:
    """A promtool line of docs/monitoring.md, run from the checkout's root as printed."""
    doc = (REPO / "docs" / "monitoring.md").read_text()
    assert f"\n{line}\n" in doc, f"docs/monitoring.md no longer prints: {line}"
    return subprocess.run([_promtool(), *line.split()[1:]], cwd=REPO, capture_output=True, text=True)


def test_promtool_checks_the_rules():
    out = _as_printed("promtool check rules monitoring/prometheus/kafka-dr-rules.yml")
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in out.stdout


def test_promtool_unit_tests_pass_and_cover_every_alert_firing_and_quiet():
    out = _as_printed("promtool test rules monitoring/prometheus/kafka-dr-rules.test.yml")
    assert out.returncode == 0, out.stdout + out.stderr
    cases = [c for t in yaml.safe_load(RULE_TESTS.read_text())["tests"] for c in t.get("alert_rule_test", [])]
    for alert in (r["alert"] for r in _rules()):
        mine = [c for c in cases if c["alertname"] == alert]
        assert any(c["exp_alerts"] for c in mine), f"{alert}: no test case where it fires"
        assert any(not c["exp_alerts"] for c in mine), f"{alert}: no test case where it must not fire"


def test_rules_use_only_served_metrics():
    served = metric_catalog.series_names()
    for rule in _rules():
        used = set(re.findall(r"\bkafka_dr_[a-z_]+", rule["expr"]))
        assert used <= served, (rule["alert"], used - served)


def test_every_rule_has_a_runbook_section_and_a_severity():
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
        for h in re.findall(r"^#+ (.+)$", OPERATIONS.read_text(), re.M)
    }
    for rule in _rules():
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        doc, _, anchor = rule["annotations"]["runbook_url"].partition("#")
        assert doc == "docs/operations.md" and anchor in anchors, (rule["alert"], anchor)


def test_the_metric_reference_lists_every_metric_and_every_alert():
    doc = MONITORING.read_text()
    for metric in metric_catalog.ALL:
        assert f"| `{metric.full_name}` | {metric.kind} |" in doc, metric.full_name
    for rule in _rules():
        assert f"`{rule['alert']}`" in doc, rule["alert"]

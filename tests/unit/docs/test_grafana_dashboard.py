"""The shipped Grafana dashboard queries only metrics the exporter serves, shows every one of them,
and every panel is complete: a title, a description, a unit, and targets on the templated
Prometheus data source, filtered by the ``flow`` variable wherever the metric has a flow."""

from __future__ import annotations

import json
import re

import pytest

from kafka_dr.core import metric_catalog
from kafka_dr.core.config import Thresholds
from kafka_dr.core.metric_samples import THRESHOLDS
from kafka_dr.shipped import folder

DASHBOARD_PATH = folder("monitoring") / "grafana" / "kafka-dr.json"
DASHBOARD = json.loads(DASHBOARD_PATH.read_text(encoding="utf-8"))
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
FLOW_FILTER = 'flow=~"$flow"'

#: catalog metrics no panel shows, each with the reason (none: the dashboard shows them all)
NOT_SHOWN: dict[str, str] = {}

SERIES = re.compile(r"\b(kafka_dr_[a-z0-9_]+)(\{[^}]*\})?")
THRESHOLD_NAME = re.compile(r'\bkafka_dr_threshold\{name="([^"]+)"\}')


def walk(panels: list[dict]) -> list[dict]:
    """Every panel, rows and the panels of collapsed rows included."""
    out = []
    for p in panels:
        out.append(p)
        out.extend(walk(p.get("panels", [])))
    return out


PANELS = [p for p in walk(DASHBOARD["panels"]) if p["type"] != "row"]
TARGETS = [(p["title"], t) for p in PANELS for t in p.get("targets", [])]
EXPRS = [t["expr"] for _, t in TARGETS]
VARIABLES = {v["name"]: v for v in DASHBOARD["templating"]["list"]}


def catalog_by_series() -> dict[str, metric_catalog.Metric]:
    """Each series name a query may use, to its catalog metric (a histogram's three series to it)."""
    out = {}
    for m in metric_catalog.ALL:
        names = [f"{m.full_name}_{s}" for s in ("bucket", "sum", "count")] if m.kind == "histogram" else [m.full_name]
        out.update(dict.fromkeys(names, m))
    return out


BY_SERIES = catalog_by_series()


def variable_query(v: dict) -> str:
    q = v["query"]
    return q["query"] if isinstance(q, dict) else q


def test_dashboard_identity():
    assert DASHBOARD["uid"] == "kafka-dr"
    assert DASHBOARD["title"] == "kafka-dr: replication and failover"
    assert DASHBOARD["schemaVersion"] == 39
    ids = [p["id"] for p in walk(DASHBOARD["panels"])]
    assert len(ids) == len(set(ids)), "panel ids repeat"


def test_datasource_variable():
    ds = VARIABLES["datasource"]
    assert (ds["type"], ds["query"]) == ("datasource", "prometheus")


def test_flow_variable():
    flow = VARIABLES["flow"]
    assert flow["type"] == "query"
    assert flow["multi"] and flow["includeAll"]
    assert variable_query(flow) == "label_values(kafka_dr_flow_active, flow)"
    assert flow["datasource"] == DATASOURCE


def test_every_series_is_in_the_catalog():
    assert set(BY_SERIES) == metric_catalog.series_names()
    used = {m.group(1) for e in [*EXPRS, *(variable_query(v) for v in VARIABLES.values())] for m in SERIES.finditer(e)}
    assert used, "no kafka_dr series found in the dashboard"
    unknown = sorted(used - metric_catalog.series_names())
    assert not unknown, f"series the exporter does not serve: {unknown}"


def test_every_catalog_metric_is_shown():
    shown = {BY_SERIES[m.group(1)].full_name for e in EXPRS for m in SERIES.finditer(e) if m.group(1) in BY_SERIES}
    missing = sorted({m.full_name for m in metric_catalog.ALL} - shown - set(NOT_SHOWN))
    assert not missing, f"catalog metrics no panel shows: {missing}"
    stale = sorted(set(NOT_SHOWN) & shown)
    assert not stale, f"listed as not shown, but a panel shows them: {stale}"


def test_thresholds_drawn_are_thresholds_the_exporter_serves():
    names = {n for e in EXPRS for n in THRESHOLD_NAME.findall(e)}
    assert {"heartbeat_max_age_seconds", "replication_lag_max_seconds", "replication_lag_max_records"} <= names
    assert names <= set(THRESHOLDS), f"drawn, never served: {sorted(names - set(THRESHOLDS))}"
    assert set(THRESHOLDS) <= set(Thresholds.__dataclass_fields__)


@pytest.mark.parametrize("panel", PANELS, ids=[p.get("title", "?") for p in PANELS])
def test_panel_is_complete(panel):
    assert panel.get("title", "").strip(), "no title"
    assert panel.get("description", "").strip(), "no description"
    assert "\n" not in panel["description"]
    assert panel["fieldConfig"]["defaults"].get("unit"), "no unit"
    assert panel["datasource"] == DATASOURCE
    targets = panel.get("targets", [])
    assert targets, "no target"
    refs = [t.get("refId") for t in targets]
    assert all(refs), f"a target without refId: {refs}"
    assert len(refs) == len(set(refs)), f"refIds repeat: {refs}"
    for t in targets:
        assert t["datasource"] == DATASOURCE
        assert t["expr"].strip()


@pytest.mark.parametrize(("title", "target"), TARGETS, ids=[f"{title}:{t['refId']}" for title, t in TARGETS])
def test_flow_metrics_filter_on_the_flow_variable(title, target):
    for m in SERIES.finditer(target["expr"]):
        metric = BY_SERIES.get(m.group(1))  # an unknown name fails test_every_series_is_in_the_catalog
        if metric is not None and "flow" in metric.labels:
            assert FLOW_FILTER in (m.group(2) or ""), f"{m.group(1)} is not filtered by {FLOW_FILTER}"

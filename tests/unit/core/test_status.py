"""Judging the DR status from what was read (kafka_dr.core.status) and drawing it
(kafka_dr.airflow.status_html and its templates): literal inputs, no clusters, no Airflow."""

import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest
from fastapi import HTTPException

from kafka_dr.airflow.status_html import TEMPLATES, latency_svg, render, status_view
from kafka_dr.airflow.status_page import docs_file, docs_url
from kafka_dr.core.config_load import parse_config
from kafka_dr.core.dr_state import DrState
from kafka_dr.core.heartbeat import FlowLatency
from kafka_dr.core.status import (
    Alert,
    ClusterHealth,
    FlowStatus,
    StatusReport,
    build_status,
    latency_series,
    latest_batch,
)

CFG = parse_config(
    {
        "clusters": {
            "east": {"bootstrap_servers": "e:9092"},
            "west": {"bootstrap_servers": "w:9092", "cluster_id": "W-ID"},
        },
        "flows": [
            {"name": "east_to_west", "source": "east", "target": "west", "topics": {"allow": ["orders"]}},
            {"name": "west_to_east", "source": "west", "target": "east", "topics": {"allow": ["orders"]}},
        ],
        "thresholds": {"replication_lag_max_records": 1000, "latency_p99_max_seconds": 5},
    }
)
NOW = 1_800_000_000_000
UP = {
    "east": ClusterHealth("east", "e:9092", True, "E-ID"),
    "west": ClusterHealth("west", "w:9092", True, "W-ID", "W-ID"),
}


def row(flow, batch, at, part, lag, p99, written=10):
    return {
        "flow": flow,
        "topic": "orders",
        "partition": part,
        "batch": batch,
        "at_ms": at,
        "lag": lag,
        "latency_p50_ms": None if p99 is None else p99 / 2,
        "latency_p99_ms": p99,
        "written": written,
    }


METRICS = [
    row("east_to_west", 1, NOW - 60_000, 0, 500, 800.0),
    row("east_to_west", 1, NOW - 60_000, 1, 700, 1200.0),
    row("east_to_west", 2, NOW - 5_000, 0, 10, 300.0),
    row("east_to_west", 2, NOW - 5_000, 1, 20, 400.0),
    row("west_to_east", 7, NOW - 9_000, 0, 0, None, written=0),
]


def hb(flow, src, dst, age, status="ok", loops=0):
    return FlowLatency(flow, src, dst, None if age is None else NOW - int(age * 1000), age, status, loops)


HEALTHY_BEATS = {
    "east_to_west": hb("east_to_west", "east", "west", 3.0),
    "west_to_east": hb("west_to_east", "west", "east", 4.0),
}


def test_newest_batch_gives_the_lag_and_latency_of_a_flow():
    assert [r["partition"] for r in latest_batch(METRICS, "east_to_west")] == [0, 1]
    report = build_status(CFG, UP, DrState(), HEALTHY_BEATS, METRICS, None, {}, NOW)
    e2w = report.flows[0]
    assert (e2w.lag_records, e2w.latency_p99_ms, e2w.latency_p50_ms, e2w.written_last_batch) == (30, 400.0, 200.0, 20)
    assert (e2w.heartbeat_status, e2w.heartbeat_age_seconds, e2w.last_heartbeat_ms) == ("ok", 3.0, NOW - 3000)
    assert report.flows[1].latency_p99_ms is None and report.flows[1].lag_records == 0
    assert report.alerts == () and report.overall == "ok"
    # no failover recorded: the first cluster of the config is active, and the page says why
    assert (report.active_cluster, report.active_source) == ("east", "config")


def test_latency_series_is_the_worst_partition_per_batch_and_skips_idle_batches():
    assert latency_series(METRICS, "east_to_west") == [(NOW - 60_000, 1200.0), (NOW - 5_000, 400.0)]
    assert latency_series(METRICS, "west_to_east") == []
    # a restarted job reuses batch ids: two batch 0s minutes apart are two points
    restarted = [row("f", 0, NOW - 600_000, 0, 0, 50.0), row("f", 0, NOW, 0, 0, 70.0)]
    assert latency_series(restarted, "f") == [(NOW - 600_000, 50.0), (NOW, 70.0)]


def test_a_cluster_down_is_critical_and_its_flows_are_unknown_not_guessed():
    health = {**UP, "east": ClusterHealth("east", "e:9092", False, error="no answer within 3s")}
    beats = {"east_to_west": HEALTHY_BEATS["east_to_west"]}  # west_to_east targets east: unread
    report = build_status(CFG, health, DrState(), beats, [], None, {}, NOW)
    texts = [a.text for a in report.alerts]
    assert report.overall == "critical"
    assert "cluster east (e:9092) is unreachable: no answer within 3s" in texts
    assert "the ACTIVE cluster east is unreachable: consider the dr_failover DAG" in texts
    e2w, w2e = report.flows
    assert (w2e.heartbeat_status, w2e.heartbeat_age_seconds, w2e.lag_records, w2e.blocked) == (
        "unknown",
        None,
        None,
        "target down",
    )
    assert e2w.blocked == "source down" and "SOURCE DOWN" in render(report, None, [], {})


def test_after_a_failover_the_recorded_survivor_is_active_and_stopped_flows_do_not_alert():
    state = DrState(4, "west", "west", ("east",), {"kind": "failover", "from": "east", "to": "west"})
    beats = {
        "east_to_west": hb("east_to_west", "east", "west", 900.0, "late"),
        "west_to_east": HEALTHY_BEATS["west_to_east"],
    }
    report = build_status(CFG, UP, state, beats, [], None, {}, NOW)
    assert (report.active_cluster, report.active_source, report.failed_clusters) == ("west", "recorded", ("east",))
    assert report.flows[0].stopped and report.alerts == ()


def test_thresholds_loops_id_mismatch_dq_and_failed_syncs_alert():
    health = {**UP, "west": ClusterHealth("west", "w:9092", True, "OTHER", "W-ID")}
    lagging = METRICS + [row("east_to_west", 3, NOW - 1000, 0, 5000, 9000.0)]
    beats = {
        "east_to_west": hb("east_to_west", "east", "west", 200.0, "late"),
        "west_to_east": hb("west_to_east", "west", "east", None, "missing", loops=2),
    }
    dq = {
        "run_id": "dq-7",
        "ts_ms": NOW - 1000,
        "success": False,
        "failed": ["orders[0] count", "orders[1] checksum"],
        "checked_partitions": 2,
        "docs_path": "/tmp/docs",
    }
    runs = {
        "dr_topic_config_sync": {"state": "failed", "end_ms": NOW},
        "dr_schema_mirror": {"state": "success", "end_ms": NOW},
    }
    report = build_status(CFG, health, DrState(), beats, lagging, dq, runs, NOW)
    texts = [(a.level, a.text) for a in report.alerts]
    assert texts == [
        ("critical", "cluster west reports id OTHER, config expects W-ID"),
        ("critical", "flow west_to_east: 2 heartbeat(s) of east came back to it: a replication loop"),
        ("critical", "data-quality run dq-7 failed: 2 check(s): orders[0] count, orders[1] checksum"),
        ("warning", "flow east_to_west: newest heartbeat is 200s old (max 120s)"),
        ("warning", "flow east_to_west: lag 5000 records (max 1000)"),
        ("warning", "flow east_to_west: p99 latency 9.0s (max 5s)"),
        ("warning", "flow west_to_east: no heartbeat from west has reached east"),
        ("warning", "last Topic-config sync run (dr_topic_config_sync) failed"),
    ]


def test_page_shows_active_cluster_alerts_flows_and_missing_dq_plainly():
    health = {**UP, "east": ClusterHealth("east", "e:9092", False, error="no answer within 3s")}
    report = build_status(CFG, health, DrState(), HEALTHY_BEATS, METRICS, None, {}, NOW)
    html = render(report, None, [], {"state on east": "RuntimeError: boom <b>"})
    assert 'id="active-cluster">east<' in html and 'data-overall="critical"' in html
    assert "CRITICAL: cluster east (e:9092) is unreachable" in html
    assert '<td class="num lag">30</td>' in html and "3.0 s" in html
    assert "No data-quality run yet." in html and "<polyline" in html
    assert "RuntimeError: boom &lt;b&gt;" in html  # read errors are shown, escaped


def test_page_links_data_docs_and_shows_failover_summaries():
    dq = {
        "run_id": "dq-1",
        "ts_ms": NOW - 60_000,
        "success": True,
        "failed": [],
        "checked_partitions": 4,
        "docs_path": "/x",
    }
    runs = {"dr_schema_mirror": {"state": "success", "end_ms": NOW - 7_200_000}}
    report = build_status(CFG, UP, DrState(), HEALTHY_BEATS, [], dq, runs, NOW)
    ops = [
        {
            "dag_id": "dr_failover",
            "run_id": "manual__1",
            "state": "success",
            "end_ms": NOW - 30_000,
            "summary_text": "failover east -> west (DRY RUN: nothing changed)",
        }
    ]
    html = render(report, "/dr-status/data-docs/index.html", ops, {})
    assert 'href="/dr-status/data-docs/index.html"' in html and "PASSED" in html and "4 partition(s) checked" in html
    assert "failover east -&gt; west (DRY RUN: nothing changed)" in html
    assert "2h ago" in html and "No alerts" in html


def test_chart_without_points_says_so_and_scales_to_the_largest_value():
    assert "No replication batches" in latency_svg({})
    svg = latency_svg({"a": [(0, 100.0), (1000, 2000.0)]}, width=100, height=60)
    assert svg.startswith("<svg") and "2000 ms" in svg and 'points="56.0,31.0 88.0,12.0"' in svg


def test_a_flow_that_selects_no_topic_on_its_source_is_flagged_in_its_row():
    # east holds orders; west holds only the product's topics: west_to_east copies heartbeats only
    topics = {"east": ["orders", "_kafka_dr.heartbeats"], "west": ["_kafka_dr.heartbeats", "_kafka_dr.metrics"]}
    report = build_status(CFG, UP, DrState(), HEALTHY_BEATS, METRICS, None, {}, NOW, topics=topics)
    e2w, w2e = report.flows
    assert (e2w.selected_topics, w2e.selected_topics) == (1, 0)
    assert [(a.level, a.text) for a in report.alerts] == [
        (
            "warning",
            "flow west_to_east selects no topics on west (allow ['orders']): it copies only heartbeats; "
            "check topics.allow, or create the topics",
        )
    ]
    html = render(report, None, [], {})
    row = html[html.index('<tr data-flow="west_to_east">') :]
    assert "SELECTS NO TOPICS" in row[: row.index("</tr>")] and html.count("SELECTS NO TOPICS") == 1
    # a source that was not read is not judged
    unread = build_status(CFG, UP, DrState(), HEALTHY_BEATS, METRICS, None, {}, NOW, topics={"east": ["orders"]})
    assert unread.flows[1].selected_topics is None and unread.alerts == ()


def test_the_view_model_carries_worded_values_for_the_template():
    health = {**UP, "west": ClusterHealth("west", "w:9092", True, "OTHER", "W-ID")}
    report = build_status(CFG, health, DrState(), HEALTHY_BEATS, METRICS, None, {"dr_heartbeat": None}, NOW)
    view = status_view(report, None, [], {})
    assert (view.banner.overall, view.banner.active_cluster, view.banner.alert_count) == (
        "critical",
        "east",
        "1 critical · 0 warning",
    )
    e2w = view.flows[0]
    assert (e2w.state.text, e2w.lag, e2w.batch_latency, e2w.written, e2w.heartbeat_ago) == (
        "OK",
        "30",
        "200 ms / 400 ms",
        "20",
        "3s ago",
    )
    west = view.clusters[1]
    assert ([b.text for b in west.badges], west.detail, west.expected_id) == (["UP"], "cluster id OTHER", "W-ID")
    assert view.data_quality is None and view.operations == () and view.syncs[3].state is None


def test_every_value_the_page_prints_is_escaped():
    evil = "<script>x</script>"
    flow = FlowStatus(evil, evil, evil, True, False, "ok", 1.0, NOW, 0, 1.0, 2.0, NOW, 1)
    report = StatusReport(
        NOW,
        evil,
        "recorded",
        (evil,),
        {"to": evil},
        (ClusterHealth(evil, evil, False, error=evil),),
        (flow,),
        {"run_id": evil, "ts_ms": NOW, "success": False, "failed": [evil]},
        {},
        (Alert("warning", evil),),
        {evil: [(NOW, 5.0)]},
    )
    ops = [{"dag_id": evil, "run_id": evil, "state": evil, "end_ms": NOW, "summary_text": evil}]
    html = render(report, '/d?a=1&b="2"', ops, {evil: evil})
    assert "<script>" not in html and html.count("&lt;script&gt;x&lt;/script&gt;") >= 20
    assert 'href="/d?a=1&amp;b=&#34;2&#34;"' in html


def test_data_docs_are_served_only_from_the_runs_docs_folder(tmp_path):
    docs = tmp_path / "docs"
    (docs / "pages").mkdir(parents=True)
    (docs / "index.html").write_text("index")
    (docs / "pages" / "p.html").write_text("page")
    (tmp_path / "secret.txt").write_text("no")
    dq = {"docs_path": f"file://{docs / 'index.html'}"}
    assert docs_url(dq) == "/dr-status/data-docs/index.html" and docs_url(None) is None
    assert docs_file(dq, "") == docs / "index.html" and docs_file(dq, "pages/p.html") == docs / "pages" / "p.html"
    for outside in ("../secret.txt", "pages/../../secret.txt", "missing.html"):
        with pytest.raises(HTTPException) as err:
            docs_file(dq, outside)
        assert err.value.status_code == 404
    with pytest.raises(HTTPException, match="no data-quality run"):
        docs_file(None, "index.html")


def test_the_page_templates_ship_with_the_package():
    pyproject = tomllib.loads((Path(__file__).parents[3] / "pyproject.toml").read_text())
    shipped = pyproject["tool"]["setuptools"]["package-data"]["kafka_dr"]
    templates = TEMPLATES.list_templates()
    assert "status.html" in templates
    for name in templates:
        assert any(fnmatch(f"airflow/templates/{name}", pattern) for pattern in shipped), name


def test_a_target_not_ready_for_failover_is_a_warning_and_the_page_lists_why():
    parity = [
        {
            "from": "east",
            "to": "west",
            "verdict": "not ready",
            "at_ms": NOW - 60_000,
            "differences": [
                {"area": "acls", "severity": "not ready", "what": "missing on west: ALLOW User:app READ on topic o"},
                {"area": "schema registry", "severity": "note", "what": "not set up"},
            ],
        },
        {"from": "west", "to": "east", "verdict": "ready", "at_ms": NOW, "differences": []},
    ]
    report = build_status(CFG, UP, DrState(), HEALTHY_BEATS, METRICS, None, {}, NOW, parity=parity)
    assert [a.text for a in report.alerts] == [
        "failover east -> west: west is not ready for the applications (1 blocking difference(s), see Failover "
        "readiness)"
    ]
    page = render(report, None, [], {})
    section = page.split('<div id="parity">', 1)[1].split("</div>", 1)[0]
    assert "east -&gt; west" in section and "not ready" in section and "west -&gt; east" in section
    assert "not ready: acls: missing on west: ALLOW User:app READ on topic o" in section
    assert "not set up" not in section  # notes are not shown


def test_a_new_deployment_is_told_what_to_unpause_rather_than_warned():
    """Right after the DAGs are deployed, the monitoring DAGs are paused: no heartbeat, no parity
    report, no data-quality run. The page names the DAG to unpause for each, and warns of none."""
    beats = {f.name: hb(f.name, f.source, f.target, None, "missing") for f in CFG.flows}
    paused = frozenset({"dr_heartbeat", "dr_parity", "dr_data_quality", "dr_acl_sync"})
    report = build_status(CFG, UP, DrState(), beats, [], None, {}, NOW, paused=paused)
    assert report.alerts == () and report.overall == "ok"
    assert [s.split(":")[0] for s in report.next_steps] == [
        "Unpause dr_heartbeat",
        "Unpause dr_parity",
        "Unpause dr_data_quality",
    ]
    html = render(report, None, [], {})
    assert '<ol class="next-steps" id="next-steps">' in html and "Unpause dr_parity" in html


def test_a_running_heartbeat_dag_that_delivers_nothing_is_a_warning_not_a_step():
    beats = {f.name: hb(f.name, f.source, f.target, None, "missing") for f in CFG.flows}
    report = build_status(CFG, UP, DrState(), beats, [], None, {}, NOW, paused=frozenset({"dr_parity"}))
    assert {a.level for a in report.alerts} == {"warning"}
    assert all("no heartbeat" in a.text for a in report.alerts) and len(report.alerts) == len(CFG.flows)
    assert [s.split(":")[0] for s in report.next_steps] == ["Unpause dr_parity"]
    assert 'id="next-steps"' in render(report, None, [], {})
    healthy = build_status(CFG, UP, DrState(), HEALTHY_BEATS, METRICS, {"success": True}, {}, NOW)
    assert healthy.next_steps == () and 'id="next-steps"' not in render(healthy, None, [], {})

"""Render a :class:`~kafka_dr.core.status.StatusReport` as one self-contained HTML page.

Pure (no Airflow, no network): the page must work on an air-gapped Airflow, so there is no
JavaScript and nothing fetched from elsewhere; the latency chart is an inline SVG.
The order is the order of an on-call engineer's questions: is something wrong (banner,
alerts), which cluster is active, are the clusters up, are the flows keeping up, when did the
syncs and the data-quality proof last run, what did the last failover do.

The markup lives in ``templates/`` (Jinja2, autoescaped). This module turns the report into a
view model of plain values that the templates only lay out: every text worded, every colour
chosen, every number formatted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from kafka_dr.core.selection import SELECTS_NO_TOPICS
from kafka_dr.core.status import SYNC_DAGS, Alert, ClusterHealth, FlowStatus, StatusReport

COLORS = {"ok": "#1b7f3b", "warning": "#b26a00", "critical": "#c62828", "unknown": "#616161"}
SERIES_COLORS = ["#1565c0", "#6a1b9a", "#00838f", "#ad1457", "#2e7d32", "#ef6c00"]
HEARTBEAT_LEVELS = {"ok": "ok", "late": "warning", "missing": "warning", "waiting": "unknown"}
RUN_LEVELS = {"success": "ok", "failed": "critical", "running": "unknown"}
ACTIVE_NOTES = {
    "recorded": "recorded by the last failover/failback",
    "config": "no failover recorded: first cluster in the config",
    "none": "no clusters configured",
}

# Autoescaped: every name, error and summary shown comes from a cluster or a DAG run.
TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).with_name("templates")),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def utc(ms: int | None) -> str:
    if ms is None:
        return "—"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def ago(ms: int | None, now_ms: int) -> str:
    if ms is None:
        return "never"
    s = max(0, (now_ms - ms) // 1000)
    if s < 120:
        return f"{s}s ago"
    if s < 7200:
        return f"{s // 60}m ago"
    if s < 172800:
        return f"{s // 3600}h ago"
    return f"{s // 86400}d ago"


def duration_ms(ms: float | None) -> str:
    if ms is None:
        return "—"
    return f"{ms:.0f} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"


def count(n: int | None) -> str:
    return "—" if n is None else f"{n:,}"


# -- the view model --------------------------------------------------------------------------


@dataclass(frozen=True)
class Badge:
    text: str
    color: str


def badge(text: str, level: str) -> Badge:
    return Badge(text, COLORS.get(level, COLORS["unknown"]))


@dataclass(frozen=True)
class Banner:
    overall: str  #: "ok" | "warning" | "critical" | "unknown" (also the page's data-overall)
    color: str
    active_cluster: str
    active_note: str
    alert_count: str
    failed_clusters: str
    checked: str


@dataclass(frozen=True)
class ClusterCard:
    name: str
    bootstrap: str
    up: bool
    badges: tuple[Badge, ...]
    detail: str  #: the cluster id when it answers, else why not
    expected_id: str | None  #: set only when the cluster reports another id than the config's


@dataclass(frozen=True)
class FlowRow:
    name: str
    source: str
    target: str
    state: Badge
    no_topics: Badge | None  #: the flow's heartbeats arrive, yet it selects no data topic
    heartbeat_age: str
    heartbeat_ago: str
    lag: str
    batch_latency: str  #: "p50 / p99"
    last_batch: str
    written: str


@dataclass(frozen=True)
class GridLine:
    y: str
    label_y: str
    label: str


@dataclass(frozen=True)
class ChartLine:
    flow: str
    color: str
    xy: tuple[tuple[str, str], ...]  #: at least one point; one point is drawn as a dot
    label_y: int

    @property
    def points(self) -> str:
        return " ".join(f"{x},{y}" for x, y in self.xy)


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    left: int  #: the plot area: left, top, w, h
    top: int
    w: int
    h: int
    grid: tuple[GridLine, ...]
    first_time: str
    last_time: str
    lines: tuple[ChartLine, ...]


@dataclass(frozen=True)
class DataQuality:
    run_id: str
    verdict: Badge
    ago: str
    at: str
    checked_partitions: str
    docs_url: str | None
    failed: tuple[str, ...]  #: the first 20 failed checks


@dataclass(frozen=True)
class SyncRow:
    label: str
    dag_id: str
    state: Badge | None  #: None: the DAG has not run yet
    ago: str
    at: str


@dataclass(frozen=True)
class ParityRow:
    direction: str
    verdict: Badge
    ago: str
    differences: tuple[str, ...]  #: not ready and degraded ones, worst first


@dataclass(frozen=True)
class Operation:
    dag_id: str
    run_id: str
    state: Badge
    ago: str
    summary: str


@dataclass(frozen=True)
class StatusView:
    refresh_seconds: int
    banner: Banner
    alerts: tuple[Alert, ...]
    clusters: tuple[ClusterCard, ...]
    flows: tuple[FlowRow, ...]
    chart: Chart | None  #: None: no batch with latency yet
    data_quality: DataQuality | None  #: None: no data-quality run yet
    syncs: tuple[SyncRow, ...]
    parity: tuple[ParityRow, ...]
    last_event: str | None
    operations: tuple[Operation, ...]
    read_errors: tuple[tuple[str, str], ...]
    next_steps: tuple[str, ...] = ()


# -- building it, section by section ---------------------------------------------------------


def banner(report: StatusReport) -> Banner:
    n_crit = sum(a.level == "critical" for a in report.alerts)
    n_warn = len(report.alerts) - n_crit
    return Banner(
        overall=report.overall,
        color=COLORS[report.overall],
        active_cluster=report.active_cluster or "unknown",
        active_note=ACTIVE_NOTES[report.active_source],
        alert_count=f"{n_crit} critical · {n_warn} warning",
        failed_clusters=", ".join(report.failed_clusters) or "none",
        checked=utc(report.generated_ms),
    )


def cluster_card(c: ClusterHealth, report: StatusReport) -> ClusterCard:
    badges = [badge("UP", "ok") if c.reachable else badge("DOWN", "critical")]
    if c.name == report.active_cluster:
        badges.append(badge("ACTIVE", "ok" if c.reachable else "critical"))
    if c.name in report.failed_clusters:
        badges.append(badge("FAILED OVER", "warning"))
    return ClusterCard(
        name=c.name,
        bootstrap=c.bootstrap,
        up=c.reachable,
        badges=tuple(badges),
        detail=f"cluster id {c.cluster_id or '—'}" if c.reachable else c.error or "no answer",
        expected_id=(c.expected_id or "") if c.id_mismatch else None,
    )


def flow_state(f: FlowStatus) -> Badge:
    if not f.enabled:
        return badge("DISABLED", "unknown")
    if f.stopped:
        return badge("STOPPED", "warning")
    if f.blocked:
        return badge(f.blocked.upper(), "critical")
    return badge(f.heartbeat_status.upper(), HEARTBEAT_LEVELS.get(f.heartbeat_status, "unknown"))


def flow_row(f: FlowStatus, now: int) -> FlowRow:
    return FlowRow(
        name=f.name,
        source=f.source,
        target=f.target,
        state=flow_state(f),
        no_topics=badge(SELECTS_NO_TOPICS.upper(), "warning") if f.enabled and f.selected_topics == 0 else None,
        heartbeat_age="—" if f.heartbeat_age_seconds is None else f"{f.heartbeat_age_seconds:.1f} s",
        heartbeat_ago=ago(f.last_heartbeat_ms, now),
        lag=count(f.lag_records),
        batch_latency=f"{duration_ms(f.latency_p50_ms)} / {duration_ms(f.latency_p99_ms)}",
        last_batch=ago(f.last_batch_ms, now),
        written=count(f.written_last_batch),
    )


def latency_chart(series: dict[str, list[tuple[int, float]]], width: int = 640, height: int = 180) -> Chart | None:
    """A small line chart of p99 replication latency per flow over time, or None without points.

    One line per flow, a shared time axis, the y axis from 0 to the largest value seen (so
    a flat line near the bottom reads as "fine" without reading numbers)."""
    points = [p for s in series.values() for p in s]
    if not points:
        return None
    left, right, top, bottom = 56, 12, 12, 28
    t0, t1 = min(p[0] for p in points), max(p[0] for p in points)
    vmax = max(p[1] for p in points) or 1.0
    span = max(1, t1 - t0)
    w, h = width - left - right, height - top - bottom

    def xy(t: int, v: float) -> tuple[str, str]:
        return f"{left + (t - t0) / span * w:.1f}", f"{top + h - v / vmax * h:.1f}"

    def gridline(frac: float) -> GridLine:  # a horizontal line at frac of the largest value, labelled
        y = top + h - frac * h
        return GridLine(f"{y:.1f}", f"{y + 4:.1f}", duration_ms(vmax * frac))

    lines = [
        ChartLine(flow, SERIES_COLORS[i % len(SERIES_COLORS)], tuple(xy(t, v) for t, v in pts), top + 14 + 14 * i)
        for i, (flow, pts) in enumerate(sorted(series.items()))
        if pts
    ]
    return Chart(
        width, height, left, top, w, h, (gridline(0.5), gridline(1.0)), utc(t0)[11:19], utc(t1)[11:19], tuple(lines)
    )


def data_quality(dq: dict | None, docs_url: str | None, now: int) -> DataQuality | None:
    if dq is None:
        return None
    return DataQuality(
        run_id=str(dq.get("run_id")),
        verdict=badge("PASSED", "ok") if dq.get("success") else badge("FAILED", "critical"),
        ago=ago(dq.get("ts_ms"), now),
        at=utc(dq.get("ts_ms")),
        checked_partitions=str(dq.get("checked_partitions", "—")),
        docs_url=docs_url,
        failed=tuple(str(x) for x in (dq.get("failed") or [])[:20]),
    )


def sync_row(dag_id: str, label: str, run: dict | None, now: int) -> SyncRow:
    if run is None:
        return SyncRow(label, dag_id, state=None, ago="", at="")
    state = run.get("state") or "unknown"
    return SyncRow(
        label,
        dag_id,
        state=badge(state, RUN_LEVELS.get(state, "unknown")),
        ago=ago(run.get("end_ms"), now),
        at=utc(run.get("end_ms")),
    )


PARITY_LEVELS = {"ready": "ok", "degraded": "warning", "not ready": "critical"}


def parity_row(r: dict, now: int) -> ParityRow:
    shown = [d for d in r.get("differences", ()) if d.get("severity") != "note"]
    return ParityRow(
        direction=f"{r['from']} -> {r['to']}",
        verdict=badge(r["verdict"], PARITY_LEVELS.get(r["verdict"], "unknown")),
        ago=ago(r.get("at_ms"), now),
        differences=tuple(f"{d['severity']}: {d['area']}: {d['what']}" for d in shown[:20]),
    )


def operation(op: dict, now: int) -> Operation:
    state = op.get("state")
    return Operation(
        dag_id=op["dag_id"],
        run_id=op["run_id"],
        state=badge(state or "unknown", RUN_LEVELS.get(state, "unknown")),
        ago=ago(op.get("end_ms"), now),
        summary=op.get("summary_text") or "(no summary)",
    )


def status_view(
    report: StatusReport,
    docs_url: str | None,
    recent_operations: list[dict],
    read_errors: dict[str, str],
    refresh_seconds: int = 30,
) -> StatusView:
    now = report.generated_ms
    return StatusView(
        refresh_seconds=refresh_seconds,
        banner=banner(report),
        alerts=report.alerts,
        clusters=tuple(cluster_card(c, report) for c in report.clusters),
        flows=tuple(flow_row(f, now) for f in report.flows),
        chart=latency_chart(report.latency_series),
        data_quality=data_quality(report.dq, docs_url, now),
        syncs=tuple(sync_row(dag_id, label, report.runs.get(dag_id), now) for dag_id, label in SYNC_DAGS.items()),
        parity=tuple(parity_row(r, now) for r in report.parity),
        last_event=str(report.last_event) if report.last_event else None,
        operations=tuple(operation(op, now) for op in recent_operations),
        read_errors=tuple(read_errors.items()),
        next_steps=report.next_steps,
    )


# -- rendering -------------------------------------------------------------------------------


def latency_svg(series: dict[str, list[tuple[int, float]]], width: int = 640, height: int = 180) -> str:
    """The latency chart alone: an inline SVG, or a sentence saying why there is none yet."""
    return TEMPLATES.get_template("latency_chart.html").render(chart=latency_chart(series, width, height))


def render(
    report: StatusReport,
    docs_url: str | None,
    recent_operations: list[dict],
    read_errors: dict[str, str],
    refresh_seconds: int = 30,
) -> str:
    """The whole page. ``docs_url``: where the Data Docs of ``report.dq`` are served (or None);
    ``recent_operations``: failover/failback runs, newest first
    (``dag_id, run_id, state, end_ms, summary_text``)."""
    view = status_view(report, docs_url, recent_operations, read_errors, refresh_seconds)
    return TEMPLATES.get_template("status.html").render(page=view, chart=view.chart)

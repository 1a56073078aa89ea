"""Render a :class:`~kafka_dr.core.status.StatusReport` as one self-contained HTML page.

Pure (no Airflow, no network): the page must work on an air-gapped Airflow, so there is no
JavaScript and nothing fetched from elsewhere; the latency chart is an inline SVG drawn here.
The order is the order of an on-call engineer's questions: is something wrong (banner,
alerts), which cluster is active, are the clusters up, are the flows keeping up, when did the
syncs and the data-quality proof last run, what did the last failover do.
"""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape

from kafka_dr.core.selection import SELECTS_NO_TOPICS
from kafka_dr.core.status import SYNC_DAGS, StatusReport

COLORS = {"ok": "#1b7f3b", "warning": "#b26a00", "critical": "#c62828", "unknown": "#616161"}
SERIES_COLORS = ["#1565c0", "#6a1b9a", "#00838f", "#ad1457", "#2e7d32", "#ef6c00"]


def utc(ms: int | None) -> str:
    if ms is None:
        return "—"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


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


def latency_svg(series: dict[str, list[tuple[int, float]]], width: int = 640, height: int = 180) -> str:
    """A small line chart of p99 replication latency per flow over time (inline SVG).

    One line per flow, a shared time axis, the y axis from 0 to the largest value seen (so
    a flat line near the bottom reads as "fine" without reading numbers)."""
    points = [p for s in series.values() for p in s]
    if not points:
        return '<p class="muted">No replication batches with latency yet: the chart appears after the first copied records.</p>'
    left, right, top, bottom = 56, 12, 12, 28
    t0, t1 = min(p[0] for p in points), max(p[0] for p in points)
    vmax = max(p[1] for p in points) or 1.0
    span = max(1, t1 - t0)
    w, h = width - left - right, height - top - bottom

    def xy(t: int, v: float) -> str:
        return f"{left + (t - t0) / span * w:.1f},{top + h - v / vmax * h:.1f}"

    parts = [f'<svg class="chart" role="img" aria-label="p99 replication latency per flow" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
             f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="#fafafa" stroke="#ccc"/>']
    for frac in (0.5, 1.0):
        y = top + h - frac * h
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + w}" y2="{y:.1f}" stroke="#e0e0e0"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{escape(duration_ms(vmax * frac))}</text>')
    parts.append(f'<text x="{left - 6}" y="{top + h + 4}" text-anchor="end" font-size="11">0</text>')
    parts.append(f'<text x="{left}" y="{height - 8}" font-size="11">{escape(utc(t0)[11:19])}</text>')
    parts.append(f'<text x="{left + w}" y="{height - 8}" text-anchor="end" font-size="11">{escape(utc(t1)[11:19])} UTC</text>')
    for i, (flow, pts) in enumerate(sorted(series.items())):
        if not pts:
            continue
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        if len(pts) == 1:
            x, y = xy(*pts[0]).split(",")
            parts.append(f'<circle cx="{x}" cy="{y}" r="3" fill="{color}"/>')
        else:
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{" ".join(xy(t, v) for t, v in pts)}"/>')
        parts.append(f'<text x="{left + 8}" y="{top + 14 + 14 * i}" font-size="12" fill="{color}">{escape(flow)}</text>')
    parts.append("</svg>")
    return "".join(parts)


STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;padding:16px 20px;color:#212121;background:#fff}
h1{font-size:20px;margin:0 0 12px} h2{font-size:16px;margin:22px 0 8px;border-bottom:1px solid #e0e0e0;padding-bottom:4px}
.banner{display:flex;gap:24px;align-items:center;padding:14px 18px;border-radius:8px;color:#fff;font-size:18px}
.banner .big{font-size:28px;font-weight:700} .banner .label{font-size:12px;text-transform:uppercase;opacity:.85}
.alerts{list-style:none;padding:0;margin:10px 0} .alerts li{padding:6px 10px;margin:4px 0;border-left:6px solid;background:#fff8e1}
.alerts li.critical{border-color:#c62828;background:#ffebee;font-weight:600} .alerts li.warning{border-color:#b26a00}
.cards{display:flex;flex-wrap:wrap;gap:12px} .card{border:2px solid #e0e0e0;border-radius:8px;padding:10px 14px;min-width:220px}
.card.up{border-color:#1b7f3b} .card.down{border-color:#c62828;background:#ffebee} .card .name{font-size:18px;font-weight:700}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:700;color:#fff;margin-left:6px}
table{border-collapse:collapse;font-size:14px} th,td{padding:5px 10px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#f5f5f5} td.num{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:#757575} pre{background:#f5f5f5;padding:8px;white-space:pre-wrap;font-size:12px;margin:4px 0}
"""


def _badge(text: str, level: str) -> str:
    return f'<span class="badge" style="background:{COLORS.get(level, COLORS["unknown"])}">{escape(text)}</span>'


def render(report: StatusReport, docs_url: str | None, recent_operations: list[dict], read_errors: dict[str, str],
           refresh_seconds: int = 30) -> str:
    """The whole page. ``docs_url``: where the Data Docs of ``report.dq`` are served (or None);
    ``recent_operations``: failover/failback runs, newest first
    (``dag_id, run_id, state, end_ms, summary_text``)."""
    now = report.generated_ms
    overall = report.overall
    e = escape
    out = [f'<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="{refresh_seconds}">',
           f"<title>kafka-dr status: {e(overall.upper())}</title><style>{STYLE}</style></head><body>",
           "<h1>kafka-dr — disaster-recovery status</h1>"]

    active = report.active_cluster or "unknown"
    note = {"recorded": "recorded by the last failover/failback", "config": "no failover recorded: first cluster in the config",
            "none": "no clusters configured"}[report.active_source]
    n_crit = sum(a.level == "critical" for a in report.alerts)
    n_warn = len(report.alerts) - n_crit
    out.append(f'<div class="banner" id="banner" data-overall="{overall}" style="background:{COLORS[overall]}">'
               f'<div><div class="label">Overall</div><div class="big" id="overall">{e(overall.upper())}</div></div>'
               f'<div><div class="label">Active cluster</div><div class="big" id="active-cluster">{e(active)}</div>'
               f'<div class="label">{e(note)}</div></div>'
               f'<div><div class="label">Alerts</div><div class="big" id="alert-count">{n_crit} critical · {n_warn} warning</div></div>'
               f'<div><div class="label">Failed clusters</div><div class="big">{e(", ".join(report.failed_clusters) or "none")}</div></div>'
               f'<div style="margin-left:auto;text-align:right"><div class="label">Checked</div><div>{e(utc(now))}</div>'
               f'<div class="label">refreshes every {refresh_seconds}s</div></div></div>')

    out.append('<ul class="alerts" id="alerts">')
    if not report.alerts:
        out.append('<li style="border-color:#1b7f3b;background:#e8f5e9">No alerts: every cluster answers, every flow is within its thresholds.</li>')
    for a in report.alerts:
        out.append(f'<li class="{a.level}">{e(a.level.upper())}: {e(a.text)}</li>')
    out.append("</ul>")

    out.append('<h2>Clusters</h2><div class="cards" id="clusters">')
    for c in report.clusters:
        badges = _badge("UP", "ok") if c.reachable else _badge("DOWN", "critical")
        if c.name == report.active_cluster:
            badges += _badge("ACTIVE", "ok" if c.reachable else "critical")
        if c.name in report.failed_clusters:
            badges += _badge("FAILED OVER", "warning")
        detail = f"cluster id {e(c.cluster_id or '—')}" if c.reachable else e(c.error or "no answer")
        if c.id_mismatch:
            detail += f" <b>(expected {e(c.expected_id or '')})</b>"
        out.append(f'<div class="card {"up" if c.reachable else "down"}" data-cluster="{e(c.name)}">'
                   f'<div class="name">{e(c.name)}{badges}</div><div class="muted">{e(c.bootstrap)}</div><div>{detail}</div></div>')
    out.append("</div>")

    out.append('<h2>Replication flows</h2><table id="flows"><tr><th>Flow</th><th>Direction</th><th>Heartbeat</th>'
               "<th>Latency (heartbeat age)</th><th>Lag (records)</th><th>p50 / p99 batch latency</th>"
               "<th>Last batch</th><th>Written (last batch)</th></tr>")
    for f in report.flows:
        if not f.enabled:
            state = _badge("DISABLED", "unknown")
        elif f.stopped:
            state = _badge("STOPPED", "warning")
        elif f.blocked:
            state = _badge(f.blocked.upper(), "critical")
        else:
            state = _badge(f.heartbeat_status.upper(), {"ok": "ok", "late": "warning", "missing": "warning"}.get(f.heartbeat_status, "unknown"))
        if f.enabled and f.selected_topics == 0:  # its heartbeats arrive, yet it copies no data
            state += f'<div class="selection">{_badge(SELECTS_NO_TOPICS.upper(), "warning")}</div>'
        hb_age = "—" if f.heartbeat_age_seconds is None else f"{f.heartbeat_age_seconds:.1f} s"
        lag = "—" if f.lag_records is None else f"{f.lag_records:,}"
        out.append(f'<tr data-flow="{e(f.name)}"><td><b>{e(f.name)}</b></td><td>{e(f.source)} → {e(f.target)}</td><td>{state}</td>'
                   f'<td class="num latency">{hb_age}<div class="muted">{e(ago(f.last_heartbeat_ms, now))}</div></td>'
                   f'<td class="num lag">{lag}</td><td class="num">{duration_ms(f.latency_p50_ms)} / {duration_ms(f.latency_p99_ms)}</td>'
                   f'<td>{e(ago(f.last_batch_ms, now))}</td><td class="num">{"—" if f.written_last_batch is None else f"{f.written_last_batch:,}"}</td></tr>')
    out.append("</table>")
    out.append('<h2>Replication latency (p99 per batch)</h2><div id="latency-chart">' + latency_svg(report.latency_series) + "</div>")

    out.append('<h2>Data quality</h2><div id="data-quality">')
    dq = report.dq
    if dq is None:
        out.append('<p class="muted">No data-quality run yet.</p>')
    else:
        verdict = _badge("PASSED", "ok") if dq.get("success") else _badge("FAILED", "critical")
        link = f' — <a href="{e(docs_url)}" target="_blank">open Data Docs</a>' if docs_url else ""
        failed = dq.get("failed") or []
        out.append(f"<p>Last run {e(str(dq.get('run_id')))} {verdict} {e(ago(dq.get('ts_ms'), now))} ({e(utc(dq.get('ts_ms')))}), "
                   f"{e(str(dq.get('checked_partitions', '—')))} partition(s) checked{link}</p>")
        if failed:
            out.append("<ul>" + "".join(f"<li>{e(str(x))}</li>" for x in failed[:20]) + "</ul>")
    out.append("</div>")

    out.append('<h2>Syncs (last Airflow run)</h2><table id="syncs"><tr><th>What</th><th>DAG</th><th>Last run</th><th>State</th></tr>')
    for dag_id, label in SYNC_DAGS.items():
        run = report.runs.get(dag_id)
        if run is None:
            out.append(f'<tr><td>{e(label)}</td><td>{e(dag_id)}</td><td class="muted">no run yet</td><td>—</td></tr>')
            continue
        st = run.get("state") or "unknown"
        out.append(f"<tr><td>{e(label)}</td><td>{e(dag_id)}</td><td>{e(ago(run.get('end_ms'), now))}<div class=\"muted\">{e(utc(run.get('end_ms')))}</div></td>"
                   f"<td>{_badge(st, {'success': 'ok', 'failed': 'critical', 'running': 'unknown'}.get(st, 'unknown'))}</td></tr>")
    out.append("</table>")

    out.append('<h2>Failover / failback runs</h2><div id="operations">')
    if report.last_event:
        out.append(f"<p>Last recorded event: <code>{e(str(report.last_event))}</code></p>")
    if not recent_operations:
        out.append('<p class="muted">No failover or failback run yet.</p>')
    for op in recent_operations:
        out.append(f"<div><b>{e(op['dag_id'])}</b> {e(op['run_id'])} "
                   f"{_badge(op.get('state') or 'unknown', {'success': 'ok', 'failed': 'critical'}.get(op.get('state'), 'unknown'))} "
                   f"{e(ago(op.get('end_ms'), now))}<pre>{e(op.get('summary_text') or '(no summary)')}</pre></div>")
    out.append("</div>")

    if read_errors:
        out.append('<h2>What could not be read</h2><ul id="read-errors">'
                   + "".join(f"<li>{e(k)}: {e(v)}</li>" for k, v in read_errors.items()) + "</ul>")
    out.append('<p class="muted">JSON: <a href="api/status">api/status</a></p></body></html>')
    return "".join(out)

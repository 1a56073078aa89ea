"""The DR status page: a FastAPI app that Airflow's api-server mounts at ``/dr-status``.

Registered by :mod:`kafka_dr.airflow.plugin` (with a navigation entry). It runs inside
the api-server, so it reads Airflow's metadata database directly for the last runs of the
sync DAGs and the failover/failback summaries, and the clusters (bounded, see
:mod:`kafka_dr.kafka.status_reads`) for health, state, heartbeats, metrics and data quality.

Only logged-in Airflow users see it: the page checks Airflow's own session token (the
``_token`` cookie the UI sets at login, or a bearer token) and sends anyone else to the login
page. Data Docs of the newest data-quality run are served under ``/dr-status/data-docs/``
(only files inside that run's docs folder).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response

from kafka_dr.core.status import NEXT_STEPS, OPERATION_DAGS, SYNC_DAGS

log = logging.getLogger(__name__)

URL_PREFIX = "/dr-status"


async def _logged_in(request: Request) -> bool:
    from airflow.api_fastapi.auth.managers.base_auth_manager import COOKIE_NAME_JWT_TOKEN
    from airflow.api_fastapi.core_api.security import resolve_user_from_token

    header = request.headers.get("authorization", "")
    token = header[7:] if header.lower().startswith("bearer ") else request.cookies.get(COOKIE_NAME_JWT_TOKEN)
    try:
        await resolve_user_from_token(token)
        return True
    except HTTPException:
        return False


def _login_redirect(request: Request) -> Response:
    from airflow.api_fastapi.app import get_auth_manager

    return RedirectResponse(get_auth_manager().get_url_login(next_url=str(request.url)), status_code=303)


def _ms(dt) -> int | None:
    return int(dt.timestamp() * 1000) if dt is not None else None


def last_runs(dag_ids) -> dict[str, dict | None]:
    """The newest run of each DAG from Airflow's metadata database."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    out: dict[str, dict | None] = {}
    with create_session() as session:
        for dag_id in dag_ids:
            newest = select(DagRun).where(DagRun.dag_id == dag_id).order_by(DagRun.run_after.desc()).limit(1)
            run = session.scalars(newest).first()
            out[dag_id] = (
                None
                if run is None
                else {"run_id": run.run_id, "state": str(run.state), "end_ms": _ms(run.end_date) or _ms(run.start_date)}
            )
    return out


def paused_dags(dag_ids) -> frozenset[str]:
    """Which of ``dag_ids`` are paused in Airflow (a DAG not parsed yet counts as paused)."""
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        active = session.scalars(
            select(DagModel.dag_id).where(DagModel.dag_id.in_(list(dag_ids)), DagModel.is_paused.is_(False))
        ).all()
    return frozenset(dag_ids) - frozenset(active)


def recent_operations(limit: int = 5) -> list[dict]:
    """The newest failover/failback runs with the text their ``summary`` task returned."""
    from airflow.models.dagrun import DagRun
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    out = []
    with create_session() as session:
        newest = select(DagRun).where(DagRun.dag_id.in_(OPERATION_DAGS)).order_by(DagRun.run_after.desc()).limit(limit)
        for run in session.scalars(newest).all():
            summary = session.scalars(
                select(XComModel).where(
                    XComModel.dag_id == run.dag_id,
                    XComModel.run_id == run.run_id,
                    XComModel.task_id == OPERATION_DAGS[run.dag_id],
                    XComModel.key == "return_value",
                )
            ).first()
            value = None if summary is None else XComModel.deserialize_value(summary)
            out.append(
                {
                    "dag_id": run.dag_id,
                    "run_id": run.run_id,
                    "state": str(run.state),
                    "end_ms": _ms(run.end_date) or _ms(run.start_date),
                    "summary_text": _summary_text(value),
                }
            )
    return out


def _summary_text(value) -> str | None:
    """The words of a ``summary`` task's return value: its own text, else formatted from its fields."""
    from kafka_dr.workflows.failover import format_summary

    if not isinstance(value, dict):
        return None
    return value.get("summary_text") or _safe_format(format_summary, value)


def _safe_format(fn, value: dict) -> str | None:
    try:
        return fn(value)
    except (KeyError, TypeError, AttributeError):
        return None


def docs_root(dq: dict | None) -> tuple[Path, str] | None:
    """(folder to serve, entry file) for the Data Docs of a data-quality record."""
    raw = (dq or {}).get("docs_path")
    if not raw:
        return None
    p = Path(str(raw).removeprefix("file://"))
    if p.is_dir():
        return p, "index.html"
    return p.parent, p.name


def docs_url(dq: dict | None) -> str | None:
    """Where the page links the Data Docs of a data-quality record (None: it has none)."""
    docs = docs_root(dq)
    return f"{URL_PREFIX}/data-docs/{docs[1]}" if docs else None


def docs_file(dq: dict | None, path: str) -> Path:
    """The file ``path`` names inside the Data Docs of a data-quality record; 404 for anything outside them."""
    docs = docs_root(dq)
    if docs is None:
        raise HTTPException(404, "no data-quality run with Data Docs yet")
    root = docs[0].resolve()
    target = (root / (path or docs[1])).resolve()
    if not target.is_relative_to(root) or not target.is_file():
        raise HTTPException(404, f"{path} is not part of the Data Docs")
    return target


def collect(read_timeout: float = 5.0) -> tuple:
    """Read everything and judge it: (report, recent operations, read errors)."""
    from kafka_dr.airflow.dag_config import dag_config
    from kafka_dr.airflow.secret_resolver import airflow_resolver
    from kafka_dr.core.status import build_status
    from kafka_dr.kafka.status_reads import read_status_inputs

    cfg = dag_config()
    inputs = read_status_inputs(cfg, airflow_resolver(), read_timeout=read_timeout)
    errors = dict(inputs["read_errors"])
    try:
        runs = last_runs(SYNC_DAGS)
        ops = recent_operations()
        paused = paused_dags(NEXT_STEPS)
    except Exception as e:  # the metadata DB being away must not hide the clusters' state
        errors["Airflow metadata database"] = f"{type(e).__name__}: {e}"
        runs, ops, paused = {}, [], frozenset()
    report = build_status(
        cfg,
        inputs["health"],
        inputs["state"],
        inputs["heartbeats"],
        inputs["metrics"],
        inputs["dq"],
        runs,
        int(time.time() * 1000),
        topics=inputs["topics"],
        parity=inputs["parity"],
        paused=paused,
    )
    return report, ops, errors


def create_app() -> FastAPI:
    from starlette.concurrency import run_in_threadpool

    from kafka_dr.airflow.status_html import render

    app = FastAPI(title="kafka-dr status", docs_url=None, redoc_url=None, openapi_url=None)
    latest_dq: dict = {}  # the Data Docs served are those of the newest record the page has read

    async def read() -> tuple:
        report, ops, errors = await run_in_threadpool(collect)
        latest_dq["record"] = report.dq
        return report, ops, errors

    @app.get("/", response_class=HTMLResponse)
    async def page(request: Request) -> Response:
        if not await _logged_in(request):
            return _login_redirect(request)
        report, ops, errors = await read()
        return HTMLResponse(render(report, docs_url(report.dq), ops, errors))

    @app.get("/api/status")
    async def status_json(request: Request) -> Response:
        if not await _logged_in(request):
            return JSONResponse({"detail": "Not authenticated"}, status_code=401)
        report, ops, errors = await read()
        return JSONResponse({**report.to_dict(), "recent_operations": ops, "read_errors": errors})

    @app.get("/data-docs/{path:path}")
    async def data_docs(path: str, request: Request) -> Response:
        if not await _logged_in(request):
            return _login_redirect(request)
        if "record" not in latest_dq:
            await read()
        return FileResponse(docs_file(latest_dq["record"], path))

    return app

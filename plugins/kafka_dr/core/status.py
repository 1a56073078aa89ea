"""The DR status an on-call engineer needs at a glance, assembled from what was read.

Pure: the adapters (:mod:`kafka_dr.kafka.status_reads`, the Airflow plugin) read the clusters
and Airflow's metadata and hand plain values here; this module decides what they mean —
which cluster is active, which flows are late or lagging, what is alarming — so the page and
its tests agree on one judgement. Every input may be missing (a cluster is down exactly when
the page is opened), and a missing input is reported, never guessed.

Inputs:

- ``health``: ``{cluster: ClusterHealth}``, one per configured cluster;
- ``state``: the newest :class:`~kafka_dr.core.dr_state.DrState` found (empty if none);
- ``heartbeats``: ``{flow: FlowLatency | None}`` (``None``: the target could not be read);
- ``metrics``: the rows the replication job publishes on ``<prefix>.metrics`` (one per
  partition per micro-batch: ``flow, topic, partition, read, written, lag, latency_p50_ms,
  latency_p99_ms, batch, at_ms``), oldest first;
- ``dq``: the newest data-quality record (``run_id, ts_ms, success, failed, checked_partitions,
  docs_path``) or ``None``;
- ``runs``: ``{dag_id: {"state", "end_ms", "run_id"} | None}`` for the periodic DAGs;
- ``topics``: ``{cluster: [topic names]}`` of the flows' sources that could be read; a flow
  whose selection matches none of its source's data topics is flagged
  (:mod:`kafka_dr.core.selection`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from kafka_dr.core.config import DrConfig
from kafka_dr.core.dr_state import DrState
from kafka_dr.core.heartbeat import FlowLatency
from kafka_dr.core.selection import empty_selection, selected_data_topics

#: The operator DAGs (triggered), each with the task whose XCom holds the run's summary.
OPERATION_DAGS = {"dr_failover": "summary", "dr_failback": "summary", "dr_drain": "drain"}

#: The periodic DAGs whose last run the page shows, with the words it uses for them.
SYNC_DAGS = {
    "dr_topic_config_sync": "Topic-config sync",
    "dr_acl_sync": "ACL sync",
    "dr_quota_sync": "Client-quota sync",
    "dr_parity": "Failover readiness (parity)",
    "dr_schema_mirror": "Schema mirror",
    "dr_offset_sync": "Consumer-offset sync",
    "dr_heartbeat": "Heartbeats",
    "dr_cluster_health": "Cluster health check",
}


@dataclass(frozen=True)
class ClusterHealth:
    name: str
    bootstrap: str
    reachable: bool
    cluster_id: str | None = None
    expected_id: str | None = None
    error: str | None = None

    @property
    def id_mismatch(self) -> bool:
        return bool(self.reachable and self.expected_id and self.cluster_id != self.expected_id)


@dataclass(frozen=True)
class FlowStatus:
    name: str
    source: str
    target: str
    enabled: bool
    stopped: bool  #: reads from a failed cluster (stopped until failback)
    heartbeat_status: str  #: "ok" | "late" | "missing" | "waiting" | "unknown" (target unreadable)
    heartbeat_age_seconds: float | None
    last_heartbeat_ms: int | None
    lag_records: int | None  #: summed over the partitions of the newest batch
    latency_p50_ms: float | None
    latency_p99_ms: float | None
    last_batch_ms: int | None
    written_last_batch: int | None
    blocked: str | None = None  #: "source down" | "target down": the flow cannot run now
    selected_topics: int | None = None  #: data topics the flow selects on its source (None: not read)


@dataclass(frozen=True)
class Alert:
    level: str  #: "critical" | "warning"
    text: str


@dataclass(frozen=True)
class StatusReport:
    generated_ms: int
    active_cluster: str | None
    active_source: str  #: "recorded" (a failover/failback wrote it) | "config" (first cluster) | "none"
    failed_clusters: tuple[str, ...]
    last_event: dict
    clusters: tuple[ClusterHealth, ...]
    flows: tuple[FlowStatus, ...]
    dq: dict | None
    runs: dict
    alerts: tuple[Alert, ...]
    latency_series: dict = field(default_factory=dict)  #: {flow: [(at_ms, p99_ms), ...]}
    parity: tuple[dict, ...] = ()  #: the recorded parity reports (kafka_dr.core.parity.build)
    #: what a new deployment does next: the paused DAGs whose findings the page lacks
    next_steps: tuple[str, ...] = ()

    @property
    def overall(self) -> str:
        if any(a.level == "critical" for a in self.alerts):
            return "critical"
        return "warning" if self.alerts else "ok"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["overall"] = self.overall
        return d


def latest_batch(rows: list[dict], flow: str) -> list[dict]:
    """The rows of ``flow``'s newest micro-batch (its partitions), judged by ``at_ms``."""
    mine = [r for r in rows if r.get("flow") == flow and isinstance(r.get("at_ms"), int)]
    if not mine:
        return []
    newest = max(mine, key=lambda r: (r["at_ms"], r.get("batch", -1)))
    return [r for r in mine if r.get("batch") == newest.get("batch") and abs(r["at_ms"] - newest["at_ms"]) < 60_000]


def latency_series(rows: list[dict], flow: str, limit: int = 120) -> list[tuple[int, float]]:
    """``(at_ms, worst p99 latency of the batch)`` per micro-batch of ``flow``, oldest first.

    Batches that copied nothing carry no latency and are left out (a quiet flow is not a
    fast one)."""
    by_batch: dict[int, list[dict]] = {}
    for r in rows:
        if r.get("flow") == flow and r.get("latency_p99_ms") is not None and isinstance(r.get("at_ms"), int):
            by_batch.setdefault(r.get("batch", -1), []).append(r)
    # a restarted job numbers its batches from 0 again: split a batch id by time as well
    groups: dict[tuple[int, int], list[dict]] = {}
    for batch, batch_rows in by_batch.items():
        for r in batch_rows:
            groups.setdefault((batch, r["at_ms"] // 60_000), []).append(r)
    points = sorted((max(r["at_ms"] for r in g), max(float(r["latency_p99_ms"]) for r in g)) for g in groups.values())
    return points[-limit:]


def _sum(values) -> int | None:
    found = [v for v in values if v is not None]
    return sum(found) if found else None


def _max(values) -> float | None:
    found = [v for v in values if v is not None]
    return max(found) if found else None


def build_status(
    cfg: DrConfig,
    health: dict[str, ClusterHealth],
    state: DrState,
    heartbeats: dict[str, FlowLatency | None],
    metrics: list[dict],
    dq: dict | None,
    runs: dict[str, dict | None],
    now_ms: int,
    topics: dict[str, list[str]] | None = None,
    parity: list[dict] | None = None,
    paused: frozenset[str] = frozenset(),
) -> StatusReport:
    """Judge everything read into one report; see the module doc for the inputs. ``paused``:
    the DAGs paused in Airflow; a finding that is missing only because its DAG is paused is a
    next step, not an alert."""
    alerts: list[Alert] = []
    th = cfg.thresholds

    clusters = tuple(
        health.get(n) or ClusterHealth(n, c.bootstrap_servers, False, error="not checked")
        for n, c in cfg.clusters.items()
    )
    for c in clusters:
        if not c.reachable:
            alerts.append(
                Alert("critical", f"cluster {c.name} ({c.bootstrap}) is unreachable: {c.error or 'no answer'}")
            )
        elif c.id_mismatch:
            alerts.append(
                Alert("critical", f"cluster {c.name} reports id {c.cluster_id}, config expects {c.expected_id}")
            )

    if state.active_cluster:
        active, source = state.active_cluster, "recorded"
    elif cfg.clusters:
        active, source = next(iter(cfg.clusters)), "config"
    else:
        active, source = None, "none"
    if active and active in health and not health[active].reachable:
        alerts.append(Alert("critical", f"the ACTIVE cluster {active} is unreachable: consider the dr_failover DAG"))

    flows = []
    for f in cfg.flows:
        stopped = state.flow_stopped(f.source)
        hb = heartbeats.get(f.name)
        batch = latest_batch(metrics, f.name)
        lag = _sum(r.get("lag") for r in batch)
        p99 = _max(r.get("latency_p99_ms") for r in batch)
        down = lambda name: name in health and not health[name].reachable  # noqa: E731
        blocked = "source down" if down(f.source) else "target down" if down(f.target) else None
        names = (topics or {}).get(f.source)
        fs = FlowStatus(
            blocked=blocked,
            name=f.name,
            source=f.source,
            target=f.target,
            enabled=f.enabled,
            stopped=stopped,
            heartbeat_status=hb.status if hb else "unknown",
            heartbeat_age_seconds=hb.age_seconds if hb else None,
            last_heartbeat_ms=hb.newest_emitted_ms if hb else None,
            lag_records=lag,
            latency_p50_ms=_max(r.get("latency_p50_ms") for r in batch),
            latency_p99_ms=p99,
            last_batch_ms=max((r["at_ms"] for r in batch), default=None),
            written_last_batch=_sum(r.get("written") for r in batch),
            selected_topics=None if names is None else len(selected_data_topics(cfg, f, names)),
        )
        flows.append(fs)
        if not f.enabled or stopped:
            continue  # a stopped flow is expected to fall behind; the failed cluster already alerts
        if hb is not None and hb.status == "late":
            alerts.append(
                Alert(
                    "warning",
                    f"flow {f.name}: newest heartbeat is {hb.age_seconds:.0f}s old "
                    f"(max {th.heartbeat_max_age_seconds:.0f}s)",
                )
            )
        elif hb is not None and hb.status == "missing" and HEARTBEAT_DAG not in paused:
            alerts.append(Alert("warning", f"flow {f.name}: no heartbeat from {f.source} has reached {f.target}"))
        if fs.selected_topics == 0:
            alerts.append(Alert("warning", str(empty_selection(cfg, f, names))))
        if hb is not None and hb.loops:
            alerts.append(
                Alert(
                    "critical",
                    f"flow {f.name}: {hb.loops} heartbeat(s) of {f.target} came back to it: a replication loop",
                )
            )
        if lag is not None and lag > th.replication_lag_max_records:
            alerts.append(Alert("warning", f"flow {f.name}: lag {lag} records (max {th.replication_lag_max_records})"))
        if p99 is not None and p99 > th.latency_p99_max_seconds * 1000:
            alerts.append(
                Alert(
                    "warning", f"flow {f.name}: p99 latency {p99 / 1000:.1f}s (max {th.latency_p99_max_seconds:.0f}s)"
                )
            )

    if dq is not None and not dq.get("success", False):
        failed = dq.get("failed") or []
        alerts.append(
            Alert(
                "critical",
                f"data-quality run {dq.get('run_id')} failed: "
                f"{len(failed)} check(s): {', '.join(map(str, failed[:3]))}",
            )
        )
    for r in parity or ():
        if r.get("verdict") == "not ready":
            blocking = sum(d.get("severity") == "not ready" for d in r.get("differences", ()))
            alerts.append(
                Alert(
                    "warning",
                    f"failover {r['from']} -> {r['to']}: {r['to']} is not ready for the applications "
                    f"({blocking} blocking difference(s), see Failover readiness)",
                )
            )
    for dag_id, run in runs.items():
        if run and run.get("state") == "failed":
            alerts.append(Alert("warning", f"last {SYNC_DAGS.get(dag_id, dag_id)} run ({dag_id}) failed"))

    alerts.sort(key=lambda a: a.level != "critical")
    return StatusReport(
        generated_ms=now_ms,
        active_cluster=active,
        active_source=source,
        failed_clusters=state.failed_clusters,
        last_event=dict(state.last_event),
        clusters=clusters,
        flows=tuple(flows),
        dq=dq,
        runs=dict(runs),
        alerts=tuple(alerts),
        latency_series={f.name: latency_series(metrics, f.name) for f in cfg.flows},
        parity=tuple(parity or ()),
        next_steps=next_steps(paused, heartbeats, parity, dq),
    )


#: the DAGs whose findings the page shows, and the step that brings each one
HEARTBEAT_DAG = "dr_heartbeat"
NEXT_STEPS = {
    HEARTBEAT_DAG: "Unpause dr_heartbeat: a heartbeat through every flow each minute proves replication "
    "end to end and measures its latency; until then the flows show no heartbeat.",
    "dr_parity": "Unpause dr_parity: it records whether each cluster is ready to take over another's "
    "applications (topics, configs, ACLs, groups), which dr_failover checks first.",
    "dr_data_quality": "Unpause dr_data_quality: it compares the clusters record by record (Spark and "
    "Great Expectations) and alerts on a difference.",
}


def next_steps(paused: frozenset[str], heartbeats: dict, parity: list[dict] | None, dq: dict | None) -> tuple[str, ...]:
    """The steps a deployment has not taken yet: each paused DAG whose finding is missing."""
    missing = {
        HEARTBEAT_DAG: not any(hb is not None and hb.status != "missing" for hb in heartbeats.values()),
        "dr_parity": not parity,
        "dr_data_quality": dq is None,
    }
    return tuple(step for dag_id, step in NEXT_STEPS.items() if dag_id in paused and missing[dag_id])

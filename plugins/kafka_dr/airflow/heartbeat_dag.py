"""``dr_heartbeat``: emit a heartbeat on every cluster, then judge every flow by the age of
the newest heartbeat of its source that reached its target (the end-to-end replication
latency). A flow older than ``thresholds.heartbeat_max_age_seconds``, with no heartbeat at all
though its source emitted its first longer ago than that, or with a heartbeat that came back
to its own cluster (a loop) fails the run and alerts. A flow whose source's first heartbeat is
younger than that is ``waiting`` (a new deployment's first checks): logged, not alerted.

The figures are returned as XCom and written to ``<prefix>.metrics`` on each target (key
``heartbeat:<flow>``), where the status page reads them. A flow that selects no data topic on
its source (its heartbeats still arrive, so it looks healthy) is warned of in the task log and
under the flow's ``warnings`` in the XCom; that fails nothing.
"""

from __future__ import annotations

import logging

import pendulum
from airflow.sdk import DAG, task

from kafka_dr.airflow.dag_config import kafka_dr_dag
from kafka_dr.airflow.notifier import failure_callbacks
from kafka_dr.core.config import DrConfig

log = logging.getLogger(__name__)


def measure_flows(cfg: DrConfig, resolve=None) -> dict[str, dict]:
    """Measure every enabled flow; raise naming each late, silent or looping flow."""
    import json

    from kafka_dr.kafka import clients
    from kafka_dr.kafka.heartbeats import measure
    from kafka_dr.kafka.selection import read_selections

    results, problems = {}, []
    for flow in cfg.flows:
        if not flow.enabled:
            continue
        try:
            lat = measure(cfg, flow, resolve)
        except Exception as e:  # noqa: BLE001 - one unreachable target must not hide the others
            problems.append(f"{flow.name}: cannot read heartbeats on {flow.target}: {e}")
            continue
        results[flow.name] = {**lat.to_dict(), "warnings": []}
        try:
            p = clients.producer(cfg.cluster(flow.target), resolve)
            p.produce(
                cfg.names.metrics_topic, key=f"heartbeat:{flow.name}".encode(), value=json.dumps(lat.to_dict()).encode()
            )
            p.flush(10)
        except Exception:  # noqa: BLE001 - recording is best effort; the judgement below is not
            pass
        if lat.status == "missing":
            problems.append(
                f"{flow.name} ({flow.source} -> {flow.target}): "
                f"no heartbeat from {flow.source} has reached {flow.target}"
            )
        elif lat.status == "waiting":
            log.info(
                "%s: no heartbeat from %s on %s yet; its first left %.0fs ago (threshold %.0fs)",
                flow.name,
                flow.source,
                flow.target,
                lat.age_seconds,
                cfg.thresholds.heartbeat_max_age_seconds,
            )
        elif lat.status == "late":
            problems.append(
                f"{flow.name} ({flow.source} -> {flow.target}): newest heartbeat is {lat.age_seconds:.0f}s old "
                f"(threshold {cfg.thresholds.heartbeat_max_age_seconds:.0f}s)"
            )
        if lat.loops:
            problems.append(
                f"{flow.name}: {lat.loops} heartbeat(s) of {flow.target} came back to it: a replication loop"
            )
    empty, unread = read_selections(cfg, resolve)
    for e in empty:
        log.warning("%s", e)
        if e.flow in results:
            results[e.flow]["warnings"].append(str(e))
    for cluster, why in unread.items():
        log.info("topic selections of the flows from %s not checked: %s", cluster, why)
    if problems:
        raise RuntimeError("replication heartbeats failed:\n  - " + "\n  - ".join(problems))
    return results


def build_heartbeat_dag(cfg: DrConfig) -> DAG:
    with kafka_dr_dag(
        "dr_heartbeat",
        "Heartbeats on every cluster; replication latency per flow",
        cfg.schedules.heartbeat,
        __doc__,
        tags=("monitoring",),
        default_args={"retries": 1, "retry_delay": pendulum.duration(seconds=10)},
    ) as dag:
        emits = []
        for name in cfg.clusters:

            @task(task_id=f"emit_{name}")
            def emit_one(cluster: str = name) -> int:
                from kafka_dr.airflow.secret_resolver import airflow_resolver
                from kafka_dr.kafka.heartbeats import emit

                return emit(cfg, cluster, airflow_resolver()).emitted_ms

            emits.append(emit_one())

        @task(task_id="measure_latency", trigger_rule="all_done", on_failure_callback=failure_callbacks(cfg.alerts))
        def measure_latency() -> dict:
            from kafka_dr.airflow.secret_resolver import airflow_resolver

            return measure_flows(cfg, airflow_resolver())

        emits >> measure_latency()
    return dag

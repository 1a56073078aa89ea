"""``dr_failback``: bring a recovered cluster back after a failover, then make it active again.
Triggered from the Airflow UI (a form), never scheduled.

Steps (each a task, each safe to re-run; see :mod:`kafka_dr.kafka.failback`):
check both clusters and the mode -> copy until caught up (``resync``: the normal flows both
ways; ``reseed``: the seeding pipeline into an empty cluster) -> gate (the clusters hold the
same records; a failure names every difference and stops here) -> move consumer groups back ->
restart the normal flows and record the active cluster -> summary (log, XCom, notification).
``dry_run`` (the default) changes nothing and reports what would happen.

The CLI twin is ``kafka-dr failback --recovered east --survivor west --mode resync [--dry-run]``.
"""

from __future__ import annotations

from airflow.sdk import DAG, Param, task

from kafka_dr.airflow.dag_config import kafka_dr_dag
from kafka_dr.airflow.notifier import failure_callbacks
from kafka_dr.core.config import DrConfig
from kafka_dr.core.failback import MODES, RESYNC


def failback_params(cfg: DrConfig) -> dict:
    names = list(cfg.clusters)
    return {
        "recovered_cluster": Param(names[0], type="string", enum=names, title="Recovered cluster",
                                   description="The cluster that failed and is back (resync) or rebuilt empty (reseed).",
                                   section="Clusters"),
        "surviving_cluster": Param(names[1] if len(names) > 1 else names[0], type="string", enum=names, title="Surviving cluster",
                                   description="The cluster that served during the outage.", section="Clusters"),
        "mode": Param(RESYNC, type="string", enum=list(MODES), title="Mode",
                      description="resync: the recovered cluster kept its data. reseed: it is new and empty (fail-forward).",
                      values_display={"resync": "resync: came back with its data", "reseed": "reseed: new, empty cluster"},
                      section="What to do"),
        "topics": Param(".*", type="string", title="Topics (regex)",
                        description="Narrows the topics copied back (full-match regular expression).", section="What to do"),
        "consumer_groups": Param(".*", type="string", title="Consumer groups (regex)",
                                 description="Which consumer groups move back (full-match regular expression).", section="What to do"),
        "dry_run": Param(True, type="boolean", title="Dry run", description="Report what would happen and change nothing.",
                         section="Safety"),
        "force": Param(False, type="boolean", title="Force",
                       description="Even if the recovered cluster is not recorded as failed, or (reseed) holds data.",
                       section="Safety"),
    }


def build_failback_dag(cfg: DrConfig) -> DAG:
    alerts = failure_callbacks(cfg.alerts)
    with kafka_dr_dag("dr_failback", "Fail back to a recovered cluster: resync or reseed (triggered, with a form)", None, __doc__,
                      tags=("failback",), params=failback_params(cfg), render_template_as_native_obj=True) as dag:

        def _args(context) -> dict:
            p = context["params"]
            return {"recovered": p["recovered_cluster"], "survivor": p["surviving_cluster"], "mode": p["mode"]}

        def _resolve():
            from kafka_dr.airflow.secret_resolver import airflow_resolver

            return airflow_resolver()

        @task(task_id="check_ready", retries=1, on_failure_callback=alerts)
        def check(**context) -> dict:
            from kafka_dr.kafka.failback import check_ready

            p = context["params"]
            return check_ready(cfg, **_args(context), force=bool(p["force"]), resolve=_resolve(), topics=p["topics"])

        @task(task_id="copy_until_caught_up", retries=2, on_failure_callback=alerts)
        def copy(**context) -> dict:
            from kafka_dr.kafka.failback import copy_until_caught_up

            p = context["params"]
            return copy_until_caught_up(cfg, **_args(context), dry_run=bool(p["dry_run"]), topics=p["topics"], resolve=_resolve())

        @task(task_id="data_quality_gate", retries=1, on_failure_callback=alerts)
        def gate_task(**context) -> dict:
            from kafka_dr.kafka.failback import gate

            p = context["params"]
            if p["dry_run"]:
                return {"skipped": "dry run"}
            return gate(cfg, **_args(context), topics=p["topics"], resolve=_resolve())

        @task(task_id="move_consumer_groups_back", retries=1, on_failure_callback=alerts)
        def groups(**context) -> list:
            from kafka_dr.kafka.failback import move_groups_back

            p = context["params"]
            return move_groups_back(cfg, **_args(context), groups=p["consumer_groups"], dry_run=bool(p["dry_run"]),
                                    topics=p["topics"], resolve=_resolve())

        @task(task_id="restart_flows", retries=1, on_failure_callback=alerts)
        def restart(**context) -> dict:
            from kafka_dr.kafka.failback import restart_flows

            p = context["params"]
            return restart_flows(cfg, **_args(context), dry_run=bool(p["dry_run"]), topics=p["topics"], resolve=_resolve())

        @task(task_id="summary", retries=1, on_failure_callback=alerts)
        def summarize(checked: dict, copied: dict, gated: dict, moved: list, restarted: dict, **context) -> dict:
            import logging

            from kafka_dr.kafka.failback import format_summary

            a = _args(context)
            dry = bool(context["params"]["dry_run"])
            summary = {**a, "dry_run": dry, "check": checked, "copy": copied, "gate": gated, "consumer_groups": moved,
                       "restart": restarted}
            text = format_summary(summary)
            logging.getLogger("kafka_dr.failback").info("%s", text)
            if cfg.alerts.webhook or cfg.alerts.email:
                from kafka_dr.airflow.notifier import send_email, send_webhook

                subject = f"[kafka-dr] failback {a['survivor']} -> {a['recovered']} ({a['mode']}){' (dry run)' if dry else ''}"
                if cfg.alerts.webhook:
                    send_webhook(cfg.alerts.webhook.url, {"source": "kafka-dr", "event": "failback", "summary": summary})
                if cfg.alerts.email:
                    send_email(cfg.alerts, subject, text)
            return summary

        c, cp, gt, g, r = check(), copy(), gate_task(), groups(), restart()
        c >> cp >> gt >> g >> r
        summarize(c, cp, gt, g, r)
    return dag

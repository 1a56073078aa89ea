"""``dr_failback``: bring a recovered cluster back after a failover, then make it active again.
Triggered from the Airflow UI (a form), never scheduled.

Steps (each a task, each safe to re-run; see :mod:`kafka_dr.workflows.failback`):
check both clusters and the mode -> copy until caught up (``resync``: the normal flows both
ways; ``reseed``: the seeding pipeline into an empty cluster) -> gate (the clusters hold the
same records; a failure names every difference and stops here) -> move consumer groups back ->
restart the normal flows and record the active cluster -> start the continuous flows' DAGs
now (their supervisors would at their next tick) -> summary (log, XCom, notification).
``dry_run`` (the default) changes nothing and reports what would happen.

The CLI twin is ``kafka-dr failback --recovered east --survivor west --mode resync [--dry-run]``.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import DAG, Param, task

from kafka_dr.airflow.dag_config import LONG_TASK, kafka_dr_dag, replication_dag_id
from kafka_dr.airflow.notifier import failure_callbacks
from kafka_dr.airflow.params import SECTION_SAFETY, cluster_param, dry_run_param, force_param, groups_param
from kafka_dr.airflow.refusals import final_on_refusal
from kafka_dr.core.config import DrConfig, FlowMode
from kafka_dr.core.failback import MODES, RESYNC


def failback_params(cfg: DrConfig) -> dict:
    """The trigger form: which cluster is back, which served, how to copy back, dry run."""
    return {
        "recovered_cluster": cluster_param(
            cfg,
            0,
            "Recovered cluster",
            "The cluster that failed and is back (resync) or was "
            "rebuilt empty (reseed). It becomes the active cluster again.",
        ),
        "surviving_cluster": cluster_param(cfg, 1, "Surviving cluster", "The cluster that served during the outage."),
        "mode": Param(
            RESYNC,
            type="string",
            enum=list(MODES),
            title="Mode",
            description="resync: the recovered cluster kept its data. reseed: it is new and empty (fail-forward).",
            values_display={"resync": "resync: it came back with its data", "reseed": "reseed: it is new and empty"},
            section="What to copy",
        ),
        "topics": Param(
            ".*",
            type="string",
            minLength=1,
            format="regex",
            title="Topics (regular expression)",
            description="Narrows the topics copied back, matched against the whole name; .* copies every "
            "topic of the flows between the two.",
            section="What to copy",
        ),
        "consumer_groups": groups_param(
            "Which consumer groups move back: a regular expression matched against the whole "
            "group id; .* moves every group."
        ),
        "data_quality": Param(
            True,
            type="boolean",
            title="Data-quality comparison in the gate",
            description="On: the gate also compares everything the two clusters hold with Spark + GX (minutes on "
            "large topics). Off: only the record comparison; the next dr_data_quality run judges the copies.",
            section=SECTION_SAFETY,
        ),
        "dry_run": dry_run_param("failback"),
        "force": force_param(
            "Even if the recovered cluster is not recorded as failed, or (reseed) already holds data."
        ),
    }


def build_failback_dag(cfg: DrConfig) -> DAG:
    from kafka_dr.airflow.dr_run_callbacks import RecordFailedRun, record_success

    alerts = [*failure_callbacks(cfg.alerts), RecordFailedRun(cfg, "failback")]
    with kafka_dr_dag(
        "dr_failback",
        "Fail back to a recovered cluster: resync or reseed (triggered, with a form)",
        None,
        __doc__,
        tags=("failback",),
        params=failback_params(cfg),
        render_template_as_native_obj=True,
        default_args={"execution_timeout": LONG_TASK},
    ) as dag:

        def _args(context) -> dict:
            p = context["params"]
            return {"recovered": p["recovered_cluster"], "survivor": p["surviving_cluster"], "mode": p["mode"]}

        def _run(context):
            from kafka_dr.airflow.secret_resolver import airflow_resolver
            from kafka_dr.workflows.failback_flows import FailbackRun

            p = context["params"]
            return FailbackRun(
                cfg,
                **_args(context),
                topics=p["topics"],
                groups=p["consumer_groups"],
                dry_run=bool(p["dry_run"]),
                force=bool(p["force"]),
                data_quality=bool(p.get("data_quality", True)),
                resolve=airflow_resolver(),
            )

        @task(task_id="check_ready", retries=1, on_failure_callback=alerts)
        def check(**context) -> dict:
            from kafka_dr.workflows.failback import check_ready

            with final_on_refusal():
                return check_ready(_run(context))

        # the copy is as long as the backlog (a re-seed copies whole topics); a cut copy resumes
        @task(
            task_id="copy_until_caught_up", retries=2, execution_timeout=timedelta(hours=12), on_failure_callback=alerts
        )
        def copy(**context) -> dict:
            from kafka_dr.workflows.failback_copy import copy_until_caught_up

            return copy_until_caught_up(_run(context))

        @task(task_id="data_quality_gate", retries=1, execution_timeout=timedelta(hours=1), on_failure_callback=alerts)
        def gate_task(**context) -> dict:
            from kafka_dr.workflows.failback_gate import gate

            if context["params"]["dry_run"]:
                return {"skipped": "dry run"}
            return gate(_run(context))

        @task(task_id="move_consumer_groups_back", retries=1, on_failure_callback=alerts)
        def groups(**context) -> list:
            from kafka_dr.workflows.failback_handover import move_groups_back

            return move_groups_back(_run(context))

        @task(task_id="restart_flows", retries=1, on_failure_callback=alerts)
        def restart(**context) -> dict:
            from kafka_dr.workflows.failback import restart_flows

            return restart_flows(_run(context))

        @task(task_id="flows_to_start")
        def to_start(restarted: dict, **context) -> list[str]:
            """The DAGs of the restarted continuous flows: the drain that follows waits on them."""
            if context["params"]["dry_run"]:
                return []
            names = set(restarted["flows"])
            return [
                replication_dag_id(f.name)
                for f in cfg.flows
                if f.name in names and f.enabled and f.mode is FlowMode.CONTINUOUS
            ]

        @task(task_id="summary", retries=1, on_failure_callback=alerts)
        def summarize(checked: dict, copied: dict, gated: dict, moved: list, restarted: dict, **context) -> dict:
            from kafka_dr.workflows.failback import format_summary

            a = _args(context)
            dry = bool(context["params"]["dry_run"])
            summary = {
                **a,
                "dry_run": dry,
                "check": checked,
                "copy": copied,
                "gate": gated,
                "consumer_groups": moved,
                "restart": restarted,
            }
            from kafka_dr.airflow.notifier import announce

            subject = (
                f"[kafka-dr] failback {a['survivor']} -> {a['recovered']} ({a['mode']}){' (dry run)' if dry else ''}"
            )
            summary = announce(cfg.alerts, "failback", subject, format_summary(summary), summary)
            record_success(cfg, "failback", summary, context)
            return summary

        c, cp, gt, g, r = check(), copy(), gate_task(), groups(), restart()
        c >> cp >> gt >> g >> r
        # a run of each flow's DAG now (queued behind a run still active): the flows copy again
        # within seconds of the failback, not at their supervisor's next tick
        TriggerDagRunOperator.partial(task_id="start_flows", retries=1, on_failure_callback=alerts).expand(
            trigger_dag_id=to_start(r)
        )
        summarize(c, cp, gt, g, r)
    return dag


def build_drain_dag(cfg: DrConfig) -> DAG:
    """``dr_drain``: the failback's last step, triggered once the producers on the survivor are
    stopped; green means every record the survivor held is on the recovered cluster, so the
    producers may start there (:mod:`kafka_dr.workflows.drain`)."""
    alerts = failure_callbacks(cfg.alerts)
    params = {
        "recovered_cluster": cluster_param(cfg, 0, "Recovered cluster", "The cluster the producers move back to."),
        "surviving_cluster": cluster_param(
            cfg, 1, "Surviving cluster", "The cluster whose producers you stopped; its records are copied over."
        ),
        "timeout_seconds": Param(
            600,
            type="integer",
            minimum=1,
            maximum=3000,
            title="Timeout (seconds)",
            description="How long to wait for the survivor's records to arrive.",
        ),
    }
    with kafka_dr_dag(
        "dr_drain",
        "After a failback, with the survivor's producers stopped: wait until all it holds is on the recovered cluster",
        None,
        build_drain_dag.__doc__,
        tags=("failback",),
        params=params,
        render_template_as_native_obj=True,
        default_args={"execution_timeout": timedelta(hours=1)},
    ) as dag:

        @task(task_id="drain", retries=1, on_failure_callback=alerts)
        def drain_task(**context) -> dict:
            from kafka_dr.airflow.notifier import announce
            from kafka_dr.airflow.secret_resolver import airflow_resolver
            from kafka_dr.workflows.drain import drain, format_summary
            from kafka_dr.workflows.failback_flows import FailbackRun

            p = context["params"]
            run = FailbackRun(
                cfg, p["recovered_cluster"], p["surviving_cluster"], "resync", dry_run=False, resolve=airflow_resolver()
            )
            summary = drain(run, float(p["timeout_seconds"]))
            subject = f"[kafka-dr] drained {run.survivor} -> {run.recovered}"
            return announce(cfg.alerts, "drain", subject, format_summary(summary), summary)

        drain_task()
    return dag

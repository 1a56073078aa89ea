"""``dr_failover``: move consumers and the product's "active cluster" from a failed cluster to
a survivor. Triggered from the Airflow UI (a form), never scheduled.

Steps (each a task, each safe to re-run; see :mod:`kafka_dr.workflows.failover`):
confirm the failed cluster is down (or ``force``) -> parity report of the survivor (``not
ready`` is refused unless ``force``) -> stop the flows that read from it ->
translate and commit the consumer groups' offsets on the survivor -> recovery-point report ->
record the survivor as active cluster and schema-registry primary -> summary (log, XCom,
notification). ``dry_run`` (the default) changes nothing and reports what would happen.

The CLI twin is ``kafka-dr failover --from east --to west [--dry-run]``.
"""

from __future__ import annotations

from airflow.sdk import DAG, task

from kafka_dr.airflow.dag_config import LONG_TASK, kafka_dr_dag
from kafka_dr.airflow.notifier import failure_callbacks
from kafka_dr.airflow.params import cluster_param, dry_run_param, force_param, groups_param
from kafka_dr.airflow.refusals import final_on_refusal
from kafka_dr.core.config import DrConfig


def failover_params(cfg: DrConfig) -> dict:
    """The trigger form: which cluster failed, where consumers go, which groups, dry run."""
    return {
        "failed_cluster": cluster_param(
            cfg,
            0,
            "Failed cluster",
            "The cluster that is down: its consumers move away from it and the flows reading from it stop.",
        ),
        "surviving_cluster": cluster_param(
            cfg,
            1,
            "Surviving cluster",
            "Where consumers resume; it becomes the active cluster and the schema-registry primary.",
        ),
        "consumer_groups": groups_param(),
        "dry_run": dry_run_param("failover"),
        "force": force_param(
            "Fail over even though the failed cluster still answers (stop its producers first!), "
            "or the parity report says the survivor is not ready for the applications."
        ),
    }


def build_failover_dag(cfg: DrConfig) -> DAG:
    from kafka_dr.airflow.dr_run_callbacks import RecordFailedRun, record_success

    alerts = [*failure_callbacks(cfg.alerts), RecordFailedRun(cfg, "failover")]
    with kafka_dr_dag(
        "dr_failover",
        "Fail over from a failed cluster to a survivor (triggered, with a form)",
        None,
        __doc__,
        tags=("failover",),
        params=failover_params(cfg),
        render_template_as_native_obj=True,
        # a step may move every consumer group; any step that fails for good is recorded
        default_args={"execution_timeout": LONG_TASK, "on_failure_callback": [RecordFailedRun(cfg, "failover")]},
    ) as dag:

        def _args(context) -> tuple[str, str, bool]:
            p = context["params"]
            return p["failed_cluster"], p["surviving_cluster"], bool(p["dry_run"])

        def _run(context, confirmed: dict | None = None):
            """The run's inputs; ``confirmed``: the first step's finding, which the later steps
            take instead of probing the failed cluster again."""
            from kafka_dr.airflow.secret_resolver import airflow_resolver
            from kafka_dr.workflows.failover import FailoverRun

            p = context["params"]
            failed, survivor, dry = _args(context)
            return FailoverRun(
                cfg,
                failed,
                survivor,
                groups=p["consumer_groups"],
                dry_run=dry,
                force=bool(p["force"]),
                resolve=airflow_resolver(),
                failed_answers=(confirmed or {}).get("failed_answers"),
            )

        @task(task_id="confirm_failed_cluster_down", retries=1)
        def confirm(**context) -> dict:
            from kafka_dr.workflows.failover import confirm_down

            with final_on_refusal():
                return confirm_down(_run(context))

        @task(task_id="check_parity", retries=1)
        def parity(**context) -> dict:
            from kafka_dr.workflows.failover import check_parity

            with final_on_refusal():
                return check_parity(_run(context))

        @task(task_id="stop_flows_from_failed", retries=1)
        def stop(**context) -> dict:
            from kafka_dr.workflows.failover import stop_flows

            return stop_flows(_run(context))

        @task(task_id="move_consumer_groups", retries=1)
        def groups(confirmed: dict, **context) -> list:
            from kafka_dr.workflows.failover import move_consumer_groups

            return move_consumer_groups(_run(context, confirmed))

        @task(task_id="rpo_report", retries=1)
        def rpo(confirmed: dict, **context) -> dict:
            from kafka_dr.workflows.failover import rpo_report

            return rpo_report(_run(context, confirmed))

        @task(task_id="record_active_cluster", retries=1)
        def record(rpo_result: dict, **context) -> dict:
            from kafka_dr.workflows.failover import record_active

            missing = sum(f["missing_records_at_least"] for f in rpo_result["flows"].values())
            return record_active(_run(context), {"missing_records_at_least": missing})

        @task(task_id="summary", retries=1, on_failure_callback=alerts)
        def summarize(
            confirmed: dict, ready: dict, stopped: dict, moved: list, rpo_result: dict, recorded: dict, **context
        ) -> dict:
            from kafka_dr.workflows.failover import format_summary

            failed, survivor, dry = _args(context)
            summary = {
                "failed": failed,
                "survivor": survivor,
                "dry_run": dry,
                "confirm_down": confirmed,
                "parity": ready,
                "stop_flows": stopped,
                "consumer_groups": moved,
                "rpo": rpo_result,
                "record_active": recorded,
                "missing_records_at_least": sum(f["missing_records_at_least"] for f in rpo_result["flows"].values()),
            }
            from kafka_dr.airflow.notifier import announce
            from kafka_dr.workflows.failover import would_refuse

            summary["would_refuse"] = would_refuse(summary)

            subject = f"[kafka-dr] failover {failed} -> {survivor}{' (dry run)' if dry else ''}"
            summary = announce(cfg.alerts, "failover", subject, format_summary(summary), summary)
            record_success(cfg, "failover", summary, context)
            return summary

        c = confirm()
        p = parity()
        s = stop()
        g = groups(c)
        r = rpo(c)
        a = record(r)
        # both checks change nothing, so they run side by side and the flows stop once both
        # passed; the RPO report and the consumer move both need the flows stopped, not each other
        [c, p] >> s >> [g, r]
        summarize(c, p, s, g, r, a)
    return dag

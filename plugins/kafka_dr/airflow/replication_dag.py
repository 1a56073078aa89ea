"""``dr_replicate_<flow>``: one DAG per flow, running the Spark replication job.

- ``incremental`` flows run on the flow's ``schedule``: copy what is there, exit.
- ``continuous`` flows are *supervised*: the DAG runs every
  ``schedules.replication_supervisor`` with ``max_active_runs=1``, and each run keeps the
  streaming job alive for ``max_duration_seconds`` (default one hour). While the job lives,
  no other run starts; when it dies or ends, the next scheduled run starts it again, and it
  resumes from the progress committed in Kafka.

A ``preflight`` task first checks the topology's rules (:mod:`kafka_dr.core.preflight`); a
violation stops the run before Spark starts. The job runs through ``SparkSubmitOperator``
(the Spark connection ``spark.connection``: ``local[*]`` by default, a cluster master by
config). Secrets referenced as ``${airflow:...}`` are resolved at execute time and passed
to spark-submit as environment variables (never as arguments, never in rendered template
fields).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from datetime import timedelta

import pendulum
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.common.compat.sdk import AirflowException
from airflow.sdk import DAG, task

from kafka_dr.airflow.dag_config import LONG_TASK, kafka_dr_dag, replication_dag_id
from kafka_dr.airflow.notifier import failure_callbacks
from kafka_dr.core.config import DrConfig, FlowConfig, FlowMode
from kafka_dr.shipped import spark_job
from kafka_dr.spark.class_archive import with_class_archive
from kafka_dr.spark.driver_options import driver_java_options, spark_submit_env
from kafka_dr.spark.executor_env import executor_env_conf

APPLICATION = str(spark_job("replicate.py"))
DEFAULT_CONTINUOUS_SECONDS = 3600
#: An incremental run copies what is there and exits: a backlog of millions takes a minute or two.
INCREMENTAL_TIMEOUT = timedelta(hours=1)
#: A driver killed after running this long was copying: the task starts it again at once
#: rather than after the retry delay. One killed sooner (a crash loop) is the next try's.
RESUBMIT_AFTER_SECONDS = 60.0
MAX_RESUBMITS = 3
log = logging.getLogger(__name__)


class DriverKilled(AirflowException):
    """spark-submit ended by a signal: the job's driver was killed, alone or with its task (a
    scheduler lost with its executor's tasks). The task starts a driver that had been copying
    again at once (:func:`submit_until_done`); otherwise the next try, or the DAG's next run,
    does, from the committed progress. Not an alert of its own: a flow that stays down is the
    heartbeats' alarm."""


def signal_of(error: BaseException) -> int | None:
    """The signal that ended spark-submit, from the hook's "Error code is: N." (a negative N,
    or a shell's 128 + N); None for an exit of the job's own (it gave up, or refused)."""
    found = re.search(r"Error code is: (-?\d+)", str(error))
    code = int(found.group(1)) if found else 0
    return -code if code < 0 else (code - 128 if code > 128 else None)


class ReplicateFlowOperator(SparkSubmitOperator):
    """spark-submit of ``spark_jobs/replicate.py`` for one flow, with its secrets in the env."""

    def __init__(self, *, config_path: str, flow: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.config_path = config_path
        self.flow = flow

    def execute(self, context):
        from kafka_dr.airflow.secret_resolver import airflow_resolver
        from kafka_dr.core.config_load import load_config
        from kafka_dr.core.secret_refs import config_refs, ref_env_name

        cfg = load_config(self.config_path)
        resolve = airflow_resolver()
        # every attempt, retries included: a retry of a run that began before a failover
        # must not start the flow again (a failback copies between the two itself)
        flow = {f.name: f for f in cfg.flows}[self.flow]
        skip_if_failed_over(cfg, flow, resolve)
        if flow.mode is FlowMode.INCREMENTAL and nothing_new(cfg, flow, resolve):
            return None
        secrets = {}
        for cluster in cfg.clusters.values():
            for ref in config_refs(cluster.client):
                if ref.source == "airflow":
                    secrets[ref_env_name(ref)] = resolve(ref)
        self.env_vars = {**(self.env_vars or {}), **secrets}
        self.killed_by_airflow = False
        return submit_until_done(
            lambda: super(ReplicateFlowOperator, self).execute(context),
            lambda: skip_if_failed_over(cfg, flow, resolve),
            lambda: self.killed_by_airflow,
            self.flow,
        )

    def on_kill(self) -> None:
        # Airflow stops the task (SIGTERM, marked failed): the driver it kills stays down
        self.killed_by_airflow = True
        super().on_kill()


def submit_until_done(
    submit: Callable[[], object],
    may_run: Callable[[], None],
    killed_by_airflow: Callable[[], bool],
    flow: str,
    clock: Callable[[], float] = time.monotonic,
):
    """Run ``submit`` (spark-submit); when a signal ends a driver that had run for
    ``RESUBMIT_AFTER_SECONDS``, check ``may_run`` (raises to skip) and submit again, up to
    ``MAX_RESUBMITS`` times. Any other end of spark-submit is the task's: a killed driver raises
    :class:`DriverKilled`, the job's own failure its error."""
    resubmits = 0
    while True:
        started = clock()
        try:
            return submit()
        except AirflowException as e:
            if (signal := signal_of(e)) is None:
                raise
            killed = DriverKilled(f"flow {flow}: the job's driver was killed (signal {signal})")
            ran = clock() - started
            if killed_by_airflow() or ran < RESUBMIT_AFTER_SECONDS or resubmits >= MAX_RESUBMITS:
                raise killed from e
        resubmits += 1
        log.warning("%s after %.0fs of copying; starting it again (%d/%d)", killed, ran, resubmits, MAX_RESUBMITS)
        may_run()


def nothing_new(cfg: DrConfig, flow: FlowConfig, resolve) -> bool:
    """True (logged) when an incremental flow has nothing to copy: no spark-submit then, so a
    scheduled run that finds nothing costs a second (:mod:`kafka_dr.kafka.flow_start`)."""
    from kafka_dr.kafka.flow_start import nothing_to_copy

    partitions = nothing_to_copy(cfg, flow, resolve)
    if partitions is not None:
        log.info("flow %s: nothing new in its %d partition(s): no Spark job submitted", flow.name, partitions)
    return partitions is not None


def skip_if_failed_over(cfg: DrConfig, flow: FlowConfig, resolve) -> None:
    """Skip the task while the flow's source or target is failed over (until ``dr_failback``)."""
    from airflow.providers.common.compat.sdk import AirflowSkipException

    from kafka_dr.kafka.state_store import read_state

    state = read_state(cfg, resolve)
    if (failed := state.stopping(flow.source, flow.target)) is not None:
        raise AirflowSkipException(
            f"{failed} is failed over (state version {state.version}); flow {flow.name} stays stopped until failback"
        )


def build_replication_dag(cfg: DrConfig, flow: FlowConfig, config_path: str) -> DAG:
    continuous = flow.mode is FlowMode.CONTINUOUS
    schedule = cfg.schedules.replication_supervisor if continuous else flow.schedule
    args = ["--config", config_path, "--flow", flow.name, "--mode", flow.mode.value]
    timeout = INCREMENTAL_TIMEOUT
    if continuous:
        duration = flow.max_duration_seconds or DEFAULT_CONTINUOUS_SECONDS
        args += ["--max-duration", str(duration)]
        # the job stops itself at its max duration; the margin lets it finish its last batch
        timeout = timedelta(seconds=duration) + LONG_TASK
    with kafka_dr_dag(
        replication_dag_id(flow.name),
        f"Replicate {flow.source} -> {flow.target} ({flow.loop_policy.value}, {flow.mode.value})",
        schedule if flow.enabled else None,
        __doc__,
        tags=("replication", f"source:{flow.source}", f"target:{flow.target}"),
        is_paused_upon_creation=not flow.enabled,
    ) as dag:

        @task(task_id="preflight")
        def preflight() -> dict:
            """Skip while the flow's source or target is failed over (until ``dr_failback``); else the
            topology's pre-flight rules must hold before the flow starts."""
            from kafka_dr.airflow.preflight_dag import preflight_or_fail
            from kafka_dr.airflow.secret_resolver import airflow_resolver

            resolve = airflow_resolver()
            skip_if_failed_over(cfg, flow, resolve)
            return preflight_or_fail(cfg, resolve)

        preflight() >> ReplicateFlowOperator(
            task_id="replicate",
            config_path=config_path,
            flow=flow.name,
            application=APPLICATION,
            application_args=args,
            conn_id=cfg.spark.connection,
            name=f"kafka-dr-{flow.name}",
            # the driver's JVM options in local mode (kafka_dr.spark.driver_options): the
            # connection is made from spark.master (`kafka-dr airflow env`), so that decides
            conf=with_class_archive(
                {
                    "spark.ui.showConsoleProgress": "false",
                    **driver_java_options(cfg.spark.master, cfg.spark.conf),
                    **dict(cfg.spark.conf),
                    **executor_env_conf(cfg.spark),
                }
            ),
            env_vars=spark_submit_env(),
            # the job gave up (a cluster stays unreachable, a refusal); not a killed driver
            on_failure_callback=failure_callbacks(cfg.alerts, quiet=(DriverKilled,)),
            # the first retry soon (a driver killed with its task by a scheduler's restart is
            # copying nothing meanwhile): 5-10 s, as Airflow spreads each delay up to twice its
            # base; later ones slower (a crash loop)
            retries=3,
            retry_delay=pendulum.duration(seconds=5),
            retry_exponential_backoff=doubling_backoff(),
            max_retry_delay=pendulum.duration(seconds=120),
            execution_timeout=timeout,
        )
    return dag


def doubling_backoff() -> float | bool:
    """Retry delays that double: Airflow 3.3 takes the multiplier (2.0), 3.1 a bool (True:
    its fixed doubling); each refuses the other's type."""
    from airflow.sdk.bases.operator import BASEOPERATOR_ARGS_EXPECTED_TYPES

    expected = BASEOPERATOR_ARGS_EXPECTED_TYPES.get("retry_exponential_backoff", bool)
    return 2.0 if float in (expected if isinstance(expected, tuple) else (expected,)) else True


def build_replication_dags(cfg: DrConfig, config_path: str) -> list[DAG]:
    return [build_replication_dag(cfg, f, config_path) for f in cfg.flows]

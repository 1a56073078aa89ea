"""``kafka-dr replicate`` and ``kafka-dr dq``: the Spark jobs, run here on local Spark; and
``kafka-dr pack-executor-env``: the archive that runs them on executors with nothing installed.

The jobs take the same arguments as their spark-submit entries (``spark_jobs/replicate.py``,
``spark_jobs/data_quality.py``). The console shows the product's lines; Spark's output goes
to a log file (see :mod:`kafka_dr.cli.console`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path


def add_parsers(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from kafka_dr.dq.cli import add_arguments as dq_arguments
    from kafka_dr.spark.job import add_arguments as job_arguments

    rep = sub.add_parser(
        "replicate",
        parents=[common],
        help="run one flow's replication job here (local Spark); spark-submit spark_jobs/replicate.py for a cluster",
        description="Run one flow's replication job on local Spark (the same job spark-submit runs).",
    )
    job_arguments(rep)
    rep.set_defaults(handler=replicate)
    dq = sub.add_parser(
        "dq",
        parents=[common],
        help="compare the clusters and validate the data-quality expectations (local Spark)",
        description="Compare the clusters per topic-partition and validate the expectations.",
    )
    dq_arguments(dq)
    dq.set_defaults(handler=data_quality)
    pack = sub.add_parser(
        "pack-executor-env",
        parents=[common],
        help="pack kafka-dr and its clients for Spark executors with nothing installed (spark.executor_env)",
        description="Pack kafka-dr and the distributions its Spark executors import, from this Python, into "
        "one archive for the config's spark.executor_env (docs/install.md).",
    )
    pack.add_argument(
        "--out",
        type=Path,
        default=None,
        help="the archive to write (default: kafka-dr-executor-env-<version>-py<XY>.tar.gz here)",
    )
    pack.set_defaults(handler=pack_executor_env)


def pack_executor_env(a: argparse.Namespace) -> int:
    from kafka_dr.spark.executor_env import default_archive_name, default_python, pack

    packed = pack(a.out or Path(default_archive_name()))
    print(f"wrote {packed.path} ({packed.bytes / 1e6:.1f} MB, {packed.files} files): {', '.join(packed.distributions)}")
    print("in the config:")
    print("  spark:")
    print(
        f"    executor_env: {packed.path.resolve()}   # or where the executors fetch it from (hdfs://, s3a://, https://)"
    )
    print(f"    executor_python: {default_python()}   # the executors' Python: this minor version, on their PATH")
    return 0


def replicate(a: argparse.Namespace) -> int:
    from kafka_dr.cli.console import setup_logging, spark_output_to_file
    from kafka_dr.core.config_load import load_config
    from kafka_dr.core.inputs import flow_problems, require_valid
    from kafka_dr.spark.job import job_options, run_flow

    opts = job_options(a)
    require_valid(flow_problems(load_config(opts.config), [opts.flow], opts.config))  # before Spark starts
    if opts.master is None:
        opts.master = "local[*]"
    setup_logging(logging.INFO)
    with spark_output_to_file(f"replicate-{opts.flow}", a.verbose):
        summary = run_flow(opts)
    if a.json:
        print(json.dumps({"kafka_dr.summary": summary.__dict__}), flush=True)
    else:
        by_topic = ", ".join(f"{t}: {n}" for t, n in sorted(summary.written_by_topic.items()))
        print(
            f"{summary.flow}: copied {summary.records_written} record(s){f' ({by_topic})' if by_topic else ''}, "
            f"{summary.records_filtered} skipped by the loop policy, {summary.batches} micro-batch(es), "
            f"{summary.restarts} restart(s); stopped: {summary.stopped_by}"
        )
    return 0


def data_quality(a: argparse.Namespace) -> int:
    from kafka_dr.cli.console import setup_logging, spark_output_to_file
    from kafka_dr.core.config_load import load_config
    from kafka_dr.core.inputs import InvalidInput, flow_problems, require_valid
    from kafka_dr.dq.cli import run

    if not a.config:
        raise InvalidInput(["--config or $KAFKA_DR_CONFIG is required"])
    require_valid(flow_problems(load_config(a.config), a.flows, a.config))  # before Spark starts
    setup_logging(logging.WARNING)
    with spark_output_to_file("dq", a.verbose):
        code = run(a, text=not a.json, json_line=a.json)
    if code:
        print("kafka-dr dq: the clusters differ: failed checks listed above", file=sys.stderr)
    return code

"""``kafka-dr dq``: one data-quality run from the command line (also the spark-submit entry's
body, ``spark_jobs/data_quality.py``). Exit 0 when every check passed, 1 when one failed,
2 for an invalid config or an unknown flow (said before Spark starts)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config", default=os.environ.get("KAFKA_DR_CONFIG"), help="kafka-dr YAML (default $KAFKA_DR_CONFIG)"
    )
    p.add_argument(
        "--flow", action="append", dest="flows", help="only this flow (repeatable; default every enabled flow)"
    )
    p.add_argument("--topic", action="append", dest="topics", help="only this source topic (repeatable)")
    p.add_argument("--master", default=None, help="Spark master (default: spark.master of the config)")
    p.add_argument("--no-publish", action="store_true", help="do not write the summary to <prefix>.dq-results")
    p.add_argument(
        "--full",
        action="store_true",
        help="compare everything the clusters retain, not only what arrived since the verified watermarks",
    )


def run(a: argparse.Namespace, text: bool = True, json_line: bool = True) -> int:
    """One run: the summary as text, then as one JSON line (the spark-submit entry prints
    both; ``kafka-dr dq`` the text, or the JSON line alone with ``--json``)."""
    from kafka_dr.core.config_load import load_config
    from kafka_dr.core.inputs import InvalidInput, flow_problems, require_valid

    if not a.config:
        raise InvalidInput(["--config or $KAFKA_DR_CONFIG is required"])
    cfg = load_config(a.config)
    require_valid(flow_problems(cfg, a.flows, a.config))

    from kafka_dr.dq import run_data_quality

    result = run_data_quality(
        cfg,
        flows=a.flows,
        topics=a.topics,
        publish_results=not a.no_publish,
        full=a.full,
        master=a.master,
    )
    if text:
        print(result.summary())
    if json_line:
        print(json.dumps({**result.to_record(), "figures": dict(result.figures)}))
    return 0 if result.success else 1


def main(argv: list[str] | None = None) -> int:
    from kafka_dr.entry import run_entry

    p = argparse.ArgumentParser(prog="kafka-dr dq", description="Compare the clusters and validate the expectations.")
    add_arguments(p)
    p.add_argument("--debug", action="store_true", help="a Python traceback with a failure")
    a = p.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s", stream=sys.stderr
    )

    return run_entry("kafka-dr dq", lambda: run(a), a.debug)

"""The ``kafka-dr`` command: parse, run one subcommand, end with one clear line.

Each subcommand lives in its own module (``lab_cmd``, ``airflow_cmds``, ``spark_cmds``,
``operator_cmds``, ``sync_cmds``, ``tool_cmds``) and registers a handler. Exit codes: 0 ok,
1 the operation failed, 2 bad usage or an invalid config (argparse's own errors are 2 as
well). ``--debug`` adds the traceback, ``--verbose`` shows Spark's and the Kafka clients'
output, ``--json`` prints a summary as one JSON line for scripts.
"""

from __future__ import annotations

import argparse

from kafka_dr import __version__
from kafka_dr.cli import (
    airflow_cmds,
    exporter_cmd,
    gameday_cmd,
    lab_cmd,
    operator_cmds,
    spark_cmds,
    sync_cmds,
    tool_cmds,
)


def common_options() -> argparse.ArgumentParser:
    """Options every subcommand takes, before or after its own arguments."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show the Python traceback of a failure"
    )
    common.add_argument(
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show Spark's and the Kafka clients' output on the console",
    )
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print the summary as one JSON line"
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    common = common_options()
    parser = argparse.ArgumentParser(
        prog="kafka-dr", parents=[common], description="Disaster recovery for Apache Kafka, scheduled by Airflow."
    )
    parser.add_argument("--version", action="version", version=f"kafka-dr {__version__}")
    sub = parser.add_subparsers(dest="cmd", required=True, metavar="command")
    lab_cmd.add_parser(sub, common)
    tool_cmds.add_parsers(sub, common)
    airflow_cmds.add_parser(sub, common)
    spark_cmds.add_parsers(sub, common)
    operator_cmds.add_parsers(sub, common)
    sync_cmds.add_parsers(sub, common)
    gameday_cmd.add_parser(sub, common)
    exporter_cmd.add_parser(sub, common)
    return parser


def main(argv: list[str] | None = None) -> int:
    from kafka_dr.entry import run_entry

    args = build_parser().parse_args(argv)
    for flag in ("debug", "verbose", "json"):
        setattr(args, flag, getattr(args, flag, False))
    from kafka_dr.cli.console import quiet_chatter

    quiet_chatter(args.verbose)
    return run_entry(f"kafka-dr {args.cmd}", lambda: args.handler(args), args.debug)

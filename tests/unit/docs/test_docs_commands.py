"""The documents and the command tests stay in step: every command README.md and docs/ print
is exercised (tests/documented_commands.py says how), and every long one at least parses."""

from __future__ import annotations

import re
import shlex

import pytest

from documented_commands import COMMANDS, PARSED, REPO, documented


def test_every_documented_command_has_a_check():
    missing = [f"{d.document}:{d.line}: {d.command}" for d in documented() if d.command not in COMMANDS]
    assert not missing, "documented commands without a check in tests/documented_commands.py:\n" + "\n".join(missing)


def test_every_check_is_still_documented():
    printed = {d.command for d in documented()}
    assert not [c for c in COMMANDS if c not in printed]


@pytest.mark.parametrize("command", [c for c, check in COMMANDS.items() if check.how == PARSED])
def test_long_running_commands_parse_and_validate(command):
    """The full benchmark and the drills take minutes: their arguments go through the real
    parser and the same checks the command makes before it starts anything."""
    from kafka_dr.cli.app import build_parser

    argv = shlex.split(command)
    if argv[0] == "make":  # a Makefile target that runs a command its test covers
        assert all(re.search(rf"^{re.escape(t)}:", (REPO / "Makefile").read_text(), re.M) for t in argv[1:]), command
        assert (REPO / COMMANDS[command].covered_by).exists()
        return
    if argv[0].endswith("/python") and argv[2] == "kafka_dr.dq.bench":
        from kafka_dr.dq.bench import build_parser as dq_bench_parser

        args = dq_bench_parser().parse_args(argv[3:])
        assert args.records > 0 and args.partitions > 0, command
        assert (REPO / COMMANDS[command].covered_by).exists()
        return
    if argv[0].endswith("/python") and argv[2] == "kafka_dr.bench.group_sync":
        from kafka_dr.bench.group_sync import build_parser as group_sync_parser

        args = group_sync_parser().parse_args(argv[3:])
        assert min(args.groups, args.partitions, args.records) > 0, command
        assert (REPO / COMMANDS[command].covered_by).exists()
        return
    if argv[0].endswith("/python"):  # python -m kafka_dr.bench ...
        argv = ["bench", *argv[3:]]
    else:
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    if args.cmd == "bench":
        from kafka_dr.bench.cli import FULL, QUICK, validated

        systems, sizes, rates = validated(args, QUICK if args.quick else FULL)
        assert systems and sizes and rates
    assert (REPO / COMMANDS[command].covered_by).exists()

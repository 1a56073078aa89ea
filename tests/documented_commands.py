"""Every command README.md and docs/*.md print, and how the suite proves it works as printed.

A command is a line of a fenced code block that starts the way a user's command does
(``.venv/bin/``, ``make``, ``spark-submit``, ``eval``, ``source``, ``export``). Each one is in
``COMMANDS`` with how it is exercised:

- ``RUN``: run as printed, as a subprocess, in a user's checkout (see test_documented_commands);
- ``PARSED``: runs for many minutes (full benchmark, drills, soak) or starts a service (``make
  airflow``): its arguments are parsed and validated by the real command line (a ``make`` line:
  its target exists), and its short version, or the command itself, runs in the test named;
- ``SESSION``: a line that sets the shell's state (``eval``, ``source``, ``export``) for the
  commands after it in the same block; run with each of them;
- ``SUITE``: ``make test``, this suite itself.

tests/unit/docs/test_docs_commands.py fails for a documented command that is not here, and for an
entry here that no document prints any more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

RUN, PARSED, SESSION, SUITE = "run", "parsed", "session", "suite"

_COMMAND = re.compile(r"^(\.venv/bin/\S+|make|spark-submit|eval|source|export)( |$)")


@dataclass(frozen=True)
class Check:
    how: str
    last_line: str = ""  #: a regular expression the command's last line of output matches (stdout, else stderr)
    exit_code: int = 0
    covered_by: str = ""  #: PARSED: the test that runs its short version


@dataclass(frozen=True)
class Documented:
    document: str
    line: int
    command: str
    block: tuple[str, ...]  #: the commands before it in the same code block


def strip_comment(line: str) -> str:
    """The command without its trailing ``# ...`` comment (a ``#`` outside quotes after a space)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and i > 0 and line[i - 1] == " ":
            return line[:i].rstrip()
    return line.rstrip()


def documented() -> list[Documented]:
    found = []
    for doc in DOCUMENTS:
        fence, block = False, []
        for n, raw in enumerate(doc.read_text().splitlines(), 1):
            if raw.lstrip().startswith("```"):
                fence, block = not fence, []
                continue
            command = strip_comment(raw.strip())
            if fence and _COMMAND.match(command):
                found.append(Documented(doc.relative_to(REPO).as_posix(), n, command, tuple(block)))
                block.append(command)
    return found


BENCH = "tests/integration/test_bench.py"
DRILLS = "tests/integration/test_faults.py"
GAMEDAY = "tests/e2e/test_gameday.py"
#: starts Airflow and PostgreSQL (a minute or two): run once, with its output, status and down
#: asserted, by the operator-UI test; the walk-through runs the cheap status and down as printed
OPERATOR_UI = "tests/e2e/test_operator_ui.py"

COMMANDS: dict[str, Check] = {
    # README: the front door
    "make demo": Check(RUN, r"^Stop it with: \.venv/bin/kafka-dr lab down"),
    "make test": Check(SUITE),
    "make check": Check(RUN, r"^\d+ passed in [\d.]+s"),
    "make dist": Check(RUN, r"^Successfully built kafka_dr-[\d.]+\.tar\.gz and kafka_dr-[\d.]+-py3-none-any\.whl$"),
    ".venv/bin/kafka-dr replicate --config .lab/kafka-dr.yaml --flow east_to_west --mode incremental": Check(
        RUN, r"^east_to_west: copied \d+ record\(s\).*stopped: (completed|nothing new)$"
    ),
    "spark-submit spark_jobs/replicate.py --config kafka-dr.yaml --flow east_to_west --mode incremental": Check(
        RUN, r'^\{"kafka_dr.summary": \{"flow": "east_to_west"'
    ),
    ".venv/bin/kafka-dr lab up": Check(RUN, r"^use it: +export KAFKA_DR_CONFIG=.*/\.lab/kafka-dr\.yaml$"),
    ".venv/bin/kafka-dr lab up --clusters 3": Check(RUN, r"^use it: +export KAFKA_DR_CONFIG="),
    ".venv/bin/kafka-dr lab status": Check(RUN, r"^west +127\.0\.0\.1:\d+ +\d+ +healthy"),
    # docs/monitoring.md: the lab's exporter, Prometheus and Alertmanager
    ".venv/bin/kafka-dr lab monitoring up": Check(
        RUN, r"^alertmanager: +http://127\.0\.0\.1:\d+ +\(notifications: none\)$"
    ),
    ".venv/bin/kafka-dr lab monitoring status": Check(RUN, r"^prometheus/alertmanager +running$"),
    ".venv/bin/kafka-dr lab monitoring down": Check(RUN, r"^monitoring stopped: .*/\.lab/monitoring$"),
    ".venv/bin/kafka-dr exporter --config .lab/kafka-dr.yaml --port 9464": Check(
        PARSED, covered_by="tests/integration/test_prometheus_alerts.py"
    ),
    # docs/operations.md: the lab's Spark cluster, started once (about 10 s) between the lab's first verbs
    ".venv/bin/kafka-dr lab spark up --workers 2": Check(
        RUN, r"^lab config: .*/\.lab/kafka-dr\.yaml \(spark\.master: spark://127\.0\.0\.1:\d+\)$"
    ),
    ".venv/bin/kafka-dr lab spark status": Check(RUN, r"^worker-2 +\d+ +alive +2 +http://127\.0\.0\.1:\d+$"),
    ".venv/bin/kafka-dr lab spark down": Check(RUN, r"^Spark cluster stopped: .*/\.lab/spark$"),
    ".venv/bin/kafka-dr lab stop east": Check(RUN, r"^stopped east \(data kept\)$"),
    ".venv/bin/kafka-dr lab start east": Check(RUN, r"^started east$"),
    ".venv/bin/kafka-dr lab kill east": Check(RUN, r"^killed east$"),
    ".venv/bin/kafka-dr lab down": Check(RUN, r"^lab stopped: .*/\.lab$"),
    ".venv/bin/kafka-dr lab down --wipe": Check(RUN, r"^lab stopped and wiped: .*/\.lab$"),
    # docs/operations.md: a cluster of three brokers, one of them crashed and started again
    ".venv/bin/kafka-dr lab up --clusters 1 --brokers 3 --dir .lab-brokers --base-port 19792": Check(
        RUN, r"^use it: +export KAFKA_DR_CONFIG=.*/\.lab-brokers/kafka-dr\.yaml$"
    ),
    ".venv/bin/kafka-dr lab kill east-2 --dir .lab-brokers": Check(RUN, r"^killed east-2$"),
    ".venv/bin/kafka-dr lab status --dir .lab-brokers": Check(
        RUN, r"^  east-3 +127\.0\.0\.1:19812 +\d+ +healthy$", exit_code=1
    ),
    ".venv/bin/kafka-dr lab start east-2 --dir .lab-brokers": Check(RUN, r"^started east-2$"),
    ".venv/bin/kafka-dr lab down --wipe --dir .lab-brokers": Check(RUN, r"^lab stopped and wiped: .*/\.lab-brokers$"),
    "make airflow": Check(PARSED, covered_by=OPERATOR_UI),
    # no Airflow service in the walk-through's lab: status says how to start one, down has nothing to stop
    ".venv/bin/kafka-dr airflow status": Check(
        RUN, r"^kafka-dr airflow: no Airflow service in .*/\.lab \(run `kafka-dr airflow up`\)$", exit_code=1
    ),
    ".venv/bin/kafka-dr airflow down": Check(RUN, r"^Airflow stopped \(nothing was running\): .*/\.lab$"),
    'eval "$(.venv/bin/kafka-dr airflow env)"': Check(SESSION),
    ".venv/bin/airflow db migrate": Check(RUN, r"Database migration done!"),
    ".venv/bin/airflow dags test dr_cluster_health": Check(
        RUN, r"DagRun Finished: dag_id=dr_cluster_health, .*state=success"
    ),
    # no flow is running in this walk-through and these are the lab's first heartbeats: the DAG
    # waits for them, as the README tells the user it will
    ".venv/bin/airflow dags test dr_heartbeat": Check(
        RUN, r"east_to_west: no heartbeat from east on west yet; its first left \d+s ago"
    ),
    ".venv/bin/airflow dags test dr_topic_config_sync": Check(
        RUN, r"DagRun Finished: dag_id=dr_topic_config_sync, .*state=success"
    ),
    # the walk-through's lab has no authorizer and so no bindings: nothing to do
    ".venv/bin/kafka-dr acl-sync --dry-run": Check(
        RUN, r"^ACL sync of flow west_to_east \(west -> east\): 0 to create, 0 to delete, 0 in sync$"
    ),
    ".venv/bin/kafka-dr acl-sync --flow east_to_west": Check(
        RUN, r"^ACL sync of flow east_to_west \(east -> west\): 0 created, 0 deleted, 0 in sync$"
    ),
    ".venv/bin/kafka-dr quota-sync --dry-run": Check(
        RUN, r"^quota sync of flow west_to_east \(west -> east\): 0 to set, 0 to delete, 0 in sync$"
    ),
    ".venv/bin/kafka-dr acls --principal User:kafka-dr": Check(
        RUN, r"^kafka-acls\.sh .*--transactional-id '_kafka_dr' --resource-pattern-type prefixed$"
    ),
    ".venv/bin/airflow dags test dr_schema_mirror": Check(
        RUN, r"DagRun Finished: dag_id=dr_schema_mirror, .*state=success"
    ),
    ".venv/bin/airflow dags test dr_preflight": Check(RUN, r"DagRun Finished: dag_id=dr_preflight, .*state=success"),
    ".venv/bin/kafka-dr failover --from east --to west --dry-run --force": Check(
        RUN, r"^  active cluster would be: west$"
    ),
    # docs/benchmarks.md: minutes each; the quick run is the short version
    ".venv/bin/kafka-dr bench --quick": Check(PARSED, covered_by=BENCH),
    ".venv/bin/kafka-dr bench --quick --systems ours,mm2,mm2t1,mm2eos,mm2eosint,rawpipe,rawpipe1,ours_spark": Check(
        PARSED, covered_by=BENCH
    ),
    (
        ".venv/bin/kafka-dr bench --dir .lab-bench --base-port 27092 --systems ours,ours_spark,rawpipe,rawpipe1"
        " --latency-rates 5000 --latency-seconds 10 --latency-warmup 5 --latency-rounds 1 --warmup-records 200000"
        " --no-warm-backlog"
    ): Check(PARSED, covered_by=BENCH),
    (
        ".venv/bin/kafka-dr bench --dir .lab-bench --base-port 27092 --systems ours,rawpipe --latency-rates 5000"
        " --latency-seconds 5 --latency-warmup 2 --latency-rounds 1 --warmup-records 200000 --no-cold-round"
        " --no-warm-backlog"
    ): Check(PARSED, covered_by=BENCH),
    (
        ".venv/bin/kafka-dr bench --dir .lab-bench --base-port 27092 --systems ours,mm2,mm2t1,mm2eos,rawpipe --sizes"
        " 100,1024 --records 200000 --backlog-rounds 1 --no-cold-round --warm-backlog --latency-rates 1000"
        " --latency-seconds 1 --latency-warmup 0 --latency-rounds 1 --warmup-records 50000"
    ): Check(PARSED, covered_by=BENCH),
    ".venv/bin/python -m kafka_dr.bench.group_sync --groups 1000 --partitions 8 --records 2000": Check(
        PARSED, covered_by=BENCH
    ),
    (
        ".venv/bin/kafka-dr bench --records 1000000 --systems ours,ours_scraped --backlog-rounds 3 --latency-rates"
        " 5000 --latency-seconds 30 --latency-warmup 10 --warmup-records 200000 --no-warm-backlog"
    ): Check(PARSED, covered_by=BENCH),
    ".venv/bin/kafka-dr bench --records 200000 --sizes 100 --systems ours,rawpipe": Check(PARSED, covered_by=BENCH),
    ".venv/bin/python -m kafka_dr.bench --quick": Check(PARSED, covered_by=BENCH),
    # docs/data-quality.md: 2M records per side produced, replicated and compared; the test runs 3,000
    (
        ".venv/bin/python -m kafka_dr.dq.bench --config .lab/kafka-dr.yaml --records 1000000 --partitions 4"
        ' --master "local[2]"'
    ): Check(PARSED, covered_by="tests/integration/test_data_quality.py"),
    ".venv/bin/kafka-dr bench --scale-out": Check(PARSED, covered_by=BENCH),
    ".venv/bin/kafka-dr bench --scale-out --quick": Check(PARSED, covered_by=BENCH),
    ".venv/bin/kafka-dr pack-executor-env --out /tmp/kafka-dr-executor-env.tar.gz": Check(
        RUN, r"^    executor_python: python3\.\d+ "
    ),
    ".venv/bin/python -m kafka_dr.spark.class_archive": Check(
        RUN, r"^spark class archive: /.*/spark-[0-9.]+-[0-9a-f]{8}-[0-9a-f]{8}-classes\.jsa$"
    ),
    ".venv/bin/python -m kafka_dr.lab.broker_archive": Check(
        RUN, r"^kafka broker class archive: /.*/kafka-broker-[0-9a-f]{10}-classes\.jsa$"
    ),
    ".venv/bin/kafka-dr bench --dir .lab-bench --base-port 27092": Check(PARSED, covered_by=BENCH),
    ".venv/bin/kafka-dr bench --scale-out --dir .lab-bench --base-port 27092": Check(PARSED, covered_by=BENCH),
    # docs/reliability.md: the drills run for minutes; the secure lab runs as printed
    ".venv/bin/kafka-dr drill": Check(PARSED, covered_by=DRILLS),
    ".venv/bin/kafka-dr drill soak --soak-seconds 600": Check(PARSED, covered_by=DRILLS),
    ".venv/bin/kafka-dr drill kill-job --kill-trials 20 --dir .lab-drill --base-port 19892": Check(
        PARSED, covered_by=DRILLS
    ),
    ".venv/bin/kafka-dr gameday --short": Check(PARSED, covered_by=GAMEDAY),
    ".venv/bin/kafka-dr gameday --minutes 30": Check(PARSED, covered_by=GAMEDAY),
    ".venv/bin/kafka-dr lab up --secure --dir .lab-secure --base-port 19592": Check(
        RUN, r"^use it: +export KAFKA_DR_CONFIG="
    ),
    "source .lab-secure/secrets.env": Check(SESSION),
    "export KAFKA_DR_CONFIG=.lab-secure/kafka-dr.yaml": Check(SESSION),
    ".venv/bin/kafka-dr replicate --flow east_to_west --mode incremental": Check(
        RUN, r"^east_to_west: copied \d+ record\(s\)"
    ),
}

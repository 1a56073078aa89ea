"""The short game day, run as a user types it: 3-broker clusters, a Spark cluster of 2
workers and Airflow as services on a lab of its own, every DAG enabled and the scheduler in
charge; one fault of each kind (a Spark executor, the target's partition leader, a 60 s cut
of the target's network, the Airflow scheduler), then east stopped, failover, failback and
drain through Airflow's REST API. The command proves the outcome from both clusters itself;
this test holds it to its exit status and its last line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
#: past every lab the suite starts (up to +1900, its Spark cluster): the game day takes base..base+340
BASE_PORT = int(os.environ.get("KAFKA_DR_TEST_BASE_PORT", "29092")) + 2000
#: in the checkout, not under pytest's tmp_path: the lab's PostgreSQL runs as the postgres user,
#: which must be able to enter the folder (kept after the run: its logs)
FOLDER = Path(os.environ.get("KAFKA_DR_TEST_GAMEDAY_DIR", REPO / ".lab-test-gameday"))
SINGLE_FAULTS = {"spark-executor", "target-leader", "target-network-cut", "airflow-scheduler"}


@pytest.mark.timeout(2400)
def test_short_game_day_loses_duplicates_and_skips_nothing():
    folder = FOLDER
    shutil.rmtree(folder, ignore_errors=True)
    command = [".venv/bin/kafka-dr", "gameday", "--short", "--dir", str(folder), "--base-port", str(BASE_PORT)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=2300)
    lines = done.stdout.strip().splitlines()
    tail = "\n".join(lines[-40:]) + "\n" + done.stderr[-3000:]
    assert done.returncode == 0, tail
    figures = json.loads(lines[-1])

    assert figures["failures"] == [] and figures["data_quality_at_end"] == "success", tail
    assert all(c["ok"] for c in figures["checks"]), tail
    presence = [c["counts"] for c in figures["checks"] if c["name"].endswith("presence")]
    assert len(presence) == 2 and all(p["lost"] == p["duplicated"] == p["aborted_present"] == 0 for p in presence)
    groups = [c["counts"] for c in figures["checks"] if c["name"].startswith("group ")]
    assert len(groups) == 2 and all(g["skipped"] == 0 and g["aborted_delivered"] == 0 for g in groups)

    rows = {r["fault"]: r for r in figures["faults"]}
    assert set(rows) == SINGLE_FAULTS | {"east-down-failover-failback"}
    assert all(r["lost"] == r["duplicated"] == 0 for r in rows.values()), figures["faults"]
    for fault in SINGLE_FAULTS:  # the scheduler's restart stops the tasks its executor ran, replication too
        assert rows[fault]["flowing_again_after_s"] is not None, rows[fault]
    assert rows["target-network-cut"]["detected_by"] != "no alert", rows["target-network-cut"]

    assert figures["failover_state"] == figures["failback_state"] == figures["drain_state"] == "success"
    gate = figures[
        "failback_gate"
    ]  # records compared on both clusters; the Spark + GX comparison left to the end's run
    assert gate["differences"] == 0 and gate["records_checked"] > 0 and "skipped" in gate["data_quality"], gate
    assert figures["rto_seconds"] is not None and figures["records"]["acked"] > 10_000

    # the whole run's logs stay in its folder: Airflow's, Spark's and every broker's
    assert (folder / "gameday.log").is_file() and (folder / "airflow" / "scheduler.log").is_file()
    assert (folder / "lab" / "spark" / "master.log").is_file()
    brokers = sorted(p.parent.name for p in (folder / "lab" / "clusters").glob("*/broker.log"))
    assert brokers == ["east-1", "east-2", "east-3", "west-1", "west-2", "west-3"]

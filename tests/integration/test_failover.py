"""dr_failover on the real lab: a consumer group reads part of a topic on east, east stops,
the DAG runs, and the same group on west resumes at exactly the next unread record.
"""

from __future__ import annotations

import json
import time

import pytest
from test_dag_runs import _task_states, _task_tries
from test_replication import flow_config, own_internal_prefix

from kafka_checks import produce_varied, read_topic
from kafka_dr.core.config_load import load_config
from kafka_dr.core.provenance import Provenance
from kafka_dr.kafka import clients
from kafka_dr.kafka.state_store import read_state
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.spark.job import JobOptions, run_flow
from kafka_dr.workflows.offset_sync import sync_group_offsets

pytestmark = [pytest.mark.lab, pytest.mark.airflow]


def isolated_config(lab, tmp_path, topic_name: str):
    """The lab config narrowed to the test's topic, with an internal prefix of its own: the
    failover writes the product state ("east is failed") under that prefix, so the DAGs of
    other tests, which use the lab's prefix, keep replicating."""
    path = flow_config(lab, tmp_path, [topic_name])
    own_internal_prefix(path, topic_name)
    return path


def _consume(cluster, group: str, topic: str, n: int | None, timeout: float = 60.0) -> list:
    """Consume with ``group`` (subscribe: resumes at its committed offsets); commit what was read."""
    c = clients.consumer(cluster, group, **{"auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + timeout
    idle = 0
    try:
        while time.monotonic() < deadline and (n is None or len(got) < n):
            msgs = c.consume(num_messages=1 if n else 500, timeout=1.0)
            if not msgs:
                idle += 1
                if n is None and idle >= 5 and got:
                    break
                continue
            idle = 0
            for m in msgs:
                if m.error() is None:
                    got.append(m)
        c.commit(asynchronous=False)
    finally:
        c.close()
    return got


def _identity(msg, here: str) -> tuple:
    p = Provenance.from_headers(msg.headers())
    if p is not None:
        return (p.cluster, msg.partition(), p.offset)
    return (here, msg.partition(), msg.offset())


def test_failover_moves_the_group_to_the_next_unread_record(lab, lab_config, spark, airflow_db, tmp_path, topic_name):
    from confluent_kafka.admin import AdminClient

    from kafka_dr.airflow.failover_dag import build_failover_dag

    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic_name, partitions=2)
    east_sent = produce_varied(east, topic_name, "east", 120, 2)
    path = isolated_config(lab, tmp_path, topic_name)
    cfg = load_config(path)
    e2w = next(f for f in cfg.flows if f.name == "east_to_west")
    group = f"app-{topic_name}"

    read_on_east = _consume(east, group, topic_name, 50)
    assert len(read_on_east) == 50
    run_flow(JobOptions(config=str(path), flow="east_to_west", mode="incremental"), spark=spark)
    # west's own records after the copies: the group never read them, so it gets them too
    west_sent = produce_varied(west, topic_name, "west", 30, 2)
    synced = sync_group_offsets(cfg, e2w, groups=[group])
    assert synced and all(r["status"] == "exact" for r in synced), synced
    # forget what the sync committed on west: the failover must do it from the recorded positions
    admin = AdminClient(clients.client_config(west))
    admin.delete_consumer_groups([group], request_timeout=30)[group].result(30)

    # east still answers: a dry run shows the whole plan, the refusal its verdict, and ends
    # green; the same failover for real fails at once, not retried (the refusal cannot change)
    before = read_state(cfg)
    planned = build_failover_dag(cfg).test(run_conf={"failed_cluster": "east", "surviving_cluster": "west"})
    assert str(planned.state) == "success", _task_states(planned)
    plan = _summary(planned)
    assert plan["would_refuse"] == ["east still answers (force to override)"], plan
    assert plan["parity"]["verdict"] and plan["rpo"]["flows"]["east_to_west"]["status"] == "exact", plan
    assert plan["record_active"]["state"] == "would record", plan
    refused = build_failover_dag(cfg).test(
        run_conf={"failed_cluster": "east", "surviving_cluster": "west", "dry_run": False}
    )
    assert str(refused.state) == "failed"
    assert _task_tries(refused)["confirm_failed_cluster_down"] == ("failed", 1), _task_tries(refused)
    assert read_state(cfg) == before

    lab.stop("east")
    try:
        # a dry run changes nothing
        dry = build_failover_dag(cfg).test(
            run_conf={"failed_cluster": "east", "surviving_cluster": "west", "dry_run": True}
        )
        assert str(dry.state) == "success", _task_states(dry)
        assert read_state(cfg, skip=("east",)).active_cluster != "west"

        run = build_failover_dag(cfg).test(
            run_conf={"failed_cluster": "east", "surviving_cluster": "west", "dry_run": False, "consumer_groups": group}
        )
        assert str(run.state) == "success", _task_states(run)
        # each moved row bounds what the group may read again since its synced position: the
        # records copied from there on, counted here from what east held and what the group read,
        # and west's own records (their copies could have reached east after the sync)
        moved = {(g["topic"], g["partition"]): g for g in _summary(run)["consumer_groups"]}
        assert moved and {t for t, _ in moved} == {topic_name}, moved
        for (_, p), row in moved.items():
            end = 1 + max(s.offset for s in east_sent if s.partition == p)
            synced_at = 1 + max((m.offset() for m in read_on_east if m.partition() == p), default=-1)
            west_own = sum(1 for s in west_sent if s.partition == p)
            assert row["reread_since_sync_at_most_by_origin"] == {"east": end - synced_at, "west": west_own}, row
            assert row["reread_since_sync_at_most"] == end - synced_at + west_own, row
        from kafka_dr.workflows.failover import FailoverRun, rpo_report

        rpo = rpo_report(FailoverRun(cfg, "east", "west"))["flows"]["east_to_west"]
        assert rpo["missing_records_at_least"] == 0 and {e["topic"] for e in rpo["partitions"]} >= {topic_name}
        state = read_state(cfg, skip=("east",))
        assert (state.active_cluster, state.schema_primary, state.failed_clusters) == ("west", "west", ("east",))
        # monitoring's record of the runs (kafka_dr_last_dr_run_*): the real run only; the
        # refusal and the dry runs changed nothing and recorded nothing
        runs = [json.loads(r.value) for r in read_topic(west, cfg.names.dr_runs_topic)]
        assert [(r["kind"], r["success"], r["clusters"]) for r in runs] == [
            ("failover", True, {"failed": "east", "survivor": "west"})
        ], runs
        assert runs[0]["missing_records"] == 0 and runs[0]["duration_seconds"] > 0, runs

        # the group resumes on west: every east record it had not read, none it had, in order
        resumed = _consume(west, group, topic_name, None)
        seen_before = {("east", m.partition(), m.offset()) for m in read_on_east}
        east_now = [i for i in (_identity(m, "west") for m in resumed) if i[0] == "east"]
        all_east = {("east", s.partition, s.offset) for s in east_sent}
        assert set(east_now) == all_east - seen_before, "skipped or re-read records after failover"
        assert len(east_now) == len(set(east_now)), "a record was read twice"
        west_now = [i for i in (_identity(m, "west") for m in resumed) if i[0] == "west"]
        assert sorted(west_now) == sorted(("west", s.partition, s.offset) for s in west_sent), (
            "west's own records skipped"
        )
        for p in (0, 1):
            first_unread = min((o for (_, pp, o) in all_east - seen_before if pp == p), default=None)
            first_resumed = next((o for (_, pp, o) in east_now if pp == p), None)
            assert first_resumed == first_unread, (
                f"partition {p}: resumed at origin offset {first_resumed}, next unread is {first_unread}"
            )
    finally:
        lab.start("east")


def _summary(run) -> dict:
    """What the run's summary task returned (its XCom)."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = (
            session.query(XComModel)
            .filter_by(dag_id=run.dag_id, run_id=run.run_id, task_id="summary", key="return_value")
            .one()
        )
        return row.value


def test_cli_failover_refuses_a_live_cluster_and_dry_runs_with_force(lab, tmp_path, topic_name):
    """The CLI twin runs the same steps: east answers, so a failover is refused unless forced
    (exit 1, nothing changed); a dry run shows the whole plan with that refusal as its verdict;
    a forced dry run reports the plan going ahead and changes nothing."""
    import subprocess
    import sys
    from pathlib import Path

    path = isolated_config(lab, tmp_path, topic_name)
    cli = str(Path(sys.executable).with_name("kafka-dr"))
    before = read_state(load_config(path))

    def failover(*flags: str) -> subprocess.CompletedProcess:
        command = [cli, "failover", "--from", "east", "--to", "west", *flags, "--config", str(path)]
        return subprocess.run(command, capture_output=True, text=True, timeout=300)

    refused = failover()
    assert refused.returncode == 1 and "cluster 'east'" in refused.stderr and "still answers" in refused.stderr
    assert read_state(load_config(path)) == before
    planned = failover("--dry-run")
    assert planned.returncode == 0, planned.stderr[-2000:]
    assert "verdict: would be refused: east still answers (force to override)" in planned.stdout, planned.stdout
    assert "parity:" in planned.stdout and "active cluster would be: west" in planned.stdout, planned.stdout
    forced = failover("--dry-run", "--force")
    assert forced.returncode == 0, forced.stderr[-2000:]
    assert "DRY RUN: nothing changed" in forced.stdout and "active cluster would be: west" in forced.stdout
    assert "verdict: would go ahead" in forced.stdout or "would be refused: west is not ready" in forced.stdout
    assert read_state(load_config(path)) == before


def _east_identities(msgs) -> dict[int, list[int]]:
    """Per partition, the east origin offsets of the records read on west, in order."""
    out: dict[int, list[int]] = {}
    for m in msgs:
        origin, p, off = _identity(m, "west")
        if origin == "east":
            out.setdefault(p, []).append(off)
    return out


def test_failover_when_replication_had_not_caught_up_misses_what_the_rpo_report_says(
    lab, lab_config, spark, tmp_path, topic_name
):
    """Replication stopped short of east's end (a capped batch); the group had read less than
    was replicated on partition 0 and more on partition 1. After the failover the group re-reads
    nothing, and what it never sees on west is exactly the RPO report's figure (minus, on
    partition 1, the records it had already read, which the translation reports as behind)."""
    from test_offset_translation import commit, produce

    from kafka_dr.workflows.failover import FailoverRun, run_failover

    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic_name, partitions=2)
    produce(east, topic_name, "e", 120, 2)  # offsets 0..59 on each partition
    path = isolated_config(lab, tmp_path, topic_name)
    cfg = load_config(path)
    e2w = next(f for f in cfg.flows if f.name == "east_to_west")
    group = f"app-{topic_name}"
    read_up_to = {0: 20, 1: 45}
    commit(east, group, {(topic_name, p): x for p, x in read_up_to.items()})

    copied = 35  # the replica stops at east offset 35 of each partition; east's end is 60
    run_flow(
        JobOptions(config=str(path), flow="east_to_west", mode="incremental", max_records_per_batch=copied), spark=spark
    )
    produce(west, topic_name, "w", 10, 2)  # west's own records after the copies (unread: delivered)
    synced = {r["partition"]: r for r in sync_group_offsets(cfg, e2w, groups=[group])}
    assert synced[0]["status"] == "exact" and synced[1]["status"] == "approximate", synced
    assert synced[1]["behind_records"] == 45 - copied

    lab.stop("east")
    try:
        summary = run_failover(FailoverRun(cfg, "east", "west", groups=group, dry_run=False))
        rpo = {
            e["partition"]: e for e in summary["rpo"]["flows"]["east_to_west"]["partitions"] if e["topic"] == topic_name
        }
        assert {p: (e["copied_up_to"], e["last_known_source_end"], e["missing_at_least"]) for p, e in rpo.items()} == {
            0: (copied, 60, 25),
            1: (copied, 60, 25),
        }, rpo
        moved = {g["partition"]: g for g in summary["consumer_groups"]}
        # the periodic sync had committed these positions already; the failover keeps them
        assert all(g["committed"] or g["action"].startswith("already") for g in moved.values()), [
            (p, g["action"]) for p, g in moved.items()
        ]
        assert {p: g["target_offset"] is not None for p, g in moved.items()} == {0: True, 1: True}

        resumed = _east_identities(_consume(west, group, topic_name, None))
        # partition 0: the group resumes at its next unread record and reads to the replica's end
        assert resumed.get(0) == list(range(20, copied)), resumed.get(0)
        # partition 1: it had read past the replica's end; nothing is re-read
        assert resumed.get(1, []) == [], resumed.get(1)
        for p, x in read_up_to.items():
            seen_on_west = set(resumed.get(p, []))
            never_seen = [o for o in range(x, 60) if o not in seen_on_west]  # unread on east, absent on west
            assert len(never_seen) == rpo[p]["missing_at_least"] - moved[p]["behind_records"], (
                p,
                never_seen,
                rpo[p],
                moved[p],
            )
    finally:
        lab.start("east")


def test_failover_drill_on_a_compacted_topic(lab, lab_config, spark, tmp_path, topic_name):
    """East's topic is compacted (offsets with gaps) and the group's position sits in a gap:
    after the failover the group on west reads exactly the surviving records it had not read."""
    from test_offset_translation import commit, compacted_on_east

    from kafka_dr.workflows.failover import FailoverRun, run_failover

    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    offsets = compacted_on_east(east, west, topic_name)
    gaps = [x for x in range(offsets[0], offsets[-1]) if x not in set(offsets)]
    assert gaps, "no gaps: compaction did not run"
    x = gaps[len(gaps) // 2]  # the group read everything below a removed record
    path = isolated_config(lab, tmp_path, topic_name)
    cfg = load_config(path)
    e2w = next(f for f in cfg.flows if f.name == "east_to_west")
    group = f"app-{topic_name}"
    commit(east, group, {(topic_name, 0): x})
    run_flow(JobOptions(config=str(path), flow="east_to_west", mode="incremental"), spark=spark)
    (synced,) = sync_group_offsets(cfg, e2w, groups=[group])
    assert synced["status"] == "exact", synced

    lab.stop("east")
    try:
        summary = run_failover(FailoverRun(cfg, "east", "west", groups=group, dry_run=False))
        assert summary["missing_records_at_least"] == 0, summary["rpo"]
        resumed = _east_identities(_consume(west, group, topic_name, None))
        assert resumed.get(0) == [o for o in offsets if o >= x], "skipped or re-read records on a compacted topic"
    finally:
        lab.start("east")


def test_failback_dag_dry_run_reports_and_changes_nothing(lab, lab_config, airflow_db, tmp_path, topic_name):
    """dr_failback runs for real: a forced dry run (east is not recorded as failed here) walks
    every task, reports what each direction would read, and writes nothing."""
    from kafka_dr.airflow.failback_dag import build_failback_dag

    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic_name, partitions=2)
    produce_varied(west, topic_name, "w", 12, 2)
    cfg = load_config(isolated_config(lab, tmp_path, topic_name))
    before = read_state(cfg)
    run = build_failback_dag(cfg).test(
        run_conf={
            "recovered_cluster": "east",
            "surviving_cluster": "west",
            "mode": "resync",
            "dry_run": True,
            "force": True,
        }
    )
    assert str(run.state) == "success", _task_states(run)
    assert read_state(cfg) == before
    states = _task_states(run)
    assert states.pop("start_flows") == "skipped", states  # a dry run starts no flow's DAG
    assert set(states) >= {
        "check_ready",
        "copy_until_caught_up",
        "data_quality_gate",
        "move_consumer_groups_back",
        "restart_flows",
        "flows_to_start",
        "summary",
    } and set(states.values()) == {"success"}, states

    refused = build_failback_dag(cfg)
    for t in refused.tasks:
        t.retries = 0
    run = refused.test(
        run_conf={"recovered_cluster": "east", "surviving_cluster": "west", "mode": "resync", "dry_run": True}
    )
    assert str(run.state) == "failed" and _task_states(run)["check_ready"] == "failed"  # east is not recorded as failed


def test_a_replication_attempt_after_a_failover_does_not_start_the_flow(lab, airflow_db, tmp_path, topic_name):
    """A retry of a replication task that began before the failover skips its preflight; the
    task itself reads the DR state (every attempt), and so does the job before a restart."""
    from airflow.sdk.exceptions import AirflowSkipException

    from kafka_dr.airflow.replication_dag import build_replication_dag
    from kafka_dr.core.dr_state import DrState
    from kafka_dr.kafka.state_store import write_state
    from kafka_dr.spark.job import failed_over, load_flow

    path = isolated_config(lab, tmp_path, topic_name)
    cfg = load_config(path)
    flows = {f.name: f for f in cfg.flows}
    assert failed_over(load_flow(JobOptions(config=str(path), flow="east_to_west"))) is None
    assert set(write_state(cfg, DrState(1, "west", "west", ("east",))).values()) == {"written"}
    for name in ("east_to_west", "west_to_east"):
        replicate = build_replication_dag(cfg, flows[name], str(path)).get_task("replicate")
        with pytest.raises(AirflowSkipException, match=rf"east is failed over .*flow {name} stays stopped"):
            replicate.execute({})
        assert failed_over(load_flow(JobOptions(config=str(path), flow=name))) == "east"


def test_a_running_flow_stops_once_a_failover_is_recorded(lab, tmp_path, topic_name):
    """A continuous job into (or out of) the failed cluster must not copy on once that cluster
    is back: the failback copies between the two itself, and its gate compares a still
    picture. The job reads the DR state while it runs and stops gracefully."""
    from kafka_dr.core.dr_state import DrState
    from kafka_dr.kafka.state_store import write_state
    from kafka_dr.lab.drill import Job

    path = isolated_config(lab, tmp_path, topic_name)
    cfg = load_config(path)
    east, west = cfg.cluster("east"), cfg.cluster("west")
    ensure_topic(clients.admin(east), topic_name, partitions=2)
    produce_varied(east, topic_name, "east", 20, 2)
    log = tmp_path / "job.log"
    job = Job(path, log, flow="east_to_west", mode="continuous")
    try:
        deadline = time.monotonic() + 180
        while len(_copied(west, topic_name)) < 20 and time.monotonic() < deadline and job.alive():
            time.sleep(2)
        assert len(_copied(west, topic_name)) == 20, log.read_text()[-3000:]
        assert set(write_state(cfg, DrState(1, "west", "west", ("east",))).values()) == {"written"}
        assert job.proc.wait(120) == 0, log.read_text()[-3000:]
    finally:
        job.kill9()
    assert '"stopped_by": "failover of east"' in log.read_text(), log.read_text()[-3000:]


def _copied(cluster, topic: str) -> list:
    from kafka_checks import read_topic

    try:
        return read_topic(cluster, topic)
    except Exception:  # noqa: BLE001 - the target topic is not created yet
        return []

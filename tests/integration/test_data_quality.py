"""``dr_data_quality`` against the real lab.

After replication the DAG is green and Data Docs show the run; then one fault of each kind is
injected into its own topic (a record deleted on the target, a record altered, a record with
forged provenance, a duplicated record), plus a topic-config drift and a schema-registry
mismatch, and one DAG run must name every one of them, precisely, in the alert that reaches
the local SMTP receiver and the webhook.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
from test_dag_runs import _task_states
from test_replication import run_all
from test_schema_mirror import ORDER_V1, ORDER_V2, skey, sval

from kafka_checks import read_topic, varied_rows
from kafka_dr.core.config_load import load_config
from kafka_dr.core.formats import FORMAT
from kafka_dr.core.provenance import has_origin, origin_cluster
from kafka_dr.kafka import clients
from kafka_dr.kafka.schema_mirror import mirror
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.kafka.writing import produce_all
from receivers import SmtpReceiver, WebhookReceiver

pytestmark = [pytest.mark.lab, pytest.mark.airflow]


@pytest.fixture
def receivers():
    hook, smtp = WebhookReceiver(), SmtpReceiver()
    yield hook, smtp
    hook.close()
    smtp.close()


def dq_config(lab, tmp_path: Path, topics: list[str], hook, smtp) -> Path:
    """The lab's config narrowed to ``topics``, with its own registry topics, alerts to the
    local receivers and Data Docs under ``tmp_path``."""
    doc = yaml.safe_load(lab.config_file.read_text())
    uid = uuid.uuid4().hex[:6]
    for f in doc["flows"]:
        f["topics"] = {"allow": topics}
        f["mode"] = "incremental"
    for c in doc["clusters"].values():
        c["schema_registry"] = {"topic": f"_schemas_dq_{uid}"}
    doc["schema_mirror"] = {"primary": "east", "targets": ["west"]}
    doc["alerts"] = {
        "webhook": {"url": hook.url},
        "email": {"smtp_host": "127.0.0.1", "smtp_port": smtp.port, "to": ["oncall@example.com"]},
    }
    doc["data_quality"] = {"dir": str(tmp_path / "dq")}
    # latency = first replication time - record timestamp; on the shared 2-core lab a Spark
    # replication run starts a minute or more after the records were produced
    doc["thresholds"] = {"latency_p99_max_seconds": 900}
    path = tmp_path / "kafka-dr.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def produce_now(cluster, topic: str, tag: str, n: int, partitions: int) -> None:
    """Varied records (null keys and values, repeated and binary headers) stamped now, so the
    replication latency the check measures is the real one."""
    produce_all(clients.producer(cluster), topic, varied_rows(tag, n, partitions, t0_ms=int(time.time() * 1000)))


def replicated_setup(lab, lab_config, spark, tmp_path, receivers, topics: list[str], partitions: int):
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    hook, smtp = receivers
    path = dq_config(lab, tmp_path, topics, hook, smtp)
    cfg = load_config(path)
    for t in topics:
        for c in (east, west):
            ensure_topic(clients.admin(c), t, partitions=partitions)
        produce_now(east, t, "east", 60, partitions)
        produce_now(west, t, "west", 20, partitions)
    registry = cfg.cluster("east").schema_registry.topic
    ensure_topic(clients.admin(east), registry, partitions=1, config={"cleanup.policy": "compact"})
    produce_all(
        clients.producer(east),
        registry,
        [(skey("orders-value", 1), sval("orders-value", 1, 1, ORDER_V1), None, None, 0)],
    )
    mirror(cfg, "west")
    run_all(path, spark, topics[0])  # one run per flow copies every allowed topic
    return cfg, east, west


def strict(dag):
    for t in dag.tasks:
        t.retries = 0
    return dag


def test_green_after_replication_with_data_docs(lab, lab_config, airflow_db, spark, tmp_path, receivers, topic_name):
    from kafka_dr.airflow.data_quality_dag import build_data_quality_dag
    from kafka_dr.dq import run_data_quality

    cfg, east, west = replicated_setup(lab, lab_config, spark, tmp_path, receivers, [topic_name], partitions=3)
    result = run_data_quality(cfg, spark)
    assert result.success, result.summary()
    assert result.failures == [] and result.checked_partitions == 6  # 2 flows x 3 partitions
    assert result.figures["records_source"] == result.figures["records_target"] == 80, result.figures
    print("data quality figures:", result.figures)
    docs = Path(result.docs_path)
    assert docs.name == "index.html" and docs.is_file()
    assert any(result.run_id in p.read_text() for p in docs.parent.rglob("*.html")), "Data Docs do not show the run"

    # the summary is on every cluster, for the status page
    for c in (east, west):
        records = [json.loads(r.value) for r in read_topic(c, cfg.names.dq_results_topic)]
        mine = [r for r in records if r["run_id"] == result.run_id]
        # the run's summary as the record says it, in this version's format
        assert mine == [{**result.to_record(), "fmt": FORMAT}] and mine[0]["success"] is True

    run = build_data_quality_dag(cfg).test()
    assert str(run.state) == "success", _task_states(run)
    hook, smtp = receivers
    assert hook.received == [] and smtp.messages == []


def test_injected_faults_are_named_and_alerted(lab, lab_config, airflow_db, spark, tmp_path, receivers, topic_name):
    from kafka_dr.airflow.data_quality_dag import build_data_quality_dag

    t_del, t_alt, t_forged, t_dup = (f"{topic_name}.{k}" for k in ("del", "alt", "forged", "dup"))
    cfg, east, west = replicated_setup(
        lab, lab_config, spark, tmp_path, receivers, [t_del, t_alt, t_forged, t_dup], partitions=1
    )
    admin = clients.admin(west)
    copies = {t: [r for r in read_topic(west, t) if has_origin(r.headers)] for t in (t_alt, t_dup)}

    # 1. two records deleted on the target (the topic truncated before its 2nd copy's offset)
    first_copy = min(r.offset for r in read_topic(west, t_del) if has_origin(r.headers))
    for _, fut in admin.delete_records([TopicPartition(t_del, 0, first_copy + 2)]).items():
        fut.result(30)
    # 2. a record altered: the partition emptied and written back with one value changed
    end = max(r.offset for r in read_topic(west, t_alt)) + 1
    for _, fut in admin.delete_records([TopicPartition(t_alt, 0, end)]).items():
        fut.result(30)
    rows = [
        (r.key, (b"ALTERED" if i == 7 else r.value), list(r.headers), r.timestamp_ms, 0)
        for i, r in enumerate(copies[t_alt])
    ]
    produce_all(clients.producer(west), t_alt, rows)
    # 3. an extra record with forged provenance (names an east offset the flow never copied),
    #    in the five-header form earlier releases wrote, which data quality reads as well
    forged = [
        ("dr.origin", b"east"),
        ("dr.origin.topic", t_forged.encode()),
        ("dr.origin.part", b"0"),
        ("dr.origin.offset", b"100000"),
        ("dr.origin.ts", str(int(time.time() * 1000)).encode()),
    ]
    produce_all(clients.producer(west), t_forged, [(b"k", b"forged", forged, None, 0)])
    # 4. a copy duplicated
    dup = copies[t_dup][5]
    produce_all(clients.producer(west), t_dup, [(dup.key, dup.value, list(dup.headers), dup.timestamp_ms, 0)])
    # 5. a topic-config drift on the target
    res = ConfigResource(
        ConfigResource.Type.TOPIC,
        t_dup,
        incremental_configs=[ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)],
    )
    for _, fut in admin.incremental_alter_configs([res]).items():
        fut.result(30)
    # 6. a schema registered on the target only
    produce_all(
        clients.producer(west),
        cfg.cluster("west").schema_registry.topic,
        [(skey("orders-value", 2), sval("orders-value", 2, 2, ORDER_V2), None, None, 0)],
    )

    run = strict(build_data_quality_dag(cfg)).test()
    assert str(run.state) == "failed"
    hook, smtp = receivers
    assert len(hook.received) == 1 and hook.received[0]["task_id"] == "validate"
    error = hook.received[0]["error"]
    lines = [ln.strip().removeprefix("- ") for ln in error.splitlines()]

    def named(check: str, topic: str, *figures: str) -> list[str]:
        where = f"flow east_to_west east/{topic}[0] -> west/{topic}[0]"
        return [ln for ln in lines if ln.startswith(f"{check}: {where}") and all(f in ln for f in figures)]

    assert named("no_missing", t_del, "missing=2")
    assert named("counts_equal", t_del, "source_count=60, target_count=58")
    assert named("checksums_equal", t_alt)
    assert not named("counts_equal", t_alt) and not named("no_missing", t_alt) and not named("no_duplicates", t_alt)
    assert named("no_unexpected", t_forged, "unexpected=1")
    assert named("counts_equal", t_forged, "source_count=60, target_count=61")
    assert named("no_duplicates", t_dup, "duplicated=1")
    assert not named("no_missing", t_dup)
    assert [
        ln
        for ln in lines
        if ln.startswith(f"topic_config_parity: topic configs flow east_to_west east/{t_dup} -> west/{t_dup}")
        and "retention.ms: target 3600000, source (default)" in ln
    ]
    assert [
        ln for ln in lines if ln.startswith("schema_registry_equal: schema registry east/") and "differences=1" in ln
    ]
    # nothing is reported about the other flow, whose records were left alone
    assert not [ln for ln in lines if "flow west_to_east" in ln and not ln.startswith("topic_config_parity")]

    assert len(smtp.messages) == 1 and smtp.messages[0]["to"] == ["oncall@example.com"]
    mail = smtp.messages[0]["data"]
    assert (
        "dr_data_quality.validate failed" in mail
        and "no_missing: flow east_to_west" in mail
        and "schema_registry_equal" in mail
    )


CLEANER = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01"}


def test_compacted_topic_compares_the_latest_record_per_key(lab, lab_config, spark, tmp_path, receivers, topic_name):
    """The source's cleaner drops superseded values the target still holds: the clusters agree
    (the latest record of each key is the same). A target whose latest copy of a key is older
    than the source's is named: the newest value is missing there."""
    from kafka_dr.dq import run_data_quality

    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    hook, smtp = receivers
    path = dq_config(lab, tmp_path, [topic_name], hook, smtp)
    doc = yaml.safe_load(path.read_text())
    doc["topic_config"] = {"exclude": ["segment\\.ms", "min\\.cleanable\\.dirty\\.ratio"]}  # cleaner tuning per cluster
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    cfg = load_config(path)
    ensure_topic(clients.admin(east), topic_name, partitions=1, config=CLEANER)
    ensure_topic(clients.admin(west), topic_name, partitions=1, config={"cleanup.policy": "compact"})
    now = int(time.time() * 1000)
    rows = [(f"k{i}".encode(), b"v1", None, now, 0) for i in range(10)]
    rows += [(f"k{i}".encode(), b"v2", None, now, 0) for i in range(5)]
    rows += [(b"k9", None, None, now, 0)]  # a tombstone: k9 deleted
    produce_all(clients.producer(east), topic_name, rows)
    run_all(path, spark, topic_name)  # west holds every value, superseded ones included

    time.sleep(0.5)  # older than segment.ms: the next record rolls the segment, the cleaner takes the old one
    produce_all(clients.producer(east), topic_name, [(b"k5", b"v2", None, int(time.time() * 1000), 0)])
    deadline = time.monotonic() + 90
    while (b"k0", b"v1") in {(r.key, r.value) for r in read_topic(east, topic_name)}:
        assert time.monotonic() < deadline, "east's log cleaner never compacted the topic"
        time.sleep(1)
    run_all(path, spark, topic_name)
    assert len(read_topic(west, topic_name)) == 17 > len(read_topic(east, topic_name))

    result = run_data_quality(cfg, spark, publish_results=False)
    assert result.success, result.summary()
    # k2 written on west itself (as after a failover): its latest value there is not a copy; a
    # cleaner may drop the copy under it, so the key is not judged
    produce_all(clients.producer(west), topic_name, [(b"k2", b"written on west", None, int(time.time() * 1000), 0)])
    result = run_data_quality(cfg, spark, publish_results=False)
    assert result.success, result.summary()

    # k1's latest copy on west is now its first value again (provenance names east's offset 1)
    first = next(r for r in read_topic(west, topic_name) if r.key == b"k1")
    produce_all(
        clients.producer(west), topic_name, [(first.key, first.value, list(first.headers), first.timestamp_ms, 0)]
    )
    result = run_data_quality(cfg, spark, publish_results=False)
    assert not result.success
    where = f"flow east_to_west east/{topic_name}[0] -> west/{topic_name}[0]"
    lines = [ln for ln in result.failures if where in ln]
    assert any(ln.startswith("no_missing") and "missing=1" in ln for ln in lines), result.summary()
    assert not any(ln.startswith(("no_unexpected", "no_duplicates", "counts_equal")) for ln in lines), result.summary()


def test_compacted_target_rewritten_between_planning_and_reading(
    lab, lab_config, spark, tmp_path, receivers, topic_name
):
    """Keys rewritten after the windows are planned: the target's cleaner drops every planned
    copy before the tasks read. The newer copies are in flight for this run, not missing ones."""
    from kafka_dr.kafka.dq_inputs import plan_windows
    from kafka_dr.spark.comparison import comparison_rows

    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    hook, smtp = receivers
    path = dq_config(lab, tmp_path, [topic_name], hook, smtp)
    cfg = load_config(path)
    ensure_topic(clients.admin(east), topic_name, partitions=1, config={"cleanup.policy": "compact"})
    ensure_topic(clients.admin(west), topic_name, partitions=1, config=CLEANER)
    keys = [f"k{i}".encode() for i in range(4)]
    produce_all(clients.producer(east), topic_name, [(k, b"v1", None, int(time.time() * 1000), 0) for k in keys])
    run_all(path, spark, topic_name)
    (flow,) = [f for f in cfg.flows if f.source == "east"]
    windows = [w for w in plan_windows(cfg, flow, [topic_name]) if w.topic == topic_name]
    assert [(w.end, w.compacted) for w in windows] == [(4, True)]

    time.sleep(0.5)  # older than segment.ms: each rewrite rolls west's segment
    produce_all(clients.producer(east), topic_name, [(k, b"v2", None, int(time.time() * 1000), 0) for k in keys])
    run_all(path, spark, topic_name)
    time.sleep(0.5)
    produce_all(clients.producer(east), topic_name, [(b"k9", b"rolls", None, int(time.time() * 1000), 0)])
    run_all(path, spark, topic_name)
    deadline = time.monotonic() + 90
    while any(r.value == b"v1" for r in read_topic(west, topic_name)):
        assert time.monotonic() < deadline, "west's log cleaner never compacted the topic"
        time.sleep(1)

    (row,) = comparison_rows(spark, str(path), windows)
    assert (row["missing"], row["unexpected"], row["duplicated"]) == (0, 0, 0), row
    assert row["source_checksum"] == row["target_checksum"], row


def test_latency_is_judged_over_recent_copies_only(lab, lab_config, spark, tmp_path, receivers, topic_name):
    """Copies first made two hours ago, of records an hour older still (an outage's catch-up):
    outside a latency window of 15 minutes they have no latency figure, so nothing to judge;
    over every copy retained (window 0) the p99 is the hour they took."""
    import dataclasses

    from kafka_dr.core.provenance import provenance_headers
    from kafka_dr.kafka.dq_inputs import plan_windows
    from kafka_dr.spark.comparison import comparison_rows

    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    hook, smtp = receivers
    path = dq_config(lab, tmp_path, [topic_name], hook, smtp)
    cfg = load_config(path)
    for c in (east, west):
        ensure_topic(clients.admin(c), topic_name, partitions=1)
    now = int(time.time() * 1000)
    produce_all(clients.producer(east), topic_name, [(b"k%d" % i, b"v", None, now - 3 * 3600_000, 0) for i in range(5)])
    copies = [
        (
            r.key,
            r.value,
            [*r.headers, *provenance_headers("east", topic_name, 0, r.offset, now - 2 * 3600_000)],
            r.timestamp_ms,
            0,
        )
        for r in read_topic(east, topic_name)
    ]
    produce_all(clients.producer(west), topic_name, copies)
    (flow,) = [f for f in cfg.flows if f.source == "east"]
    # the hand-made copies stand for the flow's: its progress would be past them
    (window,) = [dataclasses.replace(w, end=5, limit=5) for w in plan_windows(cfg, flow, [topic_name])]

    (recent,) = comparison_rows(spark, str(path), [window], latency_since_ms=now - 900_000)
    assert (recent["missing"], recent["unexpected"], recent["latency_p99_ms"]) == (0, 0, None), recent
    (every,) = comparison_rows(spark, str(path), [window])
    assert every["latency_p99_ms"] == 3600_000, every


def test_incremental_runs_compare_only_what_is_new(lab, lab_config, spark, tmp_path, receivers, topic_name):
    """The first run verifies everything and leaves watermarks; a run with nothing new starts no
    Spark at all; new records are compared alone; a copy of an already verified record written
    again on the target is a duplicate, and its partition is compared again until it is gone
    or a human looks (the other partitions move on)."""
    from kafka_dr.dq import run_data_quality

    cfg, east, west = replicated_setup(lab, lab_config, spark, tmp_path, receivers, [topic_name], partitions=2)
    first = run_data_quality(cfg, spark, publish_results=False)
    assert first.success, first.summary()
    f = first.figures
    assert (f["windows_full"], f["windows_from_watermark"], f["watermarks_written"]) == (4, 0, 4), f
    assert f["records_source"] == 80, f  # new topics: no watermark yet

    # nothing new: no window to read, so no Spark session (this master does not exist)
    idle = run_data_quality(cfg, publish_results=False, master="spark://127.0.0.1:9")
    assert idle.success, idle.summary()
    f = idle.figures
    assert (f["windows_from_watermark"], f["windows_read"], f["records_source"]) == (4, 0, 0), f

    produce_now(east, topic_name, "east-more", 30, 2)
    run_all(cfg.source_path, spark, topic_name)
    more = run_data_quality(cfg, spark, publish_results=False)
    assert more.success, more.summary()
    f = more.figures
    assert (f["windows_from_watermark"], f["records_source"], f["records_target"]) == (4, 30, 30), f

    # a verified copy written again on west: named as a duplicate although its first copy
    # was verified by an earlier run
    old = next(r for r in read_topic(west, topic_name) if origin_cluster(r.headers) == "east")
    produce_all(
        clients.producer(west),
        topic_name,
        [(old.key, old.value, list(old.headers), old.timestamp_ms, old.partition)],
    )
    where = f"flow east_to_west east/{topic_name}[{old.partition}] -> west/{topic_name}[{old.partition}]"
    for _ in range(2):  # the failed window keeps its watermark: the next run names it again
        bad = run_data_quality(cfg, spark, publish_results=False)
        assert not bad.success
        assert [ln for ln in bad.failures if ln.startswith(f"no_duplicates: {where}") and "duplicated=1" in ln], (
            bad.summary()
        )
        assert not [ln for ln in bad.failures if "no_unexpected" in ln or "no_missing" in ln], bad.summary()
        assert bad.figures["watermarks_written"] == 3, bad.figures
    assert not run_data_quality(cfg, spark, publish_results=False, full=True).success  # a full sweep agrees


def test_the_data_quality_bench_times_every_kind_of_run(lab):
    """``python -m kafka_dr.dq.bench``, short: full runs cold and warm, one with nothing new
    (no Spark), then one over the new records alone, each compared and passed."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_dr.dq.bench",
            "--config",
            str(lab.config_file),
            "--records",
            "3000",
            "--partitions",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    runs = [
        (r["full"], r["records_source"], r["records_target"], r["windows_read"], r["success"])
        for r in report["dq_runs"]
    ]
    assert runs == [
        (True, 3000, 3000, 2, True),
        (True, 3000, 3000, 2, True),
        (False, 0, 0, 0, True),
        (False, 3000, 3000, 2, True),
    ]
    assert report["dq_runs"][3]["windows_from_watermark"] == 2, report

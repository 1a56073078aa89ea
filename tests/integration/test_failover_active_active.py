"""Failover in active/active on the real lab: both flows copy the same topic names both ways
(provenance), so a group on east reads east's own records and copies of west's, and west
holds the two kinds in another order. The group must resume on west without skipping any
record it had not read, and the summary must count exactly what it reads again.
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import TopicPartition
from test_failover import _consume, isolated_config
from test_offset_translation import commit, produce

from kafka_checks import read_topic
from kafka_dr.core.config_load import load_config
from kafka_dr.core.provenance import Provenance
from kafka_dr.kafka import clients
from kafka_dr.kafka.copier import RangeCopier
from kafka_dr.kafka.copy_spec import RangeSpec
from kafka_dr.kafka.offset_translation import translate_group
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.kafka.writing import produce_all
from kafka_dr.spark.job import JobOptions, run_flow
from kafka_dr.workflows.failover import FailoverRun, format_summary, move_consumer_groups, rpo_report, run_failover
from kafka_dr.workflows.offset_sync import sync_group_offsets

pytestmark = [pytest.mark.lab]


def replicate(cfg, topic: str, *flows: str) -> None:
    """Each flow copies ``topic`` up to its source's end with the replication job's copier (a
    transaction per partition, progress on the target), without the Spark job's start-up."""
    for name in flows:
        flow = next(f for f in cfg.flows if f.name == name)
        c = clients.consumer(cfg.cluster(flow.source), "kafka-dr-tests")
        copier = RangeCopier(cfg, flow)
        try:
            for p in c.list_topics(topic, timeout=10).topics[topic].partitions:
                end = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                copier.copy(RangeSpec(topic, p, 0, end, topic))  # from the committed progress on
        finally:
            copier.close()
            c.close()


def identities(records, here: str) -> list[tuple[str, int]]:
    """(origin cluster, origin offset) of each record: a copy names its origin, a record of the
    cluster itself is (here, its offset)."""
    out = []
    for r in records:
        p = Provenance.from_headers(r.headers() if callable(getattr(r, "headers", None)) else r.headers)
        off = r.offset() if callable(r.offset) else r.offset
        out.append((p.cluster, p.offset) if p is not None else (here, off))
    return out


def east_down(path, tmp_path):
    """The same config with east's address refusing connections: the failover runs as with
    east lost, while the lab's east goes on serving the other tests."""
    import yaml

    doc = yaml.safe_load(path.read_text())
    doc["clusters"]["east"] = {"bootstrap_servers": "127.0.0.1:9"}
    dead = tmp_path / "east-down.yaml"
    dead.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_config(dead)


def two_origins(lab, lab_config, tmp_path, topic: str, partitions: int):
    """``topic`` on both clusters, every partition alike, and the config of both flows::

        east  0-4 ea   5-8 eb   9-11 W(wa)  12-15 W(wb)  16 marker
        west  0-2 wa   3-7 E(ea)  8 marker  9-12 wb  13-16 E(eb)  17 marker  18-19 wc

    Returns the config's path, the config and each cluster's records by partition."""
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic, partitions=partitions)
    path = isolated_config(lab, tmp_path, topic)
    cfg = load_config(path)
    for cluster, tag, per_partition, flows in (
        (west, "wa", 3, ()),
        (east, "ea", 5, ("east_to_west",)),
        (west, "wb", 4, ()),
        (east, "eb", 4, ("west_to_east", "east_to_west")),
        (west, "wc", 2, ()),
    ):
        produce(cluster, topic, tag, per_partition * partitions, partitions)
        if flows:
            replicate(cfg, topic, *flows)
    logs = [{p: [r for r in read_topic(c, topic) if r.partition == p] for p in range(partitions)} for c in (east, west)]
    return path, cfg, *logs


def test_failover_skips_no_unread_record_of_either_origin_and_counts_the_rereads(lab, lab_config, tmp_path, topic_name):
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    path, cfg, east_log, west_log = two_origins(lab, lab_config, tmp_path, topic_name, 3)
    e2w = next(f for f in cfg.flows if f.name == "east_to_west")
    assert [r.offset for r in east_log[0]] == list(range(16))
    assert [r.offset for r in west_log[0]] == [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19]

    # p0 read ea only: wa and wb (never read) sit before the translated point (E(eb) at 13), wc after it
    # p1 read ea, eb and W(wa): wb is the first unread, between what was read and the translated point
    #    (west's end); E(eb) after it is read again
    # p2 read everything up to east's end (the marker included): only wc is unread
    group = f"app-{topic_name[-6:]}"
    read_up_to = {0: 5, 1: 12, 2: 17}
    commit(east, group, {(topic_name, p): x for p, x in read_up_to.items()})
    read_on_east = {p: set(identities([r for r in east_log[p] if r.offset < x], "east")) for p, x in read_up_to.items()}
    synced = {r["partition"]: r for r in sync_group_offsets(cfg, e2w, groups=[group])}
    assert {p: (r["target_offset"], r["status"]) for p, r in synced.items()} == {
        0: (0, "exact"),
        1: (9, "exact"),
        2: (18, "exact"),
    }
    assert {p: r["reread"] for p, r in synced.items()} == {
        0: {"east": 5, "west": 0},
        1: {"east": 4, "west": 0},
        2: {"east": 0, "west": 0},
    }

    summary = run_failover(FailoverRun(east_down(path, tmp_path), "east", "west", groups=group, dry_run=False))
    moved = {g["partition"]: g for g in summary["consumer_groups"]}
    assert {p: (g["target_offset"], g.get("reread")) for p, g in moved.items()} == {
        p: (r["target_offset"], r["reread"]) for p, r in synced.items()
    }, moved
    assert "re-reads from there: 4 record(s) of east, 0 record(s) of west" in format_summary(summary)
    assert json.loads(json.dumps(summary))["consumer_groups"][1]["reread"] == {"east": 4, "west": 0}

    resumed = _consume(west, group, topic_name, None)
    for p in range(3):
        got = identities([m for m in resumed if m.partition() == p], "west")
        unread = set(identities(west_log[p], "west")) - read_on_east[p]
        assert unread - set(got) == set(), f"partition {p}: skipped {sorted(unread - set(got))}"
        again = [i for i in got if i in read_on_east[p]]
        assert {o: sum(1 for i in again if i[0] == o) for o in ("east", "west")} == moved[p]["reread"], (p, again)


def test_a_failover_from_a_stale_sync_bounds_the_rereads_of_both_origins(lab, lab_config, tmp_path, topic_name):
    """The group read on after its last sync, west's records (their copies on east) included:
    with east gone, the move reports the placement's re-reads exactly and bounds the rest per
    origin; the group's re-reads, counted here from what it read, stay within them."""
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    path, cfg, east_logs, west_logs = two_origins(lab, lab_config, tmp_path, topic_name, 1)
    east_log, west_log = east_logs[0], west_logs[0]
    e2w = next(f for f in cfg.flows if f.name == "east_to_west")
    group = f"app-{topic_name[-6:]}"
    synced_at, read_up_to = 9, 17  # synced having read east's own records; then west's copies too
    commit(east, group, {(topic_name, 0): synced_at})
    sync_group_offsets(cfg, e2w, groups=[group])
    commit(east, group, {(topic_name, 0): read_up_to})
    read_on_east = set(identities([r for r in east_log if r.offset < read_up_to], "east"))

    summary = run_failover(FailoverRun(east_down(path, tmp_path), "east", "west", groups=group, dry_run=False))
    (row,) = summary["consumer_groups"]
    # what the sync recorded as read of west's own: below the first copy of one at or after the
    # synced offset; since then the group can have read any of west's own records from there on
    u = next(p.offset for r in east_log if r.offset >= synced_at and (p := Provenance.from_headers(r.headers)))
    bounds = row["reread_since_sync_at_most_by_origin"]
    assert bounds["west"] == sum(1 for r in west_log if r.offset >= u and Provenance.from_headers(r.headers) is None)
    assert row["reread_since_sync_at_most"] == bounds["east"] + bounds["west"], row
    assert f"(at most {row['reread_since_sync_at_most']} record(s): {bounds['east']} of east, " in format_summary(
        summary
    )

    got = identities(_consume(west, group, topic_name, None), "west")
    unread = set(identities(west_log, "west")) - read_on_east
    assert unread - set(got) == set(), f"skipped {sorted(unread - set(got))}"
    again = {o: sum(1 for i in got if i in read_on_east and i[0] == o) for o in ("east", "west")}
    assert again["west"] > 0, again  # the stale sync is what this drills
    for origin in ("east", "west"):
        assert row["reread"][origin] <= again[origin] <= row["reread"][origin] + bounds[origin], (origin, again, row)


def test_rpo_and_translation_count_records_not_markers_and_only_the_configured_topics(
    lab, lab_config, spark, tmp_path, topic_name
):
    east, west = lab_config.cluster("east"), lab_config.cluster("west")
    for c in (east, west):
        ensure_topic(clients.admin(c), topic_name, partitions=2)
    path = isolated_config(lab, tmp_path, topic_name)
    cfg = load_config(path)
    e2w = next(f for f in cfg.flows if f.name == "east_to_west")
    produce(east, topic_name, "e", 10, 2)
    produce(west, topic_name, "w", 10, 2)
    # east: 0-4 e, 5-9 W(w), 10 the commit marker of west_to_east's transaction. east_to_west
    # then copies up to 10 as a continuous flow does: its progress stops before the marker
    replicate(cfg, topic_name, "west_to_east")
    run_flow(
        JobOptions(config=str(path), flow="east_to_west", mode="incremental", max_records_per_batch=10), spark=spark
    )
    c = clients.consumer(east, "kafka-dr-tests")
    assert [c.get_watermark_offsets(TopicPartition(topic_name, p), timeout=10)[1] for p in (0, 1)] == [11, 11]
    c.close()
    group = f"app-{topic_name[-6:]}"
    commit(east, group, {(topic_name, p): 11 for p in (0, 1)})

    got = translate_group(cfg, e2w, group)
    assert [(t.partition, t.status, t.target_offset, t.behind_records) for t in got] == [
        (0, "exact", 11, 0),
        (1, "exact", 11, 0),
    ]
    live = rpo_report(FailoverRun(cfg, "east", "west"))["flows"]["east_to_west"]
    assert [(e["topic"], e["partition"], e["missing_at_least"]) for e in live["partitions"]] == [
        (topic_name, 0, 0),
        (topic_name, 1, 0),
    ]
    assert (live["status"], live["missing_records_at_least"]) == ("exact", 0)

    sync_group_offsets(cfg, e2w, groups=[group])
    # figures an earlier config with the same flow name left on west, for a topic this one does not select
    stale = f"stale.{topic_name[-6:]}"
    produce_all(
        clients.producer(west),
        cfg.names.metrics_topic,
        [
            (
                b"east_to_west",
                json.dumps(
                    {
                        "flow": "east_to_west",
                        "topic": stale,
                        "partition": 0,
                        "target_topic": stale,
                        "end": 100,
                        "lag": 5,
                    }
                ).encode(),
                [],
                None,
                0,
            )
        ],
    )
    ensure_topic(clients.admin(west), stale, partitions=1)
    commit(west, cfg.names.progress_group("east_to_west"), {(stale, 0): 40})

    # east lost: what west knows (the sync's count, the job's last ends) says 0, and only this topic
    dead = east_down(path, tmp_path)
    rpo = rpo_report(FailoverRun(dead, "east", "west"), failed_answers=False)
    flow = rpo["flows"]["east_to_west"]
    assert [
        (e["topic"], e["partition"], e["missing_at_least"], e["unaccounted_offsets"], e["status"])
        for e in flow["partitions"]
    ] == [(topic_name, 0, 0, 0, "approximate"), (topic_name, 1, 0, 0, "approximate")], flow
    assert "east_to_west: at least 0 record(s) not replicated; RPO window" in format_summary(
        {"failed": "east", "survivor": "west", "rpo": rpo}
    )
    moved = move_consumer_groups(FailoverRun(dead, "east", "west", groups=group, dry_run=True))
    assert [(g["partition"], g["status"], g["target_offset"]) for g in moved] == [(0, "exact", 11), (1, "exact", 11)], (
        moved
    )

"""What a copy asked of the brokers (kafka_dr.bench.broker_load), with literal batches and figures."""

import struct
from collections import Counter

from kafka_dr.bench.broker_load import (
    Batches,
    broker_figures,
    broker_table,
    figures,
    segment_batches,
    topic_batches,
)


def batch(base_offset: int, records: int, control: bool = False, body: int = 40) -> bytes:
    """A record batch v2 as it lies in a segment: its header, then ``body`` bytes of records."""
    attributes = 0x20 | 0x10 if control else 0
    header_rest = struct.pack(
        ">ibIhiqqqhii", 0, 2, 0, attributes, records - 1, 1_000, 1_000, 7, 0, 0, records
    )  # leader epoch .. records count: 49 bytes after baseOffset and batchLength
    return struct.pack(">qi", base_offset, len(header_rest) + body) + header_rest + b"\0" * body


def test_a_segment_counts_data_batches_their_records_and_markers_apart():
    seg = batch(0, 100) + batch(100, 50) + batch(150, 1, control=True) + batch(151, 7)
    assert segment_batches(seg) == Batches(data_batches=3, records=157, control_batches=1, data_bytes=3 * 101)


def test_a_batch_cut_short_at_the_segments_end_is_left_out():
    seg = batch(0, 10) + batch(10, 20)[:-5]
    assert segment_batches(seg) == Batches(1, 10, 0, 101)
    assert segment_batches(b"") == Batches()


def test_a_topics_batches_come_from_one_replica_of_each_partition_of_the_cluster_asked(tmp_path):
    for broker, cluster in (("b1", "WEST"), ("b2", "WEST"), ("source", "EAST")):
        (tmp_path / broker).mkdir()
        (tmp_path / broker / "meta.properties").write_text(f"#\nnode.id=1\nversion=1\ncluster.id={cluster}\n")
    for broker in ("b1", "b2", "source"):  # b1 and b2 hold replicas, counted once; the source's has the same name
        for p, records in ((0, 30), (1, 12)):
            d = tmp_path / broker / f"copy.t-{p}"
            d.mkdir()
            tail = b"" if broker == "source" else batch(records, 1, control=True)
            (d / "00000000000000000000.log").write_bytes(batch(0, records) + tail)
    (tmp_path / "b1" / "copy.t.other-0").mkdir()  # another topic whose name starts the same
    dirs = [tmp_path / "source", tmp_path / "b1", tmp_path / "b2"]
    assert topic_batches(dirs, "copy.t", "WEST") == Batches(2, 42, control_batches=2, data_bytes=202)
    assert topic_batches(dirs, "copy.t", "EAST") == Batches(2, 42, control_batches=0, data_bytes=202)
    assert topic_batches(dirs, "absent", "WEST") is None


def test_figures_are_the_requests_between_the_reads_and_none_when_unreadable():
    before = Counter(
        {"Produce": 100, "EndTxn": 3, "TxnOffsetCommit": 3, "Fetch": 9, "FetchConsumer": 4, "FetchFollower": 5}
    )
    after = Counter(
        {
            "Produce": 300,
            "EndTxn": 5,
            "TxnOffsetCommit": 5,
            "AddPartitionsToTxn": 2,
            "Fetch": 99,
            "FetchConsumer": 24,
            "FetchFollower": 75,
        }
    )
    got = figures(before, after, Batches(40, 4000, 16, 600_000), copy_seconds=2.0)
    assert got == {
        "produce_requests": 200,
        "produce_requests_per_s": 100,
        "fetch_requests": 20,
        "follower_fetch_requests": 70,
        "transaction_requests": 6,
        "log_records": 4000,
        "log_batches": 40,
        "control_batches": 16,
        "log_bytes": 600_000,
    }
    assert set(figures(None, after, None, 2.0).values()) == {None}


def test_rounds_add_up_and_a_round_without_a_figure_voids_it():
    rounds = [
        {
            "produce_requests": 100,
            "fetch_requests": 4,
            "follower_fetch_requests": 10,
            "transaction_requests": 4,
            "log_records": 1000,
            "log_batches": 10,
            "control_batches": 8,
            "log_bytes": 150_000,
        },
        {
            "produce_requests": 300,
            "fetch_requests": 16,
            "follower_fetch_requests": 30,
            "transaction_requests": 6,
            "log_records": 1000,
            "log_batches": 40,
            "control_batches": 8,
            "log_bytes": 170_000,
        },
    ]
    assert broker_figures(rounds, records=2000, window=4.0) == {
        "produce_requests_per_s": 100,
        "records_per_produce_request": 5.0,
        "records_per_fetch_request": 100.0,
        "records_per_follower_fetch": 50.0,
        "transaction_requests": 10,
        "records_per_batch": 40.0,
        "log_bytes_per_record": 160.0,
        "control_batches": 16,
    }
    rounds[1]["produce_requests"] = None
    got = broker_figures(rounds, records=2000, window=4.0)
    assert got["produce_requests_per_s"] is None and got["records_per_produce_request"] is None
    assert got["records_per_batch"] == 40.0


def test_the_table_section_shows_each_systems_requests_and_batches():
    flat = {
        "ours_s100_produce_requests_per_s": 1234,
        "ours_s100_records_per_produce_request": 80.5,
        "ours_s100_records_per_fetch_request": 400.0,
        "ours_s100_records_per_follower_fetch": 120.0,
        "ours_s100_transaction_requests": 40,
        "ours_s100_records_per_batch": 10.1,
        "ours_s100_log_bytes_per_record": 161.5,
        "ours_s100_control_batches": 160,
        "rawpipe_s100_produce_requests_per_s": None,
        "rawpipe_s100_records_per_produce_request": None,
        "rawpipe_s100_transaction_requests": None,
        "rawpipe_s100_records_per_batch": 500.0,
        "rawpipe_s100_log_bytes_per_record": 112.0,
        "rawpipe_s100_control_batches": 0,
    }
    lines = broker_table(flat, ["ours", "rawpipe"], [100])
    assert lines[1].startswith("What the copy asked of the brokers")
    assert lines[-2].split() == ["ours", "100", "1,234", "80.5", "400.0", "120.0", "10.1", "161.5", "40", "160"]
    assert lines[-1].split() == ["rawpipe", "100", "-", "-", "-", "-", "500.0", "112.0", "-", "0"]
    assert broker_table({}, ["ours"], [100]) == []

"""An open range (a streaming task's copy) commits as soon as it has read everything fetched
(group commit), not only when ``chunk_seconds`` is up: that is what keeps a continuous flow's
latency near one commit under a steady load (docs/benchmarks.md).

Checked by counting, not timing: records arrive in three bursts two seconds apart while the
chunk may last a minute. With group commit each burst is its own transaction; without it
the copy would hold all three in one transaction that ends after 60 s.
"""

from __future__ import annotations

import threading
import time

import pytest
from test_replication import east_to_west_one_partition

from kafka_checks import read_topic
from kafka_dr.kafka import clients
from kafka_dr.kafka.copier import RangeCopier
from kafka_dr.kafka.copy_spec import OPEN, RangeSpec
from kafka_dr.kafka.copy_tuning import CopyTuning
from kafka_dr.kafka.progress_store import read_committed_progress
from kafka_dr.kafka.writing import produce_all

pytestmark = [pytest.mark.lab]

BURSTS, PER_BURST = 3, 5


def test_open_range_commits_each_burst_once_it_has_caught_up(lab, tmp_path, topic_name):
    _config, cfg, flow = east_to_west_one_partition(lab, tmp_path, topic_name)
    east, west = cfg.cluster("east"), cfg.cluster("west")
    total = BURSTS * PER_BURST

    started = threading.Event()  # the copy knows its start: bursts from now on are read as they come

    def bursts() -> None:
        started.wait(120)
        producer = clients.producer(east)
        for b in range(BURSTS):
            produce_all(
                producer, topic_name, [(b"k", b"v%d" % (b * PER_BURST + i), [], None, 0) for i in range(PER_BURST)]
            )
            time.sleep(2.0)  # far apart enough that a loaded machine still reads each burst alone

    committed: list[int] = []

    def on_commit(_result, next_offset: int, _latencies) -> None:
        committed.append(next_offset)
        started.set()

    copier = RangeCopier(cfg, flow, tuning=CopyTuning(chunk_seconds=60.0))
    writer = threading.Thread(target=bursts, daemon=True)
    writer.start()
    try:
        result = copier.copy(
            RangeSpec(topic_name, 0, 0, OPEN, topic_name),
            until=lambda: bool(committed) and committed[-1] >= total,
            on_commit=on_commit,
        )
    finally:
        copier.close()
        writer.join(30)
    assert result.written == total
    # one transaction per burst at least (a burst may straddle two fetches), never all in one
    assert result.transactions >= BURSTS, (result.transactions, committed)
    assert [r.value for r in read_topic(west, topic_name)] == [b"v%d" % i for i in range(total)]
    assert read_committed_progress(cfg, flow, [(topic_name, 0)])[(topic_name, 0)]["next_offset"] == total

"""Warm backlogs (``--warm-backlog``, on in full runs): each system already running in
continuous mode and idle on a fresh topic when a backlog arrives, produced as fast as the
bench's producer writes it. No launch is in the window: it runs from the backlog's first
record on the target to the system's own completion test. This is how a system that runs all
the time (MirrorMaker 2 as deployed, ours' continuous flow) meets a burst, beside the batch
runs of :func:`kafka_dr.bench.run.backlog_phase`, which pay their start-up.

The producer runs on the same machine during the window, so the machine's busy CPU includes
it: the figures compared are the system's own CPU per record and the brokers', and the copy
can be no faster than the backlog arrives (``produce_records_per_s`` beside it says so).
"""

from __future__ import annotations

import threading
import time

from confluent_kafka.admin import AdminClient

from kafka_dr.bench import load
from kafka_dr.bench.cpu import CpuWindow
from kafka_dr.bench.procmem import PeakRss
from kafka_dr.bench.report import failed, megabytes
from kafka_dr.bench.systems import System
from kafka_dr.bench.warm_report import WARM_METRICS, per_record
from kafka_dr.kafka.clients import client_config
from kafka_dr.kafka.topics import ensure_topic


def warm_backlog_phase(
    system: System, topic: str, partitions: int, size: int, records: int, timeout: float, brokers: tuple[int, ...] = ()
) -> dict:
    """``system`` started in continuous mode on a fresh ``topic``, pinged until it copies, then
    ``records`` records of ``size`` bytes produced while it runs; the copy window's figures."""
    e_admin = AdminClient(client_config(system.source))
    ensure_topic(e_admin, topic, partitions)
    system.start(topic, partitions, continuous=True)
    rss = PeakRss(system.pid).start()
    try:
        w_admin = AdminClient(client_config(system.target))
        arrived = lambda: _target_total(w_admin, system, topic, partitions) > 0  # noqa: E731
        # MirrorMaker creates its target topic only once it copies
        pings = load.ping_until(system.source, topic, partitions, arrived, system.alive, timeout)
        cpu = CpuWindow(system.pid, brokers).start()
        try:
            first, done, produced = _copy_arriving(
                system, e_admin, w_admin, topic, partitions, size, records, pings, timeout
            )
        finally:
            cpu.stop()
    except Exception as e:
        raise RuntimeError(
            f"{system.name}: warm backlog on {topic}: {e}\n--- {system.name} log tail ---\n{system.log_tail()}"
        ) from None
    finally:
        system.stop()
        peak = rss.stop()
    window = max(done - first, 1e-3)
    copied = load.count_records(system.target, system.target_topic(topic), partitions) - produced.pings
    own = cpu.figures(first, done, records)
    return {
        "records_per_s": round(records / window),
        "copy_seconds": round(window, 2),
        "produce_records_per_s": round(records / produced.seconds) if produced.seconds > 0 else None,
        "records": records,
        "copied": copied,
        "complete": copied == records,
        "peak_rss_mb": megabytes(peak),
        "cpu_own_cores": own["cpu_own_cores"],
        "cpu_broker_cores": own["cpu_broker_cores"],
        **per_record(own, window, records),
    }


class _Produced:
    def __init__(self, pings: int) -> None:
        self.pings, self.seconds, self.ends, self.error = pings, 0.0, None, None


def _copy_arriving(
    system, e_admin, w_admin, topic, partitions, size, records, pings, timeout
) -> tuple[float, float, _Produced]:
    """Produce the backlog in a thread and watch the target: (first backlog record on the
    target, copy done, how it was produced), monotonic seconds."""
    base = _target_total(w_admin, system, topic, partitions)
    produced = _Produced(pings)

    def produce() -> None:
        try:
            produced.seconds = load.produce_backlog(system.source, topic, records, size, partitions).seconds
            produced.ends = load.end_offsets(e_admin, topic, partitions)
        except Exception as e:  # noqa: BLE001 - raised in the watching thread
            produced.error = e

    producer = threading.Thread(target=produce, name="warm-backlog-producer", daemon=True)
    start, first = time.monotonic(), None
    producer.start()
    while True:
        now = time.monotonic()
        total = _target_total(w_admin, system, topic, partitions)
        if first is None and total > base:
            first = now
        if produced.error is not None:
            raise produced.error
        if produced.ends is not None and system.done(topic, partitions, produced.ends, total):
            return (first if first is not None else now), time.monotonic(), produced
        if now - start > timeout:
            raise TimeoutError(f"not complete after {timeout:.0f}s ({total - base} offsets of the backlog so far)")
        if not system.alive():
            raise RuntimeError(f"the system stopped before the copy was complete ({total - base} offsets so far)")
        time.sleep(0.1)


def _target_total(w_admin: AdminClient, system: System, topic: str, partitions: int) -> int:
    try:
        return sum(max(0, x) for x in load.end_offsets(w_admin, system.target_topic(topic), partitions))
    except Exception:  # noqa: BLE001 - the target topic may not exist yet
        return 0


def warm_phase(
    sys_objs: list[System], topic: str, size: int, records: int, partitions: int, timeout: float, say, brokers, drop
) -> dict[str, dict]:
    """Every system's warm backlog of ``size``-byte records, one after another, each on a topic
    of its own (``<topic>.<system>``, dropped once counted by ``drop(topic)``); a system that
    fails carries the error in its figures."""
    out: dict[str, dict] = {}
    for s in sys_objs:
        t = f"{topic}.{s.name}"
        try:
            r = warm_backlog_phase(s, t, partitions, size, records, timeout, brokers)
        except Exception as e:  # noqa: BLE001 - one system failing must not hide the others' figures
            out[s.name] = failed(WARM_METRICS, e, records=records, complete=False)
            say(f"[bench] {s.name:<8} warm s{size}: FAILED: {out[s.name]['error']}")
            continue
        finally:
            drop(t)
        out[s.name] = r
        say(
            f"[bench] {s.name:<8} warm s{size}: {r['records_per_s']:,} records/s over {r['copy_seconds']}s "
            f"(produced at {r['produce_records_per_s']:,}/s), copied {r['copied']:,}/{r['records']:,}, "
            f"own {r['cpu_own_cores']} cores ({r['cpu_own_us_per_record']} us/record), "
            f"brokers {r['cpu_broker_us_per_record']} us/record, peak RSS {r['peak_rss_mb']} MB"
        )
    return out

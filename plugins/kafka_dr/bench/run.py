"""The benchmark scenario, one run, the same brokers, topics and data for every system.

For each value size: one backlog topic on ``east`` (``records`` records, ``partitions``
partitions, 3 headers) is produced once; then each system in turn starts, copies it into its
own fresh target topic on ``west`` and stops. Throughput is measured over the copy window,
from the first record's arrival on the target to the system's own completion (start-up is
reported separately); the copy is then counted with a ``read_committed`` consumer.

Latency: each system gets a fresh topic of the same shape; it is started in continuous mode,
pinged until a record comes through, then a steady producer runs at ``latency_rate`` records/s
(below saturation); after a warm-up, every record's arrival time on the target minus its
produce timestamp is one sample. p50/p99 over the samples.

Memory: peak RSS of each system's process tree (sampled every 250 ms), per phase.
Systems run one after another, never at the same time.
"""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path

from confluent_kafka.admin import AdminClient

from kafka_dr.bench import load
from kafka_dr.bench.procmem import PeakRss
from kafka_dr.bench.report import BACKLOG_METRICS, LATENCY_METRICS, flatten
from kafka_dr.bench.systems import Mm2, Ours, RawPipe, System
from kafka_dr.core.config_load import load_config
from kafka_dr.kafka.clients import client_config
from kafka_dr.kafka.topics import ensure_topic

log = logging.getLogger("kafka_dr.bench")

def failed(metrics, error: Exception, **known) -> dict:
    """A phase that failed: every figure present (``None``), the error's first line kept."""
    return {**{m: None for m in metrics}, **known, "error": (str(error).strip().splitlines() or [repr(error)])[0][:300]}


def make_systems(names, cfg, config_path: Path, workdir: Path) -> list[System]:
    makers = {"ours": lambda: Ours(cfg, workdir, config_path), "mm2": lambda: Mm2(cfg, workdir), "rawpipe": lambda: RawPipe(cfg, workdir)}
    return [makers[n]() for n in names]


def _mb(b: int) -> int:
    return int(round(b / 1e6))


def backlog_phase(system: System, topic: str, partitions: int, size: int, source_ends: list[int], timeout: float) -> dict:
    west = system.target
    started = time.monotonic()
    system.start(topic, partitions, continuous=False)
    rss = PeakRss(system.pid).start()
    try:
        tl = load.watch_arrivals(west, system.target_topic(topic), partitions,
                                 lambda total: system.done(topic, partitions, source_ends, total), started, timeout, alive=system.alive)
    except Exception as e:
        raise RuntimeError(f"{system.name}: copying {topic}: {e}\n--- {system.name} log tail ---\n{system.log_tail()}") from None
    finally:
        system.stop()
        peak = rss.stop()
    records = sum(source_ends)
    copied = load.count_records(west, system.target_topic(topic), partitions)
    window = max(tl.done - tl.first, 1e-3)
    return {"records_per_s": round(records / window), "mb_per_s": round(records * size / window / 1e6, 2),
            "copy_seconds": round(window, 2), "startup_seconds": round(tl.first - started, 2), "records": records,
            "copied": copied, "complete": copied == records, "peak_rss_mb": _mb(peak)}


def latency_phase(system: System, topic: str, partitions: int, rate: float, seconds: float, warmup: float, timeout: float) -> dict:
    east, west = system.source, system.target
    ensure_topic(AdminClient(client_config(east)), topic, partitions)
    system.start(topic, partitions, continuous=True)
    rss = PeakRss(system.pid).start()
    probe = load.ArrivalProbe(west, system.target_topic(topic), partitions)
    steady = None
    try:
        load.wait_for_topic(west, system.target_topic(topic), timeout)
        probe.start()
        pinger = load.producer(east, **{"linger.ms": 0})
        pings, deadline = 0, time.monotonic() + timeout
        while probe.seen == 0:  # started and copying
            if not system.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{system.name}: no record came through within {timeout:.0f}s")
            pinger.produce(topic, key=b"ping", value=b"ping", partition=pings % partitions)
            pinger.flush(10)
            pings += 1
            time.sleep(0.5)
        steady = load.SteadyProducer(east, topic, partitions, rate)
        steady.start()
        time.sleep(warmup)
        probe.since_ms = int(time.time() * 1000)
        time.sleep(seconds)
        steady.stop()
        end = time.monotonic() + 90.0  # a slow micro-batch must not lose its samples
        while probe.seen < pings + steady.sent and time.monotonic() < end:  # the tail
            time.sleep(0.2)
    except Exception as e:
        raise RuntimeError(f"{system.name}: latency on {topic}: {e}\n--- {system.name} log tail ---\n{system.log_tail()}") from None
    finally:
        if steady is not None and steady.is_alive():
            steady.stop()
        probe.stop()
        system.stop()
        peak = rss.stop()
    lat = probe.latencies
    return {"p50_ms": load.percentile(lat, 0.50), "p99_ms": load.percentile(lat, 0.99), "samples": len(lat),
            "sent": steady.sent, "peak_rss_mb": _mb(peak)}


def run_bench(config_path: Path, workdir: Path, records: int, sizes: list[int], partitions: int = 8,
              latency_rate: int = 5000, latency_seconds: float = 30.0, warmup_seconds: float = 5.0,
              systems: tuple[str, ...] = ("ours", "mm2", "rawpipe"), timeout: float = 900.0, say=print) -> dict:
    """Run the whole scenario; returns the flat figures (see :mod:`kafka_dr.bench.report`)."""
    cfg = load_config(config_path)
    east = cfg.cluster("east")
    run = f"bench.{uuid.uuid4().hex[:6]}"
    workdir = Path(workdir) / run
    sys_objs = make_systems(systems, cfg, Path(config_path), workdir)
    e_admin = AdminClient(client_config(east))
    results: dict[str, dict[str, dict]] = {s.name: {} for s in sys_objs}
    for size in sizes:
        topic = f"{run}.s{size}"
        ensure_topic(e_admin, topic, partitions)
        secs = load.produce_backlog(east, topic, records, size, partitions)
        say(f"[bench] {topic}: {records:,} records of {size} B produced in {secs:.1f}s")
        ends = load.end_offsets(e_admin, topic, partitions)
        for s in sys_objs:
            try:
                r = backlog_phase(s, topic, partitions, size, ends, timeout)
            except Exception as e:  # noqa: BLE001 - one system failing must not hide the others' figures
                r = failed(BACKLOG_METRICS, e, records=sum(ends), complete=False)
                say(f"[bench] {s.name:<8} s{size}: FAILED: {r['error']}")
                results[s.name][f"s{size}"] = r
                continue
            results[s.name][f"s{size}"] = r
            say(f"[bench] {s.name:<8} s{size}: {r['records_per_s']:,} records/s over {r['copy_seconds']}s "
                f"(start-up {r['startup_seconds']}s), copied {r['copied']:,}/{r['records']:,}, peak RSS {r['peak_rss_mb']} MB")
    for s in sys_objs:
        try:
            r = latency_phase(s, f"{run}.lat.{s.name}", partitions, latency_rate, latency_seconds, warmup_seconds, min(timeout, 300))
        except Exception as e:  # noqa: BLE001 - as above
            r = failed(LATENCY_METRICS, e)
            say(f"[bench] {s.name:<8} latency: FAILED: {r['error']}")
        results[s.name]["latency"] = r
        say(f"[bench] {s.name:<8} latency: p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms ({r['samples']:,} samples), peak RSS {r['peak_rss_mb']} MB")
    params = {"run": run, "records": records, "partitions": partitions, "sizes": list(sizes), "latency_rate": latency_rate,
              "latency_seconds": latency_seconds}
    return flatten(params, {s.name: s.guarantee for s in sys_objs}, results)

"""Latency phases of the benchmark: each system copies a steady stream in continuous mode and
every record's arrival time on the target minus its produce timestamp is one sample (see
:mod:`kafka_dr.bench.run` for the scenario)."""

from __future__ import annotations

import time

from confluent_kafka.admin import AdminClient

from kafka_dr.bench import disk, load
from kafka_dr.bench.procmem import PeakRss
from kafka_dr.bench.report import (
    LATENCY_METRICS,
    failed,
    latency_figures,
    latency_phase_name,
    megabytes,
    round_schedule,
)
from kafka_dr.bench.systems import System
from kafka_dr.kafka.clients import client_config
from kafka_dr.kafka.topics import ensure_topic


def latency_phase(
    system: System, topic: str, partitions: int, rates: list[int], seconds: float, warmup: float, timeout: float
) -> dict[int, dict]:
    """One round: the system started on a fresh ``topic``, measured at each rate, stopped; per
    rate its samples (``latencies``), ``sent`` and the round's ``peak_rss_mb``."""
    ensure_topic(AdminClient(client_config(system.source)), topic, partitions)
    system.start(topic, partitions, continuous=True)
    rss = PeakRss(system.pid).start()
    try:
        by_rate = measure_latency(system, topic, partitions, rates, seconds, warmup, timeout)
    finally:
        system.stop()
        peak = rss.stop()
    for r in by_rate.values():
        r["peak_rss_mb"] = megabytes(peak)
    return by_rate


def measure_latency(
    system: System, topic: str, partitions: int, rates: list[int], seconds: float, warmup: float, timeout: float
) -> dict[int, dict]:
    """Ping ``topic`` until the running system copies a record, then a steady load at each rate
    in turn: ``warmup`` seconds unmeasured, ``seconds`` measured, and the tail waited for. Per
    rate the samples in ms (``latencies``) and ``sent`` (``peak_rss_mb`` is the caller's)."""
    east, west = system.source, system.target
    probe = load.ArrivalProbe(west, system.target_topic(topic), partitions)
    steady, out = None, {}
    try:
        load.wait_for_topic(west, system.target_topic(topic), timeout)
        probe.start()
        expected = load.ping_until(east, topic, partitions, lambda: probe.seen > 0, system.alive, timeout)
        for rate in rates:
            steady = load.SteadyProducer(east, topic, partitions, rate)
            steady.start()
            time.sleep(warmup)
            probe.latencies, probe.since_ms = [], int(time.time() * 1000)
            time.sleep(seconds)
            probe.until_ms = int(time.time() * 1000)
            steady.stop()
            expected += steady.sent
            end = time.monotonic() + 90.0  # a slow micro-batch must not lose its samples
            while probe.seen < expected and time.monotonic() < end:  # the tail
                time.sleep(0.2)
            out[rate] = {"latencies": probe.latencies, "sent": steady.sent, "peak_rss_mb": None}
            probe.since_ms = probe.until_ms = 1 << 62
    except Exception as e:
        raise RuntimeError(
            f"{system.name}: latency on {topic}: {e}\n--- {system.name} log tail ---\n{system.log_tail()}"
        ) from None
    finally:
        if steady is not None and steady.is_alive():
            steady.stop()
        probe.stop()
    return out


def latency_rounds_phase(
    sys_objs: list[System],
    run: str,
    partitions: int,
    rates: list[int],
    seconds: float,
    warmup: float,
    rounds: int,
    timeout: float,
    say=print,
) -> dict[str, dict[str, dict]]:
    """Every system's latency at every rate in ``rounds`` rounds, in the order of
    :func:`~kafka_dr.bench.report.round_schedule`, each round a fresh start on a fresh topic
    after the page cache was written out; the figures per system and phase (``latency<rate>``).
    A system whose round fails is not measured again, and its figures carry the error."""
    done: dict[str, dict[int, list[dict]]] = {s.name: {r: [] for r in rates} for s in sys_objs}
    failures: dict[str, dict] = {}
    for i, order in enumerate(round_schedule(sys_objs, rounds)):
        for s in order:
            if s.name in failures:
                continue
            synced = disk.write_back()
            try:
                by_rate = latency_phase(s, f"{run}.lat{i}.{s.name}", partitions, rates, seconds, warmup, timeout)
            except Exception as e:  # noqa: BLE001 - one system failing must not hide the others' figures
                failures[s.name] = failed(LATENCY_METRICS, e, synced_mb=synced)
                say(f"[bench] {s.name:<8} latency round {i + 1}/{rounds}: FAILED: {failures[s.name]['error']}")
                continue
            for rate, r in by_rate.items():
                done[s.name][rate].append({**r, "synced_mb": synced if rate == rates[0] else 0})
                one = latency_figures([r])
                say(
                    f"[bench] {s.name:<8} latency round {i + 1}/{rounds} at {rate:,}/s: p50 {one['p50_ms']} ms, "
                    f"p99 {one['p99_ms']} ms ({one['samples']:,} samples), peak RSS {one['peak_rss_mb']} MB, "
                    f"{synced} MB synced first"
                )
    out: dict[str, dict[str, dict]] = {}
    for s in sys_objs:
        out[s.name] = {}
        for rate in rates:
            out[s.name][latency_phase_name(rate)] = r = failures.get(s.name) or latency_figures(done[s.name][rate])
            if s.name not in failures:
                say(
                    f"[bench] {s.name:<8} latency at {rate:,}/s: p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms over "
                    f"{rounds} round(s) ({r['samples']:,} samples), p99 by round {r['p99_ms_by_round']}"
                )
    return out

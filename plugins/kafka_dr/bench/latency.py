"""Latency phases of the benchmark: each system copies a steady stream in continuous mode and
every record's arrival time on the target minus its produce timestamp is one sample (see
:mod:`kafka_dr.bench.run` for the scenario)."""

from __future__ import annotations

import time

from confluent_kafka.admin import AdminClient

from kafka_dr.bench import disk, load
from kafka_dr.bench.procmem import PeakRss
from kafka_dr.bench.report import LATENCY_METRICS, failed, latency_figures, megabytes, round_schedule
from kafka_dr.bench.systems import System
from kafka_dr.kafka.clients import client_config
from kafka_dr.kafka.topics import ensure_topic


def latency_phase(
    system: System, topic: str, partitions: int, rate: float, seconds: float, warmup: float, timeout: float
) -> dict:
    """One round: the system started on a fresh ``topic``, measured, stopped; its samples
    (``latencies``), ``sent`` and ``peak_rss_mb``."""
    ensure_topic(AdminClient(client_config(system.source)), topic, partitions)
    system.start(topic, partitions, continuous=True)
    rss = PeakRss(system.pid).start()
    try:
        r = measure_latency(system, topic, partitions, rate, seconds, warmup, timeout)
    finally:
        system.stop()
        peak = rss.stop()
    r["peak_rss_mb"] = megabytes(peak)
    return r


def measure_latency(
    system: System, topic: str, partitions: int, rate: float, seconds: float, warmup: float, timeout: float
) -> dict:
    """Ping ``topic`` until the running system copies a record, then a steady load; the
    samples in ms (``latencies``) and ``sent`` (``peak_rss_mb`` is filled in by the caller)."""
    east, west = system.source, system.target
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
        raise RuntimeError(
            f"{system.name}: latency on {topic}: {e}\n--- {system.name} log tail ---\n{system.log_tail()}"
        ) from None
    finally:
        if steady is not None and steady.is_alive():
            steady.stop()
        probe.stop()
    return {"latencies": probe.latencies, "sent": steady.sent, "peak_rss_mb": None}


def latency_rounds_phase(
    sys_objs: list[System],
    run: str,
    partitions: int,
    rate: int,
    seconds: float,
    warmup: float,
    rounds: int,
    timeout: float,
    say=print,
) -> dict[str, dict]:
    """Every system's latency in ``rounds`` rounds of ``seconds / rounds`` each, in the order of
    :func:`~kafka_dr.bench.report.round_schedule`, each round on a fresh topic after the page
    cache was written out; the figures per system. A system whose round fails is not measured
    again, and its figures carry the error."""
    done: dict[str, list[dict]] = {s.name: [] for s in sys_objs}
    failures: dict[str, dict] = {}
    for i, order in enumerate(round_schedule(sys_objs, rounds)):
        for s in order:
            if s.name in failures:
                continue
            synced = disk.write_back()
            try:
                r = {
                    **latency_phase(s, f"{run}.lat{i}.{s.name}", partitions, rate, seconds / rounds, warmup, timeout),
                    "synced_mb": synced,
                }
            except Exception as e:  # noqa: BLE001 - one system failing must not hide the others' figures
                failures[s.name] = failed(LATENCY_METRICS, e, synced_mb=synced)
                say(f"[bench] {s.name:<8} latency round {i + 1}/{rounds}: FAILED: {failures[s.name]['error']}")
                continue
            done[s.name].append(r)
            one = latency_figures([r])
            say(
                f"[bench] {s.name:<8} latency round {i + 1}/{rounds}: p50 {one['p50_ms']} ms, p99 {one['p99_ms']} ms "
                f"({one['samples']:,} samples), peak RSS {one['peak_rss_mb']} MB, {synced} MB synced first"
            )
    out = {}
    for s in sys_objs:
        out[s.name] = r = failures.get(s.name) or latency_figures(done[s.name])
        if s.name not in failures:
            say(
                f"[bench] {s.name:<8} latency: p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms over {rounds} round(s) "
                f"({r['samples']:,} samples), p99 by round {r['p99_ms_by_round']}"
            )
    return out

"""The benchmark scenario, one run, the same brokers, topics and data for every system.

For each value size: one backlog topic on ``east`` (``records`` records of fresh random values,
``partitions`` partitions, 3 headers) is produced; then each system in turn is launched as a
batch run, copies it into its own fresh target topic on ``west`` and exits (MirrorMaker 2, which
never does, is stopped once its copy is done). Each run gives two sets of figures: over the
whole run, launch to the last of its processes gone (``launch_to_exit_seconds``) and the
machine's busy CPU over that time minus its idle baseline, per record
(``run_cpu_us_per_record``); and over the copy window, from the first record's arrival on the
target to the system's own completion (throughput, ``cpu_*``). The copy is then counted with a
``read_committed`` consumer. Backlogs are copied in ``backlog_rounds`` rounds per size, each on
a fresh backlog, every other round in reverse order, plus with ``cold_round`` one round with the
page cache dropped before each system (:func:`backlog_rounds_phase`).

Latency: each system gets a fresh topic of the same shape; it is started in continuous mode,
pinged until a record comes through, then a steady producer runs at each of ``latency_rates``
records/s in turn (below saturation); after ``latency_warmup_seconds`` at a rate, every record's
arrival time on the target minus its produce timestamp is one sample, for
``latency_seconds``. Latency is measured in ``latency_rounds`` rounds, every other round in
reverse order (:func:`~kafka_dr.bench.report.round_schedule`); p50/p99 over a system's samples
of every round together, and each round's p99 beside them. The one-process raw pipe is left
out of latency (:data:`NO_LATENCY`).

Warm-up (full runs): before anything is measured, ``warmup_records`` 100-byte records are
produced on ``east`` and copied to ``west`` by the raw pipe, and small transactions run on
``west`` for 30 s (:func:`warm_brokers`); then every system copies one backlog of
``warmup_records`` 100-byte records of its own (:func:`warm_systems`). None of it is measured.

Memory: peak RSS of each system's process tree (sampled every 250 ms), per phase. CPU: over
each backlog's copy window, cores busy on the machine, used by the system's process tree and
stolen by the host (:mod:`kafka_dr.bench.cpu`).
Systems run one after another, never at the same time, and every phase starts with the page
cache's dirty data written out (:mod:`kafka_dr.bench.disk`; ``synced_mb`` says how much).

Every topic a run creates has the run's id in its name (``bench.<hex>``): at the end, pass or
fail, they are deleted on both clusters unless ``keep_topics`` (a full run leaves about 4 GB
otherwise, and a lab that is benchmarked often fills its disk).
"""

from __future__ import annotations

import logging
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka.admin import AdminClient

from kafka_dr.bench import broker_load, disk, load
from kafka_dr.bench.cpu import CpuWindow, idle_cores, run_figures, sample
from kafka_dr.bench.latency import latency_rounds_phase
from kafka_dr.bench.mm2 import deviations
from kafka_dr.bench.mm2_systems import Mm2, Mm2ExactlyOnce, Mm2ExactlyOnceInterval, Mm2OneTask
from kafka_dr.bench.procmem import PeakRss
from kafka_dr.bench.report import (
    BACKLOG_METRICS,
    NOTHING_NEW_METRICS,
    SYSTEMS,
    backlog_figures,
    failed,
    flatten,
    megabytes,
    round_schedule,
)
from kafka_dr.bench.scraped import OursScraped
from kafka_dr.bench.systems import Ours, OursSpark, RawPipe, RawPipeOneProcess, System
from kafka_dr.bench.warm import warm_phase
from kafka_dr.bench.warm_report import warm_phase_name
from kafka_dr.core.config_load import load_config
from kafka_dr.kafka.clients import client_config, cluster_id
from kafka_dr.kafka.topics import delete_topics, ensure_topic

log = logging.getLogger("kafka_dr.bench")


#: seconds of small transactions on the target before anything is measured (full runs)
WARMUP_TRANSACTION_SECONDS = 30.0
#: the backlog ours copies before its nothing-new run
NOTHING_NEW_RECORDS = 1_000
#: systems measured for throughput only: below saturation one pipe runs the same code as the
#: pipe per core, and ours_spark's continuous mode is ours', so their latency would add minutes
#: to a run and nothing to the comparison
NO_LATENCY = frozenset({"rawpipe1", "ours_spark"})


def fresh_backlog(
    admin: AdminClient, cluster, topic: str, records: int, size: int, partitions: int
) -> tuple[load.Produced, list[int]]:
    """``topic`` created on ``cluster`` (``admin``'s) and filled with ``records`` records of
    ``size`` bytes; returns how it was produced and the partitions' end offsets."""
    ensure_topic(admin, topic, partitions)
    produced = load.produce_backlog(cluster, topic, records, size, partitions)
    return produced, load.end_offsets(admin, topic, partitions)


def warm_brokers(cfg, workdir: Path, run: str, records: int, partitions: int, timeout: float, say=print) -> None:
    """Unmeasured traffic of every kind the systems send, through both brokers, before the first
    measured phase: ``records`` records produced on ``east`` and copied to ``west`` by the raw
    pipe, then :data:`WARMUP_TRANSACTION_SECONDS` of small transactions on ``west``.

    Why: a broker's JVM compiles its hot code during its first minute of each kind of traffic,
    transactions a path of their own, and the first system measured paid for it
    (docs/benchmarks.md, "Warmed brokers and systems")."""
    east, west = cfg.cluster("east"), cfg.cluster("west")
    topic = f"{run}.warmup"
    ensure_topic(AdminClient(client_config(west)), f"{topic}.txn", partitions)
    t0 = time.monotonic()
    _, ends = fresh_backlog(AdminClient(client_config(east)), east, topic, records, 100, partitions)
    backlog_phase(RawPipe(cfg, workdir), topic, partitions, 100, ends, timeout)
    txns = load.transactional_traffic(
        west, f"{topic}.txn", partitions, WARMUP_TRANSACTION_SECONDS, group=f"{topic}.txn"
    )
    drop_topics((east, west), topic, say)
    say(
        f"[bench] brokers warmed up in {time.monotonic() - t0:.1f}s (not measured): "
        f"{records:,} records produced and copied, {txns:,} transactions"
    )


def source_topics(sys_objs: list[System], topic: str) -> dict[str, str]:
    """The backlog topic each system copies: ``topic`` for all, except that a second system
    writing into its source topic's own name (ours_scraped beside ours) gets a twin of its own,
    ``<topic>.<system>``, produced with the same records."""
    out, same_name = {}, 0
    for s in sys_objs:
        writes_in_place = s.target_topic(topic) == topic
        out[s.name] = f"{topic}.{s.name}" if writes_in_place and same_name else topic
        same_name += writes_in_place
    return out


def warm_systems(
    sys_objs: list[System], e_admin: AdminClient, topic: str, records: int, partitions: int, timeout: float, say=print
) -> None:
    """Every system, in the order given, copies one unmeasured backlog of ``records`` 100-byte
    records from ``topic`` (each into its own target topic), start-up to stop.

    Why: otherwise each system's first measured round pays alone for the brokers compiling its
    produce path and for its first launch reading the JVM and libraries from disk
    (docs/benchmarks.md, "Warmed brokers and systems")."""
    sources = source_topics(sys_objs, topic)
    ends_of = {
        t: fresh_backlog(e_admin, sys_objs[0].source, t, records, 100, partitions)[1] for t in set(sources.values())
    }
    for s in sys_objs:
        try:
            r = backlog_phase(s, sources[s.name], partitions, 100, ends_of[sources[s.name]], timeout)
        except Exception as e:  # noqa: BLE001 - the measured round reports a failing system in full
            say(f"[bench] {s.name:<8} warm-up failed (not measured): {str(e).splitlines()[0]}")
            continue
        finally:
            drop_topics((s.target,), sources[s.name], say)
        say(
            f"[bench] {s.name:<8} warmed up (not measured): copied {r['copied']:,}/{r['records']:,}, "
            f"launch-to-done {r['launch_to_done_seconds']}s"
        )
    drop_topics((sys_objs[0].source,), topic, say)


def make_systems(names, cfg, config_path: Path, workdir: Path) -> list[System]:
    makers = {
        "ours": lambda: Ours(cfg, workdir, config_path),
        "mm2": lambda: Mm2(cfg, workdir),
        "mm2t1": lambda: Mm2OneTask(cfg, workdir),
        "mm2eos": lambda: Mm2ExactlyOnce(cfg, workdir),
        "mm2eosint": lambda: Mm2ExactlyOnceInterval(cfg, workdir),
        "rawpipe": lambda: RawPipe(cfg, workdir),
        "rawpipe1": lambda: RawPipeOneProcess(cfg, workdir),
        "ours_scraped": lambda: OursScraped(cfg, workdir, config_path),
        "ours_spark": lambda: OursSpark(cfg, workdir, config_path),
    }
    return [makers[n]() for n in names]


def backlog_phase(
    system: System,
    topic: str,
    partitions: int,
    size: int,
    source_ends: list[int],
    timeout: float,
    brokers: tuple[int, ...] = (),
) -> dict:
    """One batch run of ``system`` over the backlog ``topic``, launch to exit: the copy window's
    figures (first record on the target to the copy done), and the whole run's (launch to the
    last of its processes gone; the machine's CPU minus its idle baseline over that time)."""
    west = system.target
    requests_before = broker_load.request_counts(brokers)  # its JVM gone before the idle baseline
    idle = idle_cores()
    before = sample([])
    started, launched = time.monotonic(), time.time()
    system.start(topic, partitions, continuous=False)
    rss = PeakRss(system.pid).start()
    cpu = CpuWindow(system.pid, brokers).start()
    try:
        tl = load.watch_arrivals(
            west,
            system.target_topic(topic),
            partitions,
            lambda total: system.done(topic, partitions, source_ends, total),
            started,
            timeout,
            alive=system.alive,
        )
        exited = system.finish(timeout)
    except Exception as e:
        raise RuntimeError(
            f"{system.name}: copying {topic}: {e}\n--- {system.name} log tail ---\n{system.log_tail()}"
        ) from None
    finally:
        cpu.stop()
        system.stop()
        peak = rss.stop()
    after = sample([])
    records = sum(source_ends)
    copied = _copy_figures(system, topic, partitions, size, records, tl)
    batches = broker_load.topic_batches(broker_load.log_dirs(brokers), system.target_topic(topic), cluster_id(west))
    asked = broker_load.figures(requests_before, broker_load.request_counts(brokers), batches, copied["copy_seconds"])
    return {
        **copied,
        **asked,
        "startup_seconds": round(tl.first - started, 2),
        "launch_to_done_seconds": round(tl.done - started, 2),
        "launch_to_exit_seconds": round(exited - started, 2),
        "startup_timeline": {**system.timeline(topic, launched), "first record": round(tl.first - started, 2)},
        "peak_rss_mb": megabytes(peak),
        **cpu.figures(tl.first, tl.done, records),
        **run_figures(before, after, records, idle),
        "idle_cores": idle,
    }


def _copy_figures(system: System, topic: str, partitions: int, size: int, records: int, tl: load.Timeline) -> dict:
    """Throughput over the copy window, and the copy counted as a ``read_committed`` reader sees it."""
    copied = load.count_records(system.target, system.target_topic(topic), partitions)
    window = max(tl.done - tl.first, 1e-3)
    return {
        "records_per_s": round(records / window),
        "mb_per_s": round(records * size / window / 1e6, 2),
        "copy_seconds": round(window, 2),
        "records": records,
        "copied": copied,
        "complete": copied == records,
    }


def run_bench(
    config_path: Path,
    workdir: Path,
    records: int,
    sizes: list[int],
    partitions: int = 8,
    latency_rates: tuple[int, ...] = (5000, 20000),
    latency_seconds: float = 60.0,
    warmup_seconds: float = 30.0,
    systems: tuple[str, ...] = SYSTEMS,
    timeout: float = 900.0,
    say=print,
    keep_topics: bool = False,
    warmup_records: int = 0,
    latency_rounds: int = 1,
    backlog_rounds: int = 1,
    brokers: tuple[int, ...] = (),
    cold_round: bool = False,
    warm_backlog: bool = False,
) -> dict:
    """Run the whole scenario; returns the flat figures (see :mod:`kafka_dr.bench.report`).
    ``brokers``: the lab brokers' pids, whose CPU each backlog's window counts apart;
    ``warm_backlog``: each size's backlog also copied by the systems already running
    (:mod:`kafka_dr.bench.warm`)."""
    cfg = load_config(config_path)
    run = f"bench.{uuid.uuid4().hex[:6]}"
    with _topics_deleted_after(cfg, run, keep_topics, say):
        east = cfg.cluster("east")
        workdir = Path(workdir) / run
        sys_objs = make_systems(systems, cfg, Path(config_path), workdir)
        e_admin = AdminClient(client_config(east))
        params = {
            "run": run,
            "records": records,
            "partitions": partitions,
            "sizes": list(sizes),
            "latency_rates": list(latency_rates),
            "latency_seconds": latency_seconds,
            "latency_warmup_seconds": warmup_seconds,
            "latency_rounds": latency_rounds,
            "backlog_rounds": backlog_rounds,
            "cold_round": cold_round,
            "warm_backlog": warm_backlog,
            "brokers_per_cluster": len(e_admin.list_topics(timeout=10).brokers),
            "mm2_deviations": {s.name: deviations(s.settings) for s in sys_objs if isinstance(s, Mm2)},
        }
        if warmup_records > 0:
            warm_brokers(cfg, workdir, run, warmup_records, partitions, timeout, say)
            warm_systems(sys_objs, e_admin, f"{run}.warmup.systems", warmup_records, partitions, timeout, say)
        results: dict[str, dict[str, dict]] = {s.name: {} for s in sys_objs}
        for size in sizes:
            for s, phases in backlog_rounds_phase(
                sys_objs,
                e_admin,
                f"{run}.s{size}",
                records,
                size,
                partitions,
                backlog_rounds,
                timeout,
                say,
                brokers,
                cold_round,
                keep_topics,
            ).items():
                results[s].update(phases)
            if warm_backlog:
                running = [s for s in sys_objs if s.name not in NO_LATENCY]
                drop = lambda t: keep_topics or drop_topics((east, cfg.cluster("west")), t, say)  # noqa: E731
                for s, figures in warm_phase(
                    running, f"{run}.{warm_phase_name(size)}", size, records, partitions, timeout, say, brokers, drop
                ).items():
                    results[s][warm_phase_name(size)] = figures
        _nothing_new_phase(sys_objs, results, e_admin, f"{run}.nothing-new", partitions, timeout, say)
        for s, phases in latency_rounds_phase(
            [s for s in sys_objs if s.name not in NO_LATENCY],
            run,
            partitions,
            list(latency_rates),
            latency_seconds,
            warmup_seconds,
            latency_rounds,
            min(timeout, 300),
            say,
        ).items():
            results[s].update(phases)
        return flatten(params, {s.name: s.guarantee for s in sys_objs}, results)


def run_scale_out_bench(
    config_path: Path,
    workdir: Path,
    records: int,
    size: int,
    partitions: int,
    layout,
    quick: bool = False,
    keep_topics: bool = False,
    timeout: float = 900.0,
    say=print,
) -> dict:
    """The scale-out rows (:mod:`kafka_dr.bench.scaleout`) on a Spark cluster of ``layout``,
    the run's topics deleted afterwards as :func:`run_bench`'s; ``quick``: the two-flow row
    only (proves it works)."""
    from kafka_dr.bench.scaleout import QUICK_ROWS, ROWS, run_scale_out

    cfg = load_config(config_path)
    run = f"bench.{uuid.uuid4().hex[:6]}"
    with _topics_deleted_after(cfg, run, keep_topics, say):
        figures = run_scale_out(
            cfg,
            Path(config_path),
            Path(workdir) / run,
            run,
            records,
            size,
            partitions,
            layout,
            timeout,
            say,
            QUICK_ROWS if quick else ROWS,
        )
        return {"bench": "kafka-dr", "run": run, "partitions": partitions, **figures}


def _nothing_new_phase(
    sys_objs: list[System],
    results: dict[str, dict],
    e_admin: AdminClient,
    topic: str,
    partitions: int,
    timeout: float,
    say=print,
) -> None:
    """Ours copies a small backlog of its own (``topic``, unmeasured), then runs again on it,
    incrementally: what a scheduled run that finds nothing new costs (its figures carry the
    error when it fails)."""
    ours = next((s for s in sys_objs if isinstance(s, Ours)), None)
    if ours is None:
        return
    try:
        fresh_backlog(e_admin, ours.source, topic, NOTHING_NEW_RECORDS, 100, partitions)
        ours.start(topic, partitions, continuous=False)
        ours.finish(timeout)
        r = ours.nothing_new(topic)
    except Exception as e:  # noqa: BLE001 - the other figures stand
        r = failed(NOTHING_NEW_METRICS, e)
    finally:
        ours.stop()
    results[ours.name]["nothing_new"] = r
    say(f"[bench] ours     nothing new: {r['seconds']} s launch to exit, {r['cpu_seconds']} CPU-s ({r['stopped_by']})")


def backlog_rounds_phase(
    sys_objs: list[System],
    e_admin: AdminClient,
    topic: str,
    records: int,
    size: int,
    partitions: int,
    rounds: int,
    timeout: float,
    say=print,
    brokers: tuple[int, ...] = (),
    cold_round: bool = False,
    keep_topics: bool = False,
) -> dict[str, dict[str, dict]]:
    """Every system's backlog of ``size``-byte records in ``rounds`` rounds, in the order of
    :func:`~kafka_dr.bench.report.round_schedule`, and with ``cold_round`` one more in which the
    page cache is dropped before each system (:func:`kafka_dr.bench.disk.drop_caches`). Each
    round copies a backlog of its own (``topic``, then ``topic.r<n>``: ours writes into the
    source topic's name, so a copy needs a fresh source topic), produced just before it with
    fresh records. Returns per system ``{"s<size>": figures over the warm rounds,
    "s<size>cold": the cold round's}`` (:func:`~kafka_dr.bench.report.backlog_figures`); a
    system whose round fails is not measured again, and its figures carry the error. Unless
    ``keep_topics``, each copy is deleted once counted and each round's backlog after the round
    (:func:`drop_topics`)."""
    east = sys_objs[0].source
    warm, cold = f"s{size}", f"s{size}cold"
    done: dict[str, dict[str, list[dict]]] = {s.name: {warm: [], cold: []} for s in sys_objs}
    failures: dict[str, dict] = {}
    schedule = round_schedule(sys_objs, rounds) + ([list(sys_objs)] if cold_round else [])
    for i, order in enumerate(schedule):
        phase = cold if i >= rounds else warm
        sources = source_topics(sys_objs, topic if i == 0 else f"{topic}.r{i}")
        ends_of, wire_of = {}, {}
        for t in sorted(set(sources.values())):
            produced, ends_of[t] = fresh_backlog(e_admin, east, t, records, size, partitions)
            wire_of[t] = produced.wire_bytes
            say(
                f"[bench] {t}: {records:,} records of {size} B produced in {produced.seconds:.1f}s, "
                f"{_f_mb(produced.wire_bytes)} MB on the wire"
            )
        for s in order:
            t, ends = sources[s.name], ends_of[sources[s.name]]
            if s.name in failures:
                continue
            synced = disk.write_back()
            dropped = disk.drop_caches() if phase == cold else False
            step = "cold cache" if phase == cold else "" if rounds == 1 else f"round {i + 1}/{rounds}"
            step = f"s{size} {step}".rstrip()
            try:
                r = {**backlog_phase(s, t, partitions, size, ends, timeout, brokers), "synced_mb": synced}
            except Exception as e:  # noqa: BLE001 - one system failing must not hide the others' figures
                failures[s.name] = failed(BACKLOG_METRICS, e, records=sum(ends), complete=False, synced_mb=synced)
                failures[s.name]["failed_in"] = phase
                say(f"[bench] {s.name:<8} {step}: FAILED: {failures[s.name]['error']}")
                continue
            finally:
                if not keep_topics:
                    drop_topics((s.target,), t, say)
            r["source_wire_mb"] = None if wire_of[t] is None else round(wire_of[t] / 1e6, 3)
            if phase == cold:
                r["cache_dropped"] = dropped
            done[s.name][phase].append(r)
            cache = {warm: "", cold: ", page cache dropped" if dropped else ", page cache NOT dropped (not root)"}
            say(
                f"[bench] {s.name:<8} {step}: {r['records_per_s']:,} records/s over {r['copy_seconds']}s "
                f"(start-up {r['startup_seconds']}s), launch to exit {r['launch_to_exit_seconds']}s, "
                f"copied {r['copied']:,}/{r['records']:,}, peak RSS {r['peak_rss_mb']} MB, {synced} MB synced first"
                f"{cache[phase]}; CPU busy {r['cpu_busy_cores']}, own {r['cpu_own_cores']}, "
                f"brokers {r['cpu_broker_cores']}, steal {r['cpu_steal_cores']} cores; "
                f"whole run {r['run_cpu_us_per_record']} us/record"
            )
        if not keep_topics:
            drop_topics((east,), topic if i == 0 else f"{topic}.r{i}", say)
    out: dict[str, dict[str, dict]] = {}
    for s in sys_objs:
        runs, failure = done[s.name], failures.get(s.name)
        # a failure voids its phase and every phase after it (the system is not run again)
        out[s.name] = {warm: failure if failure and failure["failed_in"] == warm else backlog_figures(runs[warm])}
        if cold_round:
            out[s.name][cold] = failure or {
                **backlog_figures(runs[cold]),
                "cache_dropped": runs[cold][0]["cache_dropped"],
            }
    return out


def drop_topics(clusters, part: str, say=print) -> None:
    """Delete every topic whose name holds ``part`` on ``clusters``: a phase's topics once it is
    measured, so a full run never holds more than a round's source and one copy (a 1 KiB round
    of every system on 3-broker clusters would hold some 27 GB). A failure is reported, not raised."""
    for cluster in clusters:
        try:
            admin = AdminClient(client_config(cluster))
            names = [t for t in admin.list_topics(timeout=30).topics if part in t]
            for problem in delete_topics(admin, names):
                say(f"[bench] could not delete {cluster.name}/{problem}")
        except Exception as e:  # noqa: BLE001 - the figures are what the run is for
            say(f"[bench] deleting {part} topics on {cluster.name}: {e}")


def _f_mb(b: int | None) -> str:
    return "?" if b is None else f"{b / 1e6:,.1f}"


@contextmanager
def _topics_deleted_after(cfg, run: str, keep: bool, say):
    """Unless ``keep``: at the end, pass or fail, delete every topic whose name holds ``run`` on
    every cluster of the lab. A failure to delete is reported, not raised (the figures are what
    the run is for)."""
    try:
        yield
    finally:
        if not keep:
            drop_topics(cfg.clusters.values(), run, say)

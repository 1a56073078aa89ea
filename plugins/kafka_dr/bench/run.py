"""The benchmark scenario, one run, the same brokers, topics and data for every system.

For each value size: one backlog topic on ``east`` (``records`` records, ``partitions``
partitions, 3 headers) is produced; then each system in turn starts, copies it into its own
fresh target topic on ``west`` and stops. Throughput is measured over the copy window, from
the first record's arrival on the target to the system's own completion (start-up is
reported separately); the copy is then counted with a ``read_committed`` consumer. Full runs
do this in ``backlog_rounds`` rounds per size, each on a fresh backlog of the same records,
every other round in reverse order, and pool the rounds (:func:`backlog_rounds_phase`).

Latency: each system gets a fresh topic of the same shape; it is started in continuous mode,
pinged until a record comes through, then a steady producer runs at each of ``latency_rates``
records/s in turn (below saturation); after ``latency_warmup_seconds`` at a rate, every record's
arrival time on the target minus its produce timestamp is one sample, for
``latency_seconds``. Full runs measure in ``latency_rounds`` rounds, every other round in
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

``one_start`` (what ``--quick`` uses, to prove the benchmark works in well under the time
nine start-ups take): every system is started once, all at the same time, on topics of its
own (a backlog topic per size and a latency topic), in its continuous mode; then, for all
systems at the same time, each backlog is produced and copied while the system runs, and the
latency is measured. Start-ups and phases overlap and backlogs are copied as they are
produced, so these figures prove the plumbing, not a comparison.
"""

from __future__ import annotations

import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka.admin import AdminClient

from kafka_dr.bench import disk, load
from kafka_dr.bench.cpu import CpuWindow
from kafka_dr.bench.latency import latency_rounds_phase, measure_latency
from kafka_dr.bench.procmem import PeakRss
from kafka_dr.bench.report import (
    BACKLOG_METRICS,
    LATENCY_METRICS,
    NOTHING_NEW_METRICS,
    SYSTEMS,
    backlog_figures,
    failed,
    flatten,
    latency_figures,
    latency_phase_name,
    megabytes,
    round_schedule,
)
from kafka_dr.bench.scraped import OursScraped
from kafka_dr.bench.systems import Mm2, Mm2ExactlyOnce, Ours, RawPipe, RawPipeOneProcess, System
from kafka_dr.core.config_load import load_config
from kafka_dr.kafka.clients import client_config
from kafka_dr.kafka.topics import delete_topics, ensure_topic

log = logging.getLogger("kafka_dr.bench")


#: seconds of small transactions on the target before anything is measured (full runs)
WARMUP_TRANSACTION_SECONDS = 30.0
#: systems measured for throughput only: below saturation one pipe runs the same code as the
#: pipe per core, so its latency would add minutes to a run and nothing to the comparison
NO_LATENCY = frozenset({"rawpipe1"})


def fresh_backlog(
    admin: AdminClient, cluster, topic: str, records: int, size: int, partitions: int
) -> tuple[float, list[int]]:
    """``topic`` created on ``cluster`` (``admin``'s) and filled with ``records`` records of
    ``size`` bytes; returns the seconds producing took and the partitions' end offsets."""
    ensure_topic(admin, topic, partitions)
    secs = load.produce_backlog(cluster, topic, records, size, partitions)
    return secs, load.end_offsets(admin, topic, partitions)


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
        say(
            f"[bench] {s.name:<8} warmed up (not measured): copied {r['copied']:,}/{r['records']:,}, "
            f"launch-to-done {r['launch_to_done_seconds']}s"
        )


def make_systems(names, cfg, config_path: Path, workdir: Path) -> list[System]:
    makers = {
        "ours": lambda: Ours(cfg, workdir, config_path),
        "mm2": lambda: Mm2(cfg, workdir),
        "mm2eos": lambda: Mm2ExactlyOnce(cfg, workdir),
        "rawpipe": lambda: RawPipe(cfg, workdir),
        "rawpipe1": lambda: RawPipeOneProcess(cfg, workdir),
        "ours_scraped": lambda: OursScraped(cfg, workdir, config_path),
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
    west = system.target
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
    except Exception as e:
        raise RuntimeError(
            f"{system.name}: copying {topic}: {e}\n--- {system.name} log tail ---\n{system.log_tail()}"
        ) from None
    finally:
        cpu.stop()  # before the stop: a system's shutdown is not part of its copy window
        system.stop()
        peak = rss.stop()
    return {
        **_copy_figures(system, topic, partitions, size, sum(source_ends), tl),
        "startup_seconds": round(tl.first - started, 2),
        "launch_to_done_seconds": round(tl.done - started, 2),
        "startup_timeline": {**system.timeline(topic, launched), "first record": round(tl.first - started, 2)},
        "peak_rss_mb": megabytes(peak),
        **cpu.figures(tl.first, tl.done, sum(source_ends)),
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


def one_start_phases(
    sys_objs: list[System],
    run: str,
    records: int,
    sizes: list[int],
    partitions: int,
    latency_rates: list[int],
    latency_seconds: float,
    warmup_seconds: float,
    timeout: float,
    say=print,
) -> dict[str, dict[str, dict]]:
    """Every system started once (all together), then every system's backlogs and latency, all at once."""
    e_admin = AdminClient(client_config(sys_objs[0].source))
    topics = {
        s.name: {**{f"s{size}": f"{run}.{s.name}.s{size}" for size in sizes}, "latency": f"{run}.{s.name}.lat"}
        for s in sys_objs
    }
    for per in topics.values():
        for t in per.values():
            ensure_topic(e_admin, t, partitions)
    results: dict[str, dict[str, dict]] = {s.name: {} for s in sys_objs}
    started, rss = {}, {}
    try:
        for s in sys_objs:
            started[s.name] = time.monotonic()
            s.start(list(topics[s.name].values()), partitions, continuous=True)
            rss[s.name] = PeakRss(s.pid).start()
        up = _wait_until_copying(sys_objs, {s.name: topics[s.name]["latency"] for s in sys_objs}, partitions, timeout)

        def phases(s: System) -> None:
            for size in sizes:
                topic = topics[s.name][f"s{size}"]
                try:
                    r = _backlog_while_running(s, topic, partitions, size, records, timeout)
                    r["startup_seconds"] = round(up[s.name] - started[s.name], 2)
                except Exception as e:  # noqa: BLE001 - one system failing must not hide the others' figures
                    r = failed(BACKLOG_METRICS, e, records=records, complete=False)
                results[s.name][f"s{size}"] = r
                say(
                    f"[bench] {s.name:<8} s{size}: {r['records_per_s']} records/s, "
                    f"copied {r['copied']}/{r['records']} (one start)"
                )
            if s.name in NO_LATENCY:
                return
            try:
                by_rate = measure_latency(
                    s, topics[s.name]["latency"], partitions, latency_rates, latency_seconds, warmup_seconds, timeout
                )
                figures = {rate: latency_figures([r]) for rate, r in by_rate.items()}
            except Exception as e:  # noqa: BLE001 - as above
                figures = {rate: failed(LATENCY_METRICS, e) for rate in latency_rates}
            for rate, r in figures.items():
                results[s.name][latency_phase_name(rate)] = r
                say(
                    f"[bench] {s.name:<8} latency at {rate:,}/s: p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms (one start)"
                )

        # all systems at once, each on its own topics: the quick run proves the plumbing in
        # under a minute; its figures are not a comparison (the full run measures one at a time)
        with ThreadPoolExecutor(len(sys_objs)) as pool:
            list(pool.map(phases, sys_objs))
    finally:
        for s in sys_objs:
            s.stop()
    for s in sys_objs:
        peak = megabytes(rss[s.name].stop()) if s.name in rss else None
        for r in results[s.name].values():
            r["peak_rss_mb"] = peak
    return results


def _wait_until_copying(
    systems: list[System], topics: dict[str, str], partitions: int, timeout: float
) -> dict[str, float]:
    """Ping each system's ``topics[name]`` until a record arrives on its target; returns when
    (monotonic) each did. All at once, so no system's start-up waits for another's."""
    pinger = load.producer(systems[0].source, **{"linger.ms": 0})
    deadline = time.monotonic() + timeout
    probes: dict[str, load.ArrivalProbe] = {}
    up: dict[str, float] = {}
    try:
        while len(up) < len(systems):
            for s in systems:
                if s.name in up:
                    continue
                if not s.alive() or time.monotonic() > deadline:
                    raise RuntimeError(f"{s.name}: no record came through within {timeout:.0f}s\n{s.log_tail()}")
                probe = probes.get(s.name)
                if probe is None and load.topic_exists(s.target, s.target_topic(topics[s.name])):
                    probe = probes[s.name] = load.ArrivalProbe(s.target, s.target_topic(topics[s.name]), partitions)
                    probe.start()
                if probe is not None and probe.seen:
                    up[s.name] = time.monotonic()
                    continue
                pinger.produce(topics[s.name], key=b"ping", value=b"ping")
            pinger.flush(10)
            time.sleep(0.2)
        return up
    finally:
        for probe in probes.values():
            probe.stop()


def _backlog_while_running(
    system: System, topic: str, partitions: int, size: int, records: int, timeout: float
) -> dict:
    t0 = time.monotonic()
    load.produce_backlog(system.source, topic, records, size, partitions)
    ends = load.end_offsets(AdminClient(client_config(system.source)), topic, partitions)
    tl = load.watch_arrivals(
        system.target,
        system.target_topic(topic),
        partitions,
        lambda total: system.done(topic, partitions, ends, total),
        t0,
        timeout,
        alive=system.alive,
    )
    return {
        **_copy_figures(system, topic, partitions, size, records, tl),
        "startup_seconds": None,
        "launch_to_done_seconds": None,
        "startup_timeline": None,
        "peak_rss_mb": None,
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
    one_start: bool = False,
    keep_topics: bool = False,
    warmup_records: int = 0,
    latency_rounds: int = 1,
    backlog_rounds: int = 1,
    brokers: tuple[int, ...] = (),
) -> dict:
    """Run the whole scenario; returns the flat figures (see :mod:`kafka_dr.bench.report`).
    ``brokers``: the lab brokers' pids, whose CPU each backlog's window counts apart."""
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
            "latency_rounds": 1 if one_start else latency_rounds,
            "backlog_rounds": 1 if one_start else backlog_rounds,
        }
        if one_start:
            results = one_start_phases(
                sys_objs,
                run,
                records,
                sizes,
                partitions,
                list(latency_rates),
                latency_seconds,
                warmup_seconds,
                min(timeout, 300),
                say,
            )
            _nothing_new_phase(sys_objs, results, f"{run}.ours.s{sizes[0]}", say)
            return flatten(params, {s.name: s.guarantee for s in sys_objs}, results)
        if warmup_records > 0:
            warm_brokers(cfg, workdir, run, warmup_records, partitions, timeout, say)
            warm_systems(sys_objs, e_admin, f"{run}.warmup.systems", warmup_records, partitions, timeout, say)
        results: dict[str, dict[str, dict]] = {s.name: {} for s in sys_objs}
        for size in sizes:
            for s, r in backlog_rounds_phase(
                sys_objs, e_admin, f"{run}.s{size}", records, size, partitions, backlog_rounds, timeout, say, brokers
            ).items():
                results[s][f"s{size}"] = r
        _nothing_new_phase(sys_objs, results, f"{run}.s{sizes[0]}", say)
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


def _nothing_new_phase(sys_objs: list[System], results: dict[str, dict], topic: str, say=print) -> None:
    """Ours run again, incrementally, on a backlog topic it has copied: what a scheduled run
    that finds nothing new costs (its figures carry the error when it fails)."""
    ours = next((s for s in sys_objs if isinstance(s, Ours)), None)
    if ours is None:
        return
    try:
        r = ours.nothing_new(topic)
    except Exception as e:  # noqa: BLE001 - the other figures stand
        r = failed(NOTHING_NEW_METRICS, e)
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
) -> dict[str, dict]:
    """Every system's backlog of ``size``-byte records in ``rounds`` rounds, in the order of
    :func:`~kafka_dr.bench.report.round_schedule`; each round copies a backlog of its own
    (``topic``, then ``topic.r<n>``: ours writes into the source topic's name, so a copy needs a
    fresh source topic), produced just before it with the same records. The figures per system
    over its rounds (:func:`~kafka_dr.bench.report.backlog_figures`); a system whose round fails
    is not measured again, and its figures carry the error."""
    east = sys_objs[0].source
    done: dict[str, list[dict]] = {s.name: [] for s in sys_objs}
    failures: dict[str, dict] = {}
    for i, order in enumerate(round_schedule(sys_objs, rounds)):
        sources = source_topics(sys_objs, topic if i == 0 else f"{topic}.r{i}")
        ends_of = {}
        for t in sorted(set(sources.values())):
            secs, ends_of[t] = fresh_backlog(e_admin, east, t, records, size, partitions)
            say(f"[bench] {t}: {records:,} records of {size} B produced in {secs:.1f}s")
        for s in order:
            t, ends = sources[s.name], ends_of[sources[s.name]]
            if s.name in failures:
                continue
            synced = disk.write_back()
            step = f"s{size}" if rounds == 1 else f"s{size} round {i + 1}/{rounds}"
            try:
                r = {**backlog_phase(s, t, partitions, size, ends, timeout, brokers), "synced_mb": synced}
            except Exception as e:  # noqa: BLE001 - one system failing must not hide the others' figures
                failures[s.name] = failed(BACKLOG_METRICS, e, records=sum(ends), complete=False, synced_mb=synced)
                say(f"[bench] {s.name:<8} {step}: FAILED: {failures[s.name]['error']}")
                continue
            done[s.name].append(r)
            say(
                f"[bench] {s.name:<8} {step}: {r['records_per_s']:,} records/s over {r['copy_seconds']}s "
                f"(start-up {r['startup_seconds']}s), copied {r['copied']:,}/{r['records']:,}, "
                f"peak RSS {r['peak_rss_mb']} MB, {synced} MB synced first; "
                f"CPU busy {r['cpu_busy_cores']}, own {r['cpu_own_cores']}, brokers {r['cpu_broker_cores']}, "
                f"steal {r['cpu_steal_cores']} cores"
            )
    return {s.name: failures.get(s.name) or backlog_figures(done[s.name]) for s in sys_objs}


@contextmanager
def _topics_deleted_after(cfg, run: str, keep: bool, say):
    """Unless ``keep``: at the end, pass or fail, delete every topic whose name holds ``run`` on
    every cluster of the lab. A failure to delete is reported, not raised (the figures are what
    the run is for)."""
    try:
        yield
    finally:
        for cluster in () if keep else cfg.clusters.values():
            try:
                admin = AdminClient(client_config(cluster))
                names = [t for t in admin.list_topics(timeout=30).topics if run in t]
                for problem in delete_topics(admin, names):
                    say(f"[bench] could not delete {cluster.name}/{problem}")
            except Exception as e:  # noqa: BLE001 - see the docstring
                say(f"[bench] deleting the run's topics on {cluster.name}: {e}")

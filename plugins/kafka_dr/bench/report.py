"""The benchmark's output: one table for people, then one JSON line with every figure (pure).

Figures are nested as ``results[system][phase][metric]`` (phase ``s<size>`` for a backlog of
``size``-byte values, ``latency<rate>`` for a steady load of ``rate`` records/s) and flattened
into the JSON line as ``<system>_<phase>_<metric>``, plus ``ratio_ours_<other>_<phase>_<metric>``
for throughput, CPU per record and latency (each round's p99 too), and the run's parameters.
Full runs add ``synced_mb`` to every phase: the dirty page-cache data written out before it
(:mod:`kafka_dr.bench.disk`), and to every backlog phase the CPU over its copy window
(``cpu_*``, :mod:`kafka_dr.bench.cpu`).

A system's latency may be measured in several rounds (:func:`round_schedule`); its p50 and
p99 are over every round's samples together (:func:`latency_figures`), and
``p99_ms_by_round`` keeps each round's own p99 so the spread is visible.
"""

from __future__ import annotations

import json
import statistics

from kafka_dr.bench.broker_load import broker_figures, broker_table
from kafka_dr.bench.warm_report import WARM_METRICS, WARM_RATIOS, warm_phase_name, warm_table

#: every system the bench knows, ours first (the ratios are ours / each other one); ours_scraped
#: (ours with its exporter read and scraped every second) only when asked for
SYSTEMS = ("ours", "mm2", "mm2t1", "mm2eos", "mm2eosint", "rawpipe", "rawpipe1", "ours_spark", "ours_scraped")
BACKLOG_METRICS = (
    "records_per_s",
    "mb_per_s",
    "copy_seconds",
    "startup_seconds",
    "launch_to_done_seconds",
    "launch_to_exit_seconds",
    "run_cpu_us_per_record",
    "source_wire_mb",
    "startup_timeline",
    "records",
    "copied",
    "complete",
    "peak_rss_mb",
    # what the copy asked of the brokers (kafka_dr.bench.broker_load)
    "produce_requests_per_s",
    "records_per_produce_request",
    "records_per_fetch_request",
    "records_per_follower_fetch",
    "transaction_requests",
    "records_per_batch",
    "log_bytes_per_record",
    "control_batches",
)
#: ours only: an incremental run that finds nothing new, launch to exit (no Spark starts)
NOTHING_NEW_METRICS = ("seconds", "cpu_seconds", "stopped_by")
LATENCY_METRICS = ("p50_ms", "p99_ms", "samples", "sent", "peak_rss_mb", "p99_ms_by_round")
#: the ratios of a backlog phase and of a latency phase
BACKLOG_RATIOS = (
    "launch_to_exit_seconds",
    "run_cpu_us_per_record",
    "records_per_s",
    "mb_per_s",
    "produce_requests_per_s",
    "records_per_produce_request",
    "records_per_fetch_request",
    "records_per_follower_fetch",
    "records_per_batch",
    "log_bytes_per_record",
    "cpu_us_per_record",
    "cpu_us_per_record_median",
    "cpu_broker_us_per_record",
)
LATENCY_RATIOS = ("p50_ms", "p99_ms")


def latency_phase_name(rate: int) -> str:
    return f"latency{rate}"


def percentile(values: list[int], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return float(s[min(len(s) - 1, int(len(s) * q))])


def round_schedule(systems: list, rounds: int) -> list[list]:
    """The order of the systems in each of ``rounds`` rounds (of the latency phases, and of each
    size's backlogs): every other round in reverse. Why: whichever system runs right after the
    backlogs, or after another one, inherits the brokers' state (page cache being written back,
    garbage to collect), and with one round the same system always paid for it
    (docs/benchmarks.md, "Ours is the first latency phase"); a backlog's first system also runs
    right after the backlog was produced, and the machine's own speed drifts over minutes.
    Two rounds give every system both an early and a late slot."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, not {rounds}")
    return [list(systems) if r % 2 == 0 else list(reversed(systems)) for r in range(rounds)]


def latency_figures(rounds: list[dict]) -> dict:
    """One system's latency from its rounds (each: ``latencies`` in ms, ``sent``, ``peak_rss_mb``
    and, in full runs, ``synced_mb``): p50 and p99 over all samples together, counts summed,
    the peak the highest, and each round's own p99."""
    samples = [x for r in rounds for x in r["latencies"]]
    rss = [r["peak_rss_mb"] for r in rounds if r.get("peak_rss_mb") is not None]
    out = {
        "p50_ms": percentile(samples, 0.50),
        "p99_ms": percentile(samples, 0.99),
        "samples": len(samples),
        "sent": sum(r["sent"] for r in rounds),
        "peak_rss_mb": max(rss) if rss else None,
        "p99_ms_by_round": [percentile(r["latencies"], 0.99) for r in rounds],
    }
    if any("synced_mb" in r for r in rounds):
        out["synced_mb"] = sum(r.get("synced_mb") or 0 for r in rounds)
    return out


#: a backlog phase's CPU figures (:mod:`kafka_dr.bench.cpu`) weighted by each round's copy window
CPU_CORES = ("cpu_busy_cores", "cpu_own_cores", "cpu_steal_cores", "cpu_idle_cores")


def backlog_figures(rounds: list[dict]) -> dict:
    """One system's backlog figures for one size from its rounds (each a fresh copy of the same
    data, see :func:`round_schedule` for the order): throughput over all rounds together
    (every record over the sum of the copy windows, so a slow round weighs what it took), each
    round's own records/s beside it, records and copies summed, complete only if every round
    was, start-up the mean, memory the peak, CPU cores weighted by each round's window and the
    busy CPU per record over all records. One round gives its own figures back (plus
    ``records_per_s_by_round``)."""
    records = sum(r["records"] for r in rounds)
    window = sum(r["copy_seconds"] for r in rounds)
    size_mb = sum(r["mb_per_s"] * r["copy_seconds"] for r in rounds)
    out = {
        "records_per_s": round(records / window) if window > 0 else None,
        "mb_per_s": round(size_mb / window, 2) if window > 0 else None,
        "copy_seconds": round(window, 2),
        "startup_seconds": round(sum(r["startup_seconds"] for r in rounds) / len(rounds), 2),
        "launch_to_done_seconds": round(sum(r["launch_to_done_seconds"] for r in rounds) / len(rounds), 2),
        "records": records,
        "copied": sum(r["copied"] for r in rounds),
        "complete": all(r["complete"] for r in rounds),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in rounds),
        "records_per_s_by_round": [r["records_per_s"] for r in rounds],
        "startup_timeline": mean_timeline([r.get("startup_timeline") or {} for r in rounds]),
    }
    if any("synced_mb" in r for r in rounds):
        out["synced_mb"] = sum(r.get("synced_mb") or 0 for r in rounds)
    out.update(whole_run_figures(rounds))
    out.update(broker_figures(rounds, records, window))
    timed = [r for r in rounds if r.get("cpu_busy_cores") is not None]
    if timed:
        for m in CPU_CORES:
            out[m] = _weighted(timed, m)
        out["cpu_us_per_record"] = _per_record(timed, "cpu_busy_cores")
        out["cpu_us_per_record_by_round"] = [_per_record([r], "cpu_busy_cores") for r in timed]
        out["cpu_us_per_record_median"] = round(statistics.median(out["cpu_us_per_record_by_round"]), 1)
        if all(r.get("cpu_broker_cores") is not None for r in timed):
            out["cpu_broker_cores"] = _weighted(timed, "cpu_broker_cores")
            out["cpu_broker_us_per_record"] = _per_record(timed, "cpu_broker_cores")
    return out


def whole_run_figures(rounds: list[dict]) -> dict:
    """Launch to exit and the whole run's CPU per record: the median round's, each round's
    beside it, and the spread (highest over lowest); the source backlog's bytes on the wire
    summed. A figure no round has is None."""
    out: dict = {}
    for m in ("launch_to_exit_seconds", "run_cpu_us_per_record"):
        got = [r[m] for r in rounds if r.get(m) is not None]
        out[m] = round(statistics.median(got), 2) if got else None
        out[f"{m}_by_round"] = got
        out[f"{m}_spread"] = round(max(got) / min(got), 3) if got and min(got) > 0 else None
    wire = [r.get("source_wire_mb") for r in rounds]
    out["source_wire_mb"] = round(sum(wire), 3) if wire and None not in wire else None
    return out


def _weighted(rounds: list[dict], cores: str) -> float:
    """``cores`` over all ``rounds``, each weighted by its copy window."""
    return round(sum(r[cores] * r["copy_seconds"] for r in rounds) / sum(r["copy_seconds"] for r in rounds), 2)


def _per_record(rounds: list[dict], cores: str) -> float:
    """Microseconds of ``cores`` per record over all ``rounds``."""
    return round(sum(r[cores] * r["copy_seconds"] for r in rounds) / sum(r["records"] for r in rounds) * 1e6, 1)


def mean_timeline(timelines: list[dict[str, float]]) -> dict[str, float]:
    """Each start-up step's mean over the rounds that logged it, in the order of the steps."""
    marks = sorted({m for t in timelines for m in t}, key=lambda m: min(t[m] for t in timelines if m in t))
    return {m: round(sum(t[m] for t in timelines if m in t) / sum(m in t for t in timelines), 2) for m in marks}


def ratio(a, b) -> float | None:
    if a is None or b in (None, 0):
        return None
    return round(a / b, 3)


def flatten(params: dict, guarantees: dict[str, str], results: dict[str, dict[str, dict]]) -> dict:
    out = {"bench": "kafka-dr", **params}
    for system, phases in results.items():
        out[f"{system}_guarantee"] = guarantees.get(system, "")
        for phase, figures in phases.items():
            for metric, v in figures.items():
                out[f"{system}_{phase}_{metric}"] = v
    for other in SYSTEMS[1:]:
        if "ours" not in results or other not in results:
            continue
        for phase in results["ours"]:
            if phase not in results[other]:
                continue
            ours, theirs = results["ours"][phase], results[other][phase]
            latency = phase.startswith("latency")
            kinds = LATENCY_RATIOS if latency else WARM_RATIOS if phase.startswith("warm") else BACKLOG_RATIOS
            for m in kinds:
                out[f"ratio_ours_{other}_{phase}_{m}"] = ratio(ours.get(m), theirs.get(m))
            if latency:
                pairs = zip(ours.get("p99_ms_by_round") or [], theirs.get("p99_ms_by_round") or [])
                out[f"ratio_ours_{other}_{phase}_p99_ms_by_round"] = [ratio(a, b) for a, b in pairs]
    return out


def expected_keys(systems, sizes, rates, latency_systems=None, cold_round=False, warm=False) -> set[str]:
    """Every key the JSON line must carry for these systems, sizes and latency rates
    (``latency_systems``: those measured at steady load, default all, and with ``warm`` the
    warm backlogs' systems too; ``cold_round``: with each size's cold-cache phase)."""
    phases = [p for s in sizes for p in ((f"s{s}", f"s{s}cold") if cold_round else (f"s{s}",))]
    lat_phases = [latency_phase_name(r) for r in rates]
    lat_systems = systems if latency_systems is None else latency_systems
    keys = {
        "bench",
        "records",
        "partitions",
        "sizes",
        "latency_rates",
        "latency_seconds",
        "latency_warmup_seconds",
        "latency_rounds",
        "backlog_rounds",
        "cold_round",
        "warm_backlog",
        "brokers_per_cluster",
        "mm2_deviations",
    }
    for sy in systems:
        keys.add(f"{sy}_guarantee")
        keys |= {f"{sy}_{ph}_{m}" for ph in phases for m in BACKLOG_METRICS}
    if "ours" in systems:
        keys |= {f"ours_nothing_new_{m}" for m in NOTHING_NEW_METRICS}
    for sy in lat_systems:
        keys |= {f"{sy}_{ph}_{m}" for ph in lat_phases for m in LATENCY_METRICS}
    warm_phases = [warm_phase_name(s) for s in sizes] if warm else []
    for sy in lat_systems:
        keys |= {f"{sy}_{ph}_{m}" for ph in warm_phases for m in WARM_METRICS}
    if "ours" in lat_systems:
        keys |= {
            f"ratio_ours_{o}_{ph}_{m}" for o in lat_systems if o != "ours" for ph in warm_phases for m in WARM_RATIOS
        }
    for other in [s for s in systems if s != "ours"] if "ours" in systems else []:
        keys |= {f"ratio_ours_{other}_{ph}_{m}" for ph in phases for m in BACKLOG_RATIOS}
        if "ours" in lat_systems and other in lat_systems:
            keys |= {f"ratio_ours_{other}_{ph}_{m}" for ph in lat_phases for m in (*LATENCY_RATIOS, "p99_ms_by_round")}
    return keys


def _f(v, nd=0) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        return f"{v:,.{nd}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _rounds(n: int) -> str:
    return "" if n == 1 else f" per system in {n} rounds (every other one in reverse order)"


def table(flat: dict) -> str:
    systems = [s for s in SYSTEMS if f"{s}_guarantee" in flat]
    sizes, rates = flat["sizes"], flat["latency_rates"]
    lines = [
        f"kafka-dr bench: {flat['records']:,} records per size, {flat['partitions']} partitions, 3 headers; "
        f"latency at {' and '.join(f'{r:,}' for r in rates)} records/s, {flat['latency_seconds']:g} s each after "
        f"{flat['latency_warmup_seconds']:g} s of warm-up{_rounds(flat.get('latency_rounds', 1))}",
        *_settings_lines(flat),
        "",
    ]
    head = (
        f"{'system':<13}{'guarantee':<46}{'size B':>7}{'records/s':>12}{'MB/s':>8}{'us/rec':>8}{'copy s':>8}"
        f"{'first s':>8}{'done s':>8}{'copied':>11}{'all':>5}{'RSS MB':>8}  records/s by round"
    )
    backlog_rounds = flat.get("backlog_rounds", 1)
    order = f", {backlog_rounds} rounds of every size, every other one in reverse order" if backlog_rounds > 1 else ""
    lines += [
        f"Throughput (backlog{order})",
        "us/rec: the machine's busy CPU per record; first s / done s: from the launch to the first record copied / "
        "to the copy's end",
        head,
        "-" * len(head),
    ]
    for size in sizes:
        for s in systems:
            k = f"{s}_s{size}_"
            by_round = " / ".join(_f(v) for v in flat.get(k + "records_per_s_by_round") or [])
            lines.append(
                f"{s:<13}{flat[f'{s}_guarantee']:<46}{size:>7}{_f(flat.get(k + 'records_per_s')):>12}"
                f"{_f(flat.get(k + 'mb_per_s'), 1):>8}{_f(flat.get(k + 'cpu_us_per_record'), 1):>8}"
                f"{_f(flat.get(k + 'copy_seconds'), 1):>8}{_f(flat.get(k + 'startup_seconds'), 1):>8}"
                f"{_f(flat.get(k + 'launch_to_done_seconds'), 1):>8}{_f(flat.get(k + 'copied')):>11}"
                f"{_f(flat.get(k + 'complete')):>5}{_f(flat.get(k + 'peak_rss_mb')):>8}  {by_round}"
            )
    lines += _whole_run_table(flat, systems, sizes)
    lines += broker_table(flat, systems, sizes)
    cpu_rows = [(size, s) for size in sizes for s in systems if flat.get(f"{s}_s{size}_cpu_busy_cores") is not None]
    if cpu_rows:
        head = (
            f"{'system':<13}{'size B':>7}{'busy':>7}{'own':>7}{'brokers':>8}{'steal':>7}{'idle':>7}{'us/record':>11}"
            f"{'brokers us/rec':>16}  us/record by round"
        )
        lines += [
            "",
            "CPU over the copy window (cores; busy = the whole machine, own = the system's processes, "
            "brokers = the lab's brokers; us/record = busy CPU per record, brokers us/rec = the brokers' part of it)",
            head,
            "-" * len(head),
        ]
        for size, s in cpu_rows:
            k = f"{s}_s{size}_cpu_"
            lines.append(
                f"{s:<13}{size:>7}{_f(flat.get(k + 'busy_cores'), 2):>7}{_f(flat.get(k + 'own_cores'), 2):>7}"
                f"{_f(flat.get(k + 'broker_cores'), 2):>8}"
                f"{_f(flat.get(k + 'steal_cores'), 2):>7}{_f(flat.get(k + 'idle_cores'), 2):>7}"
                f"{_f(flat.get(k + 'us_per_record'), 1):>11}{_f(flat.get(k + 'broker_us_per_record'), 1):>16}"
                f"  {' / '.join(_f(v, 1) for v in flat.get(k + 'us_per_record_by_round') or [])}".rstrip()
            )
    lines += warm_table(flat, systems, sizes, _f)
    steps = [(size, s) for size in sizes for s in systems if flat.get(f"{s}_s{size}_startup_timeline")]
    if steps:
        lines += ["", "Start-up (seconds from the launch to each step, mean over the rounds)"]
        for size, s in steps:
            timeline = flat[f"{s}_s{size}_startup_timeline"]
            lines.append(f"  {s:<13}{size:>5} B: " + ", ".join(f"{m} {v:g}" for m, v in timeline.items()))
    if "ours_nothing_new_seconds" in flat:
        lines += [
            "",
            f"Nothing new (ours, an incremental run of a flow already copied, launch to exit): "
            f"{_f(flat['ours_nothing_new_seconds'], 2)} s, {_f(flat.get('ours_nothing_new_cpu_seconds'), 2)} CPU-s, "
            f"stopped: {flat.get('ours_nothing_new_stopped_by')}",
        ]
    head = f"{'system':<13}{'rate/s':>8}{'p50 ms':>9}{'p99 ms':>9}{'samples':>10}{'sent':>10}{'RSS MB':>8}"
    head += "  p99 ms by round"
    lines += ["", "End-to-end latency (steady load below saturation, 100 B)", head, "-" * len(head)]
    for rate in rates:
        for s in systems:
            k = f"{s}_{latency_phase_name(rate)}_"
            if k + "p50_ms" not in flat:
                continue
            by_round = " / ".join(_f(v) for v in flat.get(k + "p99_ms_by_round") or [])
            lines.append(
                f"{s:<13}{rate:>8,}{_f(flat.get(k + 'p50_ms')):>9}{_f(flat.get(k + 'p99_ms')):>9}"
                f"{_f(flat.get(k + 'samples')):>10}{_f(flat.get(k + 'sent')):>10}{_f(flat.get(k + 'peak_rss_mb')):>8}"
                f"  {by_round}"
            )
    ratios = [(k[len("ratio_") :], v) for k, v in flat.items() if k.startswith("ratio_")]
    if ratios:
        lines += [
            "",
            "Ratios (ours / other; records/s: higher is better; CPU per record and latency: lower is better)",
        ]
        lines += [f"  {k:<52}{' / '.join(_f(x, 3) for x in v) if isinstance(v, list) else _f(v, 3)}" for k, v in ratios]
    return "\n".join(lines)


def _settings_lines(flat: dict) -> list[str]:
    """The clusters' shape and where each MirrorMaker 2 run differs from what it ships with."""
    lines = []
    if flat.get("brokers_per_cluster"):
        n = flat["brokers_per_cluster"]
        lines.append(f"clusters: {n} broker(s) each, topics replicated {min(n, 3)} times")
    for system, changed in (flat.get("mm2_deviations") or {}).items():
        listed = "; ".join(f"{k} {v}" for k, v in changed.items()) or "none"
        lines.append(f"{system} settings changed from MirrorMaker 2's shipped defaults: {listed}")
    return lines


def _whole_run_table(flat: dict, systems: list[str], sizes: list[int]) -> list[str]:
    """Launch to exit and the machine's CPU over the whole run, per system and size."""
    phases = [p for size in sizes for p in (f"s{size}", f"s{size}cold")]
    rows = [(p, s) for p in phases for s in systems if flat.get(f"{s}_{p}_launch_to_exit_seconds")]
    if not rows:
        return []
    head = (
        f"{'system':<13}{'phase':>9}{'exit s':>8}{'spread':>8}{'run us/rec':>12}{'spread':>8}{'wire B/rec':>12}"
        "  exit s / run us/rec by round"
    )
    lines = [
        "",
        "Whole run, launch to exit (median round; spread = highest / lowest round; run us/rec = the machine's "
        "busy CPU from launch to exit minus its idle baseline, per record; wire B/rec = the source backlog's "
        "produce requests per record; phase s<size>cold: the page cache dropped before the launch)",
        head,
        "-" * len(head),
    ]
    for phase, s in rows:
        k = f"{s}_{phase}_"
        wire = flat.get(k + "source_wire_mb")
        per_record = wire * 1e6 / flat[k + "records"] if wire is not None and flat.get(k + "records") else None
        exits = flat.get(k + "launch_to_exit_seconds_by_round") or []
        cpus = flat.get(k + "run_cpu_us_per_record_by_round") or []
        by_round = " / ".join(f"{_f(a, 1)} s {_f(b, 1)}" for a, b in zip(exits, cpus))
        lines.append(
            f"{s:<13}{phase:>9}{_f(flat.get(k + 'launch_to_exit_seconds'), 2):>8}"
            f"{_f(flat.get(k + 'launch_to_exit_seconds_spread'), 2):>8}"
            f"{_f(flat.get(k + 'run_cpu_us_per_record'), 1):>12}"
            f"{_f(flat.get(k + 'run_cpu_us_per_record_spread'), 2):>8}{_f(per_record, 0):>12}  {by_round}"
        )
    return lines


def json_line(flat: dict) -> str:
    return json.dumps(flat, separators=(",", ":"), sort_keys=False)


def failed(metrics, error: Exception, **known) -> dict:
    """A phase that failed: every figure present (``None``), the error's first line kept."""
    return {**{m: None for m in metrics}, **known, "error": (str(error).strip().splitlines() or [repr(error)])[0][:300]}


def megabytes(b: int) -> int:
    return int(round(b / 1e6))

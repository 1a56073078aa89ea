"""The warm-backlog phases' names, figures and table (pure; :mod:`kafka_dr.bench.warm` runs them)."""

from __future__ import annotations

WARM_METRICS = (
    "records_per_s",
    "copy_seconds",
    "produce_records_per_s",
    "records",
    "copied",
    "complete",
    "peak_rss_mb",
    "cpu_own_cores",
    "cpu_broker_cores",
    "cpu_own_us_per_record",
    "cpu_broker_us_per_record",
)
#: the ratios of a warm phase: its rate and the CPU the system and the brokers spent per record
WARM_RATIOS = ("records_per_s", "cpu_own_us_per_record", "cpu_broker_us_per_record")


def warm_phase_name(size: int) -> str:
    return f"warm{size}"


def per_record(cpu: dict, window: float, records: int) -> dict:
    """Microseconds of the system's own and the brokers' CPU per record over ``window`` seconds."""

    def us(cores):
        return None if cores is None or records <= 0 else round(cores * window / records * 1e6, 1)

    return {
        "cpu_own_us_per_record": us(cpu.get("cpu_own_cores")),
        "cpu_broker_us_per_record": us(cpu.get("cpu_broker_cores")),
    }


def warm_table(flat: dict, systems: list[str], sizes: list[int], fmt) -> list[str]:
    """One row per system and size that ran warm; ``fmt`` formats a figure (report's ``_f``)."""
    rows = [(size, s) for size in sizes for s in systems if f"{s}_{warm_phase_name(size)}_records_per_s" in flat]
    if not rows:
        return []
    head = (
        f"{'system':<13}{'size B':>7}{'records/s':>12}{'copy s':>8}{'produced/s':>12}{'copied':>11}{'all':>5}"
        f"{'own cores':>10}{'own us/rec':>11}{'brokers us/rec':>16}{'RSS MB':>8}"
    )
    lines = [
        "",
        "Warm backlog (the system already running, idle, when the backlog is produced; from its first record on "
        "the target to the copy's end; produced/s: how fast it arrived, a ceiling for the copy)",
        head,
        "-" * len(head),
    ]
    for size, s in rows:
        k = f"{s}_{warm_phase_name(size)}_"
        lines.append(
            f"{s:<13}{size:>7}{fmt(flat.get(k + 'records_per_s')):>12}{fmt(flat.get(k + 'copy_seconds'), 1):>8}"
            f"{fmt(flat.get(k + 'produce_records_per_s')):>12}{fmt(flat.get(k + 'copied')):>11}"
            f"{fmt(flat.get(k + 'complete')):>5}{fmt(flat.get(k + 'cpu_own_cores'), 2):>10}"
            f"{fmt(flat.get(k + 'cpu_own_us_per_record'), 1):>11}{fmt(flat.get(k + 'cpu_broker_us_per_record'), 1):>16}"
            f"{fmt(flat.get(k + 'peak_rss_mb')):>8}"
        )
    return lines

"""``kafka-dr bench [--quick] [--sizes 100,1024] [--records N]``: start (or reuse) the lab, run
the scenario, print the table and, last, one JSON line with every figure."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from kafka_dr.bench.report import SYSTEMS

#: --quick only proves the benchmark works (CI): one small round of each system on the lab as it
#: is (a single broker per cluster unless it runs with more), every figure of the full run present.
#: Full runs start 3-broker clusters (replication factor 3, min.insync.replicas 2), as a platform
#: team runs them; each size's backlog is copied in three rounds (a fresh backlog of fresh records
#: per round, every other round in reverse order: report.round_schedule) and one more with the page
#: cache dropped, so that one round the machine slowed does not set the median. Latency is measured
#: in three rounds, each rate 30 s unmeasured and then 60 s measured per round: long enough for a
#: JVM's compiler to settle and for our streaming task's hand-over to fall inside.
QUICK = {
    "records": 5_000,
    "latency_rates": (1000,),
    "latency_seconds": 2.0,
    "warmup_seconds": 0.5,
    "warmup_records": 0,
    "latency_rounds": 1,
    "backlog_rounds": 1,
    "cold_round": False,
    "warm_backlog": False,
    "brokers": 1,
    "systems": ("ours", "mm2", "rawpipe"),
}
FULL = {
    "records": 1_000_000,
    "latency_rates": (5000, 20000),
    "latency_seconds": 60.0,
    "warmup_seconds": 30.0,
    "warmup_records": 1_000_000,
    "latency_rounds": 3,
    "backlog_rounds": 3,
    "cold_round": True,
    "warm_backlog": True,
    "brokers": 3,
    "systems": SYSTEMS[:8],
}


#: --scale-out: workers of one core each (kafka_dr.bench.scaleout), records per flow of --quick
SCALE_OUT_WORKERS = 2
QUICK_SCALE_OUT_RECORDS = 20_000


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"small run that only proves the benchmark works ({QUICK['records']:,} records)",
    )
    p.add_argument("--records", type=int, default=None, help=f"backlog records per size (default {FULL['records']:,})")
    p.add_argument("--sizes", default="100,1024", help="value sizes in bytes, comma-separated (default 100,1024)")
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument(
        "--latency-rates",
        default=None,
        help="steady records/s of the latency phases, comma-separated "
        f"(default {','.join(map(str, FULL['latency_rates']))}; --quick: {QUICK['latency_rates'][0]})",
    )
    p.add_argument(
        "--latency-seconds",
        type=float,
        default=None,
        help=f"measured seconds per system, rate and round (default {FULL['latency_seconds']:g})",
    )
    p.add_argument(
        "--latency-warmup",
        type=float,
        default=None,
        help=f"unmeasured seconds at each rate before that (default {FULL['warmup_seconds']:g})",
    )
    p.add_argument(
        "--latency-rounds",
        type=int,
        default=None,
        help=f"latency rounds, every other one in reverse system order (default {FULL['latency_rounds']}; "
        f"--quick measures all systems at once)",
    )
    p.add_argument(
        "--backlog-rounds",
        type=int,
        default=None,
        help=f"backlog rounds per size, every other one in reverse system order, each on a fresh backlog of the same "
        f"records (default {FULL['backlog_rounds']}; --quick: 1)",
    )
    p.add_argument(
        "--cold-round",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="one more backlog round per size with the page cache dropped before each system (needs root; "
        "default: on; --quick: off)",
    )
    p.add_argument(
        "--warm-backlog",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="each size's backlog also produced while every system that runs continuously is already running "
        "and idle (MirrorMaker 2 as deployed, ours' continuous flow): no launch in its window "
        "(default: on; --quick: off)",
    )
    p.add_argument(
        "--brokers",
        type=int,
        default=None,
        help=f"brokers per cluster if the lab has to be started (default {FULL['brokers']}; --quick: "
        f"{QUICK['brokers']}); a lab set up before in --dir keeps its own",
    )
    p.add_argument(
        "--systems",
        default=None,
        help=(
            f"which systems, comma-separated, of {','.join(SYSTEMS)} "
            f"(default all; --quick: {','.join(QUICK['systems'])})"
        ),
    )
    p.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="lab folder (default: $KAFKA_DR_LAB_DIR or ./.lab); started if not running",
    )
    p.add_argument(
        "--keep-topics", action="store_true", help="keep the run's topics on the lab (deleted at the end by default)"
    )
    p.add_argument(
        "--warmup-records",
        type=int,
        default=None,
        help=(
            "unmeasured records through both brokers, then through each system, first "
            f"(default {FULL['warmup_records']:,}; --quick: 0)"
        ),
    )
    p.add_argument(
        "--scale-out",
        action="store_true",
        help="instead of the comparison: our job on a Spark standalone cluster "
        f"({SCALE_OUT_WORKERS} workers of 1 core) with 1 and 2 executors, --tasks 1, 2 and 4, and two flows "
        f"at once; the largest of --sizes (default {FULL['records']:,} records per flow; "
        f"--quick: {QUICK_SCALE_OUT_RECORDS:,}, two flows at once only)",
    )
    p.add_argument(
        "--spark-port",
        type=int,
        default=None,
        help="--scale-out: the Spark master's port (default $KAFKA_DR_LAB_SPARK_PORT or 7077; "
        "its web UI on $KAFKA_DR_LAB_SPARK_WEBUI_PORT or 8080, the workers' after it)",
    )
    p.add_argument(
        "--base-port",
        type=int,
        default=None,
        help="first broker port if the lab has to be started (default $KAFKA_DR_LAB_BASE_PORT or 19092)",
    )


def run(a: argparse.Namespace) -> int:
    import signal

    from kafka_dr.bench.report import json_line, table
    from kafka_dr.bench.run import run_bench
    from kafka_dr.lab.lab import Lab

    # SIGTERM unwinds like Ctrl-C, so the systems under test (own sessions) are stopped too
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s", stream=sys.stderr
    )
    preset = QUICK if a.quick else FULL
    systems, sizes, rates = validated(a, preset)  # every argument before the lab starts
    layout = scale_out_layout(a)  # validated before the lab starts
    lab = Lab(a.dir)
    running = lab.clusters()
    brokers = running[0].brokers if running else a.brokers or preset["brokers"]
    config = lab.up(count=2, base_port=a.base_port, brokers=brokers)
    if a.scale_out:
        from kafka_dr.bench import scaleout
        from kafka_dr.bench.run import run_scale_out_bench

        flat = run_scale_out_bench(
            config,
            lab.root / "bench",
            records=a.records or (QUICK_SCALE_OUT_RECORDS if a.quick else FULL["records"]),
            size=max(sizes),
            partitions=a.partitions,
            layout=layout,
            quick=a.quick,
            keep_topics=a.keep_topics,
        )
        print(scaleout.table(flat))
        print(json_line(flat), flush=True)
        return 0 if all(flat.get(f"scaleout_{k}_complete") for k in flat["scaleout_rows"]) else 1
    flat = run_bench(
        config,
        lab.root / "bench",
        records=a.records or preset["records"],
        sizes=sizes,
        partitions=a.partitions,
        latency_rates=rates,
        latency_seconds=a.latency_seconds or preset["latency_seconds"],
        warmup_seconds=preset["warmup_seconds"] if a.latency_warmup is None else a.latency_warmup,
        systems=systems,
        keep_topics=a.keep_topics,
        warmup_records=preset["warmup_records"] if a.warmup_records is None else a.warmup_records,
        latency_rounds=a.latency_rounds or preset["latency_rounds"],
        backlog_rounds=a.backlog_rounds or preset["backlog_rounds"],
        brokers=tuple(b.pid for b in lab.status() if b.pid),
        cold_round=preset["cold_round"] if a.cold_round is None else a.cold_round,
        warm_backlog=preset["warm_backlog"] if a.warm_backlog is None else a.warm_backlog,
    )
    print(table(flat))
    print(json_line(flat), flush=True)
    return 0


def scale_out_layout(a: argparse.Namespace):
    """The Spark cluster --scale-out starts (None without it); a port it cannot use is named (exit 2)."""
    if not a.scale_out:
        return None
    from kafka_dr.core.inputs import InvalidInput
    from kafka_dr.lab.spark_cluster import SparkLayout, default_port, default_webui_port

    layout = SparkLayout(
        port=a.spark_port or default_port(),
        webui_port=default_webui_port(),
        workers=SCALE_OUT_WORKERS,
        cores=1,
        memory="2g",
    )
    problems = [x.replace("--port", "--spark-port") for x in layout.problems()]
    if problems:
        raise InvalidInput(problems)
    return layout


def validated(a: argparse.Namespace, preset: dict) -> tuple[tuple[str, ...], list[int], tuple[int, ...]]:
    """The systems, sizes and latency rates to run; every bad argument named at once (exit 2),
    nothing started."""
    from kafka_dr.core.inputs import InvalidInput

    problems = []
    systems = preset["systems"]
    if a.systems is not None:
        systems = tuple(s.strip() for s in a.systems.split(",") if s.strip())
        unknown = [n for n in systems if n not in SYSTEMS]
        if unknown or not systems:
            problems.append(
                f"--systems {a.systems!r}: unknown {', '.join(unknown) or '(none given)'}; "
                f"choose from {', '.join(SYSTEMS)}"
            )
    sizes = []
    for part in (x.strip() for x in a.sizes.split(",")):
        if part.isdigit() and int(part) > 0:
            sizes.append(int(part))
        else:
            problems.append(f"--sizes {a.sizes!r}: {part!r} is not a size in bytes (e.g. 100,1024)")
    rates = preset["latency_rates"]
    if a.latency_rates is not None:
        parts = [x.strip() for x in a.latency_rates.split(",")]
        if all(x.isdigit() and int(x) > 0 for x in parts):
            rates = tuple(int(x) for x in parts)
        else:
            problems.append(f"--latency-rates {a.latency_rates!r}: expected records per second, e.g. 5000,20000")
    for flag, v in (
        ("--latency-rounds", a.latency_rounds),
        ("--backlog-rounds", a.backlog_rounds),
        ("--records", a.records),
        ("--partitions", a.partitions),
        ("--brokers", a.brokers),
    ):
        if v is not None and v < 1:
            problems.append(f"{flag} {v}: must be at least 1")
    if a.latency_seconds is not None and a.latency_seconds <= 0:
        problems.append(f"--latency-seconds {a.latency_seconds:g}: must be positive")
    if a.latency_warmup is not None and a.latency_warmup < 0:
        problems.append(f"--latency-warmup {a.latency_warmup:g}: must not be negative")
    if problems:
        raise InvalidInput(problems)
    return systems, sizes, rates


def main(argv: list[str] | None = None) -> int:
    from kafka_dr.entry import run_entry

    p = argparse.ArgumentParser(prog="kafka-dr bench", description=__doc__.splitlines()[0])
    add_arguments(p)
    a = p.parse_args(argv)
    return run_entry("kafka-dr bench", lambda: run(a))

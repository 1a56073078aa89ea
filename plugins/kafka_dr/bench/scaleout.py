"""Scale-out: our job on a Spark standalone cluster, with 1 and 2 executors, ``--tasks`` 1, 2
and 4, and two flows at once (``kafka-dr bench --scale-out``).

The cluster is the lab's kind (:mod:`kafka_dr.lab.spark_cluster`): a master and
:data:`WORKERS` workers of one core each, so an executor of one core is a JVM of its own on a
worker of its own, with Python workers of its own, as on a real cluster; the driver runs in
client mode on the bench's host. A row's executors are its ``spark.cores.max`` (one core per
executor). Every row copies a fresh backlog per flow in continuous mode, as the DAG runs a
flow, with ``--tasks`` streaming tasks per micro-batch (the partitions shared out among them).
Two flows at once: ``east_to_west`` and ``west_to_east``, each a job of its own with one
executor and one task, each copying a backlog of its own.

A streaming task holds its executor core for ``--task-seconds`` (30 s): with more tasks than
the job has cores, the others wait for a core, and the partitions they hold are copied a task
later. The rows with ``--tasks`` above the executors show that cost.

Figures per row: records/s over the copy window (the first record's arrival on a target to
the last flow's completion), that over the executors (per executor), launch to done, and the
machine's busy CPU per record over the window (the brokers and the Spark daemons included:
on this machine everything shares the same cores, so CPU per record is what tells whether
spreading the work costs more per record).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient

from kafka_dr.bench import disk, load
from kafka_dr.bench.cpu import CpuWindow
from kafka_dr.bench.systems import Ours
from kafka_dr.kafka.clients import client_config
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.lab.spark_cluster import SparkCluster, SparkLayout
from kafka_dr.lab.topology import CLUSTER_CONF

#: workers of one core each: an executor of one core per worker
WORKERS = 2
#: each worker's memory for its executors (one executor of Spark's default 1g, with headroom)
WORKER_MEMORY = "2g"
FLOWS = ("east_to_west", "west_to_east")


@dataclass(frozen=True)
class ScaleRow:
    """One configuration: ``executors`` in all, ``tasks`` streaming tasks per micro-batch per
    flow, ``flows`` jobs at once (the executors shared out among them)."""

    executors: int
    tasks: int
    flows: int = 1

    @property
    def key(self) -> str:
        return f"e{self.executors}_t{self.tasks}_f{self.flows}"

    @property
    def label(self) -> str:
        flows = "1 flow" if self.flows == 1 else f"{self.flows} flows"
        return f"{flows}, {self.executors} executor{'s' if self.executors > 1 else ''}, --tasks {self.tasks}"

    def spark_conf(self) -> dict[str, str]:
        """One job's Spark settings: its share of the executors, one core each."""
        return {
            **CLUSTER_CONF,
            "spark.cores.max": str(self.executors // self.flows),
            "spark.executor.cores": "1",
        }


ROWS = (
    ScaleRow(1, 1),
    ScaleRow(1, 2),
    ScaleRow(1, 4),
    ScaleRow(2, 1),
    ScaleRow(2, 2),
    ScaleRow(2, 4),
    ScaleRow(2, 1, flows=2),
)
#: ``--quick``: two flows at once, an executor each (both workers, both directions)
QUICK_ROWS = (ROWS[-1],)
METRICS = (
    "records_per_s",
    "records_per_s_per_executor",
    "copy_seconds",
    "launch_to_done_seconds",
    "cpu_busy_cores",
    "cpu_us_per_record",
    "copied",
    "records",
    "complete",
)


def run_scale_out(
    cfg,
    config_path: Path,
    workdir: Path,
    run: str,
    records: int,
    size: int,
    partitions: int,
    layout: SparkLayout,
    timeout: float,
    say=print,
    rows: tuple[ScaleRow, ...] = ROWS,
) -> dict:
    """Start the cluster (``layout``, in ``workdir``/spark), measure every row, stop it; the
    figures flat, ``scaleout_<row key>_<metric>``."""
    cluster = SparkCluster(Path(workdir) / "spark")
    cluster.up(layout)
    out: dict = {
        "scaleout_size": size,
        "scaleout_records_per_flow": records,
        "scaleout_workers": layout.workers,
        "scaleout_rows": [row.key for row in rows],
    }
    try:
        for i, row in enumerate(rows):
            try:
                r = scale_row(
                    cfg, config_path, workdir, f"{run}.so{i}", row, records, size, partitions, layout, timeout
                )
            except Exception as e:  # noqa: BLE001 - one row failing must not hide the others' figures
                r = {m: None for m in METRICS} | {"error": str(e).splitlines()[0]}
                say(f"[bench] scale-out {row.label}: FAILED: {r['error']}")
            else:
                say(
                    f"[bench] scale-out {row.label}: {r['records_per_s']:,} records/s "
                    f"({r['records_per_s_per_executor']:,} per executor) over {r['copy_seconds']}s, "
                    f"launch to done {r['launch_to_done_seconds']}s, CPU busy {r['cpu_busy_cores']} cores, "
                    f"{r['cpu_us_per_record']} us/record, copied {r['copied']:,}/{r['records']:,}"
                )
            out[f"scaleout_{row.key}_label"] = row.label
            for m, v in r.items():
                out[f"scaleout_{row.key}_{m}"] = v
    finally:
        cluster.down()
    return out


def scale_row(
    cfg,
    config_path: Path,
    workdir: Path,
    topic: str,
    row: ScaleRow,
    records: int,
    size: int,
    partitions: int,
    layout: SparkLayout,
    timeout: float,
) -> dict:
    """One row: a backlog per flow, the flows' jobs started together, watched to completion."""
    jobs = [
        Ours(
            cfg,
            Path(workdir) / row.key / flow,
            config_path,
            master=layout.master_url,
            flow=flow,
            spark_conf=row.spark_conf(),
            job_args=("--tasks", str(row.tasks)),
        )
        for flow in FLOWS[: row.flows]
    ]
    # a topic per flow: the other flow's allow-list leaves it alone, and each target holds only its copy
    topics = {job.flow: f"{topic}.{k}" for k, job in enumerate(jobs)}
    ends = {}
    for job in jobs:
        admin = AdminClient(client_config(job.source))
        ensure_topic(admin, topics[job.flow], partitions)
        load.produce_backlog(job.source, topics[job.flow], records, size, partitions)
        ends[job.flow] = load.end_offsets(admin, topics[job.flow], partitions)
    disk.write_back()
    started = time.monotonic()
    for job in jobs:
        job.start(topics[job.flow], partitions, continuous=True)
    cpu = CpuWindow(jobs[0].pid).start()
    try:

        def watch(job: Ours) -> load.Timeline:
            t = topics[job.flow]
            return load.watch_arrivals(
                job.target,
                t,
                partitions,
                lambda total: job.done(t, partitions, ends[job.flow], total),
                started,
                timeout,
                alive=job.alive,
            )

        with ThreadPoolExecutor(len(jobs)) as pool:
            timelines = list(pool.map(watch, jobs))
    except Exception as e:
        tails = "\n".join(f"--- {j.flow} log tail ---\n{j.log_tail()}" for j in jobs)
        raise RuntimeError(f"{row.label}: {e}\n{tails}") from None
    finally:
        cpu.stop()
        for job in jobs:
            job.stop()
    first, done = min(t.first for t in timelines), max(t.done for t in timelines)
    total = sum(sum(e) for e in ends.values())
    copied = sum(load.count_records(j.target, topics[j.flow], partitions) for j in jobs)
    window = max(done - first, 1e-3)
    figures = cpu.figures(first, done, total)
    return {
        "records_per_s": round(total / window),
        "records_per_s_per_executor": round(total / window / row.executors),
        "copy_seconds": round(window, 2),
        "launch_to_done_seconds": round(done - started, 2),
        "cpu_busy_cores": figures["cpu_busy_cores"],
        "cpu_us_per_record": figures["cpu_us_per_record"],
        "copied": copied,
        "records": total,
        "complete": copied == total,
    }


def table(flat: dict) -> str:
    """The scale-out rows as a table (``flat`` as :func:`run_scale_out` returns it)."""
    rows = [r for r in ROWS if r.key in flat.get("scaleout_rows", ())]
    size, per_flow = flat.get("scaleout_size"), flat.get("scaleout_records_per_flow")
    head = (
        f"Scale-out on a Spark standalone cluster ({flat.get('scaleout_workers')} workers of 1 core; "
        f"continuous mode; {per_flow:,} records of {size} B per flow)"
    )
    cols = (
        f"{'configuration':<36} {'records/s':>10} {'per exec':>9} {'copy s':>7} {'done s':>7} "
        f"{'busy':>5} {'us/rec':>7} {'all':>4}"
    )
    lines = [head, "", cols, "-" * len(cols)]
    for row in rows:

        def g(m: str, key: str = row.key):
            return flat.get(f"scaleout_{key}_{m}")

        if g("error"):
            lines.append(f"{row.label:<36} FAILED: {g('error')}")
            continue
        lines.append(
            f"{row.label:<36} {g('records_per_s'):>10,} {g('records_per_s_per_executor'):>9,} "
            f"{g('copy_seconds'):>7} {g('launch_to_done_seconds'):>7} {g('cpu_busy_cores'):>5} "
            f"{g('cpu_us_per_record'):>7} {'yes' if g('complete') else 'NO':>4}"
        )
    return "\n".join(lines)

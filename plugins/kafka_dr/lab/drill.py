"""Fault drills on the lab: run the replication job (spark-submit, continuous) while a
producer writes, inject a fault, let the job recover, then count what the target holds.

Each trial ends with an exact tally: every record on the source topic is identified by
(partition, offset); every record on the target by its provenance (origin
partition and offset), read with ``read_committed``. ``lost`` is what the
source has and the target does not, ``duplicated`` is every extra copy. ``kafka-dr drill``
prints one row per fault; the integration tests run short versions and additionally apply
the per-record check of ``tests/kafka_checks.check_replica`` (bytes, headers, timestamps,
order).

Faults: ``kill-job`` (kill -9 of the job's whole process group at a random moment, then a
restart), ``target-restart``/``source-restart`` (broker stopped, kept down, started),
``network-cut`` (the TCP proxy between job and target dropped and restored), ``soak`` (steady
load for a while: memory of the job's processes and lag sampled).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kafka_dr.core.config_load import load_config
from kafka_dr.core.provenance import Provenance, has_origin
from kafka_dr.shipped import spark_job

BIN = Path(sys.executable).parent
FLOW = "east_to_west"


@dataclass
class TrialResult:
    fault: str
    trials: int = 0
    produced: int = 0
    lost: int = 0
    duplicated: int = 0
    restarts: int = 0
    notes: list[str] = field(default_factory=list)
    figures: dict = field(default_factory=dict)

    def row(self) -> str:
        return (
            f"| {self.fault} | {self.trials} | {self.produced} | {self.lost} | {self.duplicated} | {self.restarts} "
            f"| {'; '.join(self.notes)} |"
        )


TABLE_HEAD = "| fault | trials | produced | lost | duplicated | job restarts | notes |\n|---|---|---|---|---|---|---|"


def format_table(results: list[TrialResult]) -> str:
    return "\n".join([TABLE_HEAD, *(r.row() for r in results)])


# --- the pieces ---------------------------------------------------------------------------


class SteadyProducer(threading.Thread):
    """Writes ``batch`` records every ``pause`` seconds, round-robin over the partitions,
    until stopped. A source broker that is down just delays it (idempotent, long timeout)."""

    def __init__(self, cluster, topic: str, partitions: int, batch: int = 200, pause: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.cluster, self.topic, self.partitions, self.batch, self.pause = cluster, topic, partitions, batch, pause
        self.stop_event = threading.Event()
        self.count = 0
        self.errors: list[str] = []

    def run(self) -> None:
        from kafka_dr.kafka import clients
        from kafka_dr.kafka.writing import produce_all

        p = clients.producer(self.cluster, **{"delivery.timeout.ms": 300_000})
        while not self.stop_event.is_set():
            rows = [
                (
                    b"k%d" % (self.count + i),
                    b"v%d-" % (self.count + i) + os.urandom(40),
                    [("seq", b"%d" % (self.count + i))],
                    None,
                    (self.count + i) % self.partitions,
                )
                for i in range(self.batch)
            ]
            try:
                produce_all(p, self.topic, rows, timeout=300)
                self.count += len(rows)
            except RuntimeError as e:  # counted from the source afterwards anyway
                self.errors.append(str(e))
            time.sleep(self.pause)

    def stop(self) -> None:
        self.stop_event.set()
        self.join(330)


def replicate_command(
    config: Path, flow: str, mode: str, master: str = "local[2,4]", conf: dict[str, str] | None = None
) -> list[str]:
    """The drills' spark-submit of the replication job: local[2,4] (a failed task is retried,
    as on a cluster) or ``master``, no Spark UI, ``conf`` settings, a 0.5 s trigger."""
    settings = {"spark.ui.enabled": "false", **(conf or {})}
    return [
        str(BIN / "spark-submit"),
        *("--master", master),
        *(arg for k, v in settings.items() for arg in ("--conf", f"{k}={v}")),
        str(spark_job("replicate.py")),
        *("--config", str(config), "--flow", flow, "--mode", mode, "--trigger-seconds", "0.5"),
    ]


class Job:
    """The replication job as a spark-submit process (its own process group: kill -9 takes
    the JVM and its Python workers together, as a crash of the job's host would)."""

    def __init__(
        self, config: Path, log: Path, flow: str = FLOW, mode: str = "continuous", max_restarts: int = 10
    ) -> None:
        self.stop_file = log.with_suffix(f".stop-{uuid.uuid4().hex[:6]}")
        env = {
            **os.environ,
            "PATH": f"{BIN}:{os.environ['PATH']}",
            "PYSPARK_PYTHON": sys.executable,
            "PYTHONUNBUFFERED": "1",
        }  # the job log must show what happened up to a hang or a kill
        self.log = log
        self.proc = subprocess.Popen(
            [
                *replicate_command(config, flow, mode),
                "--max-restarts",
                str(max_restarts),
                "--stop-file",
                str(self.stop_file),
            ],
            stdout=open(log, "ab"),
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill9(self) -> None:
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def stop(self, timeout: float = 120) -> int:
        """Graceful stop (the stop file): the batch in flight finishes first."""
        self.stop_file.touch()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill9()
            return -9
        finally:
            self.stop_file.unlink(missing_ok=True)

    def rss_mb(self) -> float:
        """Resident memory of every process of the job (JVM, Python workers), in MiB."""
        out = subprocess.run(["ps", "-e", "-o", "pgid=,rss="], capture_output=True, text=True).stdout
        kb = sum(int(r) for g, r in (ln.split() for ln in out.splitlines() if ln.strip()) if int(g) == self.proc.pid)
        return kb / 1024


def restarts_logged(log: Path) -> int:
    """How many times the job's supervisor restarted a failed query (its ERROR lines)."""
    if not log.exists():
        return 0
    return sum(1 for ln in log.read_text(errors="replace").splitlines() if "query failed" in ln and "restart" in ln)


def flow_config(lab_config: Path, workdir: Path, topic: str, transaction_timeout_s: int | None = None) -> Path:
    """The lab's config narrowed to one topic (drills never copy each other's records)."""
    doc = yaml.safe_load(lab_config.read_text())
    for f in doc["flows"]:
        f["topics"] = {"allow": [topic]}
        if transaction_timeout_s is not None:
            f["transaction_timeout_seconds"] = transaction_timeout_s
    path = workdir / f"kafka-dr.{topic}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _read(cluster, topic: str):
    from kafka_dr.kafka import clients
    from kafka_dr.kafka.reading import read_partitions
    from kafka_dr.kafka.topics import partition_count

    n = partition_count(clients.admin(cluster), topic)
    if not n:
        return []
    c = clients.consumer(cluster, group_id=f"kafka-dr-drill-{uuid.uuid4().hex[:6]}")
    try:
        return read_partitions(c, topic, list(range(n)), timeout=1800)  # millions of records on a loaded machine
    finally:
        c.close()


def tally(cfg, topic: str, source: str = "east", target: str = "west") -> tuple[int, int, int]:
    """(produced, lost, duplicated) for ``topic`` replicated ``source`` -> ``target``."""
    sent = {(r.partition, r.offset) for r in _read(cfg.cluster(source), topic) if not has_origin(r.headers)}
    copies: Counter = Counter()
    for r in _read(cfg.cluster(target), topic):
        p = Provenance.from_headers(r.headers)
        if p is not None and p.cluster == source:
            copies[(p.partition, p.offset)] += 1
    lost = len(sent - set(copies))
    duplicated = sum(n - 1 for n in copies.values())
    return len(sent), lost, duplicated


def lag(cfg, topic: str, flow_name: str = FLOW) -> int:
    """Source records not yet committed on the target: sum of (high watermark - progress)."""
    from confluent_kafka import TopicPartition

    from kafka_dr.kafka import clients
    from kafka_dr.kafka.progress_store import read_committed_progress
    from kafka_dr.kafka.topics import partition_count

    flow = next(f for f in cfg.flows if f.name == flow_name)
    src = cfg.cluster(flow.source)
    n = partition_count(clients.admin(src), topic) or 0
    c = clients.consumer(src, group_id="kafka-dr-drill-lag")
    try:
        highs = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)[1] for p in range(n)}
    finally:
        c.close()
    done = read_committed_progress(cfg, flow, [(topic, p) for p in range(n)], timeout=60)
    return sum(max(0, h - done.get((topic, p), {}).get("next_offset", 0)) for p, h in highs.items())


def wait_for(what: str, check, timeout: float, every: float = 1.0):
    deadline = time.monotonic() + timeout
    last_error = ""
    while time.monotonic() < deadline:
        try:
            v = check()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 - a cluster coming back answers errors for a while
            last_error = f" (last error: {e})"
        time.sleep(every)
    raise TimeoutError(f"drill: {what} did not happen within {timeout:.0f}s{last_error}")


def _copied(cfg, topic: str) -> int:
    from confluent_kafka import TopicPartition

    from kafka_dr.kafka import clients

    c = clients.consumer(cfg.cluster("west"), group_id="kafka-dr-drill-count")
    try:
        md = c.list_topics(topic, timeout=10).topics.get(topic)
        if md is None or md.error is not None:
            return 0
        return sum(
            c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1] for p in md.partitions
        )
    finally:
        c.close()


# --- the drill ---------------------------------------------------------------------------


class Drill:
    """Runs fault trials on a two-cluster lab (east -> west). ``lab`` is a running
    :class:`~kafka_dr.lab.lab.Lab`; for ``network-cut`` it must have been started with
    ``proxied=("west",)``."""

    def __init__(
        self,
        lab,
        workdir: Path,
        partitions: int = 4,
        seed: int = 7,
        say=print,
        proxy=None,
        transaction_timeout_s: int | None = None,
    ) -> None:
        self.lab, self.workdir, self.partitions, self.proxy = lab, Path(workdir), partitions, proxy
        #: the flows' ``transaction_timeout_seconds`` (None: the config's default)
        self.transaction_timeout_s = transaction_timeout_s
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.rng = random.Random(seed)
        self.say = say
        self.last_topic = ""
        self.last_config: Path | None = None

    def _setup(self, fault: str):
        from kafka_dr.kafka import clients
        from kafka_dr.kafka.topics import ensure_topic

        topic = f"drill.{fault}.{uuid.uuid4().hex[:6]}"
        config = flow_config(self.lab.config_file, self.workdir, topic, self.transaction_timeout_s)
        cfg = load_config(config)
        ensure_topic(clients.admin(cfg.cluster("east")), topic, partitions=self.partitions)
        self.last_topic, self.last_config = topic, config
        return topic, config, cfg

    def _finish(
        self, result: TrialResult, cfg, topic: str, job: Job, producer: SteadyProducer, catch_up: float = 900
    ) -> TrialResult:
        producer.stop()
        try:
            wait_for(f"the job catching up on {topic}", lambda: lag(cfg, topic) == 0, catch_up, every=2)
        finally:
            job.stop()
        result.restarts += restarts_logged(job.log)
        produced, lost, dup = tally(cfg, topic)
        result.produced += produced
        result.lost += lost
        result.duplicated += dup
        if producer.errors:
            result.notes.append(f"producer retried {len(producer.errors)} batch(es)")
        return result

    def kill_job(self, trials: int = 10) -> TrialResult:
        topic, config, cfg = self._setup("kill-job")
        log = self.workdir / f"{topic}.log"
        result = TrialResult("kill -9 of the job", trials)
        producer = SteadyProducer(cfg.cluster("east"), topic, self.partitions)
        producer.start()
        job = None
        try:
            for trial in range(trials):
                job = Job(config, log)
                seen = _copied(cfg, topic)
                wait_for("the job copying", lambda seen=seen: _copied(cfg, topic) > seen, 420, every=0.5)
                time.sleep(self.rng.uniform(0, 3))
                if not job.alive():
                    raise RuntimeError(f"drill kill-job: trial {trial}: the job died by itself; see {log}")
                job.kill9()
                self.say(
                    f"  kill-job trial {trial + 1}/{trials}: killed with {_copied(cfg, topic)} records on the target"
                )
            job = Job(config, log)
            return self._finish(result, cfg, topic, job, producer)
        finally:
            producer.stop()
            if job is not None and job.alive():
                job.kill9()

    def broker_restart(self, which: str, outage: float = 20.0) -> TrialResult:
        """Stop the ``which`` broker (east = source, west = target) mid-run, keep it down
        ``outage`` seconds, start it again; the job must ride it out or restart and resume."""
        name = "east" if which == "source" else "west"
        topic, config, cfg = self._setup(f"{which}-restart")
        log = self.workdir / f"{topic}.log"
        result = TrialResult(f"{which} broker stopped {outage:.0f}s and restarted", 1)
        producer = SteadyProducer(cfg.cluster("east"), topic, self.partitions)
        producer.start()
        job = Job(config, log)
        try:
            wait_for("the job copying", lambda: _copied(cfg, topic) > 0, 420, every=0.5)
            self.lab.stop(name)
            time.sleep(outage)
            self.lab.start(name)
            # a broker just back answers "not leader" for a while: read its end offsets once it leads again
            before = wait_for("the target's end offsets after the restart", lambda: (_copied(cfg, topic),), 120)[0]
            wait_for("copying after the restart", lambda: _copied(cfg, topic) > before, 240)
            if not job.alive():
                raise RuntimeError(f"drill {which}-restart: the job gave up; see {log}")
            return self._finish(result, cfg, topic, job, producer)
        finally:
            producer.stop()
            if job.alive():
                job.kill9()

    def network_cut(self, outage: float = 20.0) -> TrialResult:
        """Cut the network between the job and the target (the lab's proxied ``west``)."""
        proxy = self.proxy
        if proxy is None:
            raise RuntimeError("drill network-cut needs a lab started with proxied=('west',) and its TcpProxy")
        topic, config, cfg = self._setup("network-cut")
        log = self.workdir / f"{topic}.log"
        result = TrialResult(f"network to the target cut {outage:.0f}s and restored", 1)
        producer = SteadyProducer(cfg.cluster("east"), topic, self.partitions)
        producer.start()
        job = Job(config, log)
        try:
            wait_for("the job copying", lambda: _copied(cfg, topic) > 0, 420, every=0.5)
            proxy.cut()
            time.sleep(outage)
            proxy.restore()
            before = wait_for(
                "the target's end offsets after the network returned", lambda: (_copied(cfg, topic),), 120
            )[0]
            wait_for("copying after the network returned", lambda: _copied(cfg, topic) > before, 240)
            return self._finish(result, cfg, topic, job, producer)
        finally:
            producer.stop()
            if job.alive():
                job.kill9()

    def soak(self, seconds: float = 600, sample_every: float = 10.0, rate_batch: int = 200) -> TrialResult:
        """Steady load for ``seconds``: the job's memory (RSS of all its processes) and the
        lag (records committed on the source but not yet on the target) are sampled."""
        topic, config, cfg = self._setup("soak")
        log = self.workdir / f"{topic}.log"
        result = TrialResult(f"soak {seconds / 60:.0f} min at steady load", 1)
        producer = SteadyProducer(cfg.cluster("east"), topic, self.partitions, batch=rate_batch, pause=0.1)
        producer.start()
        job = Job(config, log)
        samples: list[tuple[float, float, int]] = []
        try:
            wait_for("the job copying", lambda: _copied(cfg, topic) > 0, 420, every=0.5)
            t0 = time.monotonic()
            while time.monotonic() - t0 < seconds:
                time.sleep(sample_every)
                samples.append((time.monotonic() - t0, job.rss_mb(), lag(cfg, topic)))
                if not job.alive():
                    raise RuntimeError(f"drill soak: the job died at {samples[-1][0]:.0f}s; see {log}")
            rate = producer.count / max(1.0, time.monotonic() - t0)
            (self.workdir / f"{topic}.samples.csv").write_text(  # kept even if the catch-up or tally fails
                "seconds,rss_mib,lag_records\n" + "".join(f"{t:.0f},{m:.1f},{lg}\n" for t, m, lg in samples)
            )
            self._finish(result, cfg, topic, job, producer)
        finally:
            producer.stop()
            if job.alive():
                job.kill9()
        early = [s for s in samples if s[0] <= 60] or samples[:1]
        late = [s for s in samples if s[0] >= seconds - 60] or samples[-1:]
        mem_start = sum(s[1] for s in early) / len(early)
        mem_end = sum(s[1] for s in late) / len(late)
        result.figures = {
            "rss_mib_first_minute": round(mem_start, 1),
            "rss_mib_last_minute": round(mem_end, 1),
            "lag_max": max(s[2] for s in samples),
            "records_per_s": round(rate),
            "samples": len(samples),
        }
        result.notes += [
            f"memory {mem_start:.0f} MiB in the first minute, {mem_end:.0f} MiB in the last",
            f"lag max {max(s[2] for s in samples)} records, median {sorted(s[2] for s in samples)[len(samples) // 2]}",
            f"~{rate:.0f} records/s produced",
        ]
        return result


FAULTS = ("kill-job", "target-restart", "source-restart", "network-cut", "soak")


def run_drill(
    lab_dir: Path | None,
    faults: list[str],
    kill_trials: int,
    soak_seconds: float,
    base_port: int,
    say=print,
    soak_batch: int = 200,
) -> list[TrialResult]:
    """``kafka-dr drill``: start a drill lab (target behind a proxy), run ``faults``, wipe it."""
    from kafka_dr.lab.lab import Lab
    from kafka_dr.lab.proxy import TcpProxy

    lab = Lab(lab_dir or Path(".lab-drill"))
    lab.down(wipe=True)
    lab.up(count=2, base_port=base_port, proxied=("west",))
    west = next(c for c in lab.clusters() if c.name == "west")
    proxy = TcpProxy.for_cluster(west).start()
    drill = Drill(lab, lab.root / "runs", say=say, proxy=proxy)
    results = []
    try:
        for fault in faults:
            say(f"drill: {fault} ...")
            if fault == "kill-job":
                r = drill.kill_job(kill_trials)
            elif fault in ("target-restart", "source-restart"):
                r = drill.broker_restart(fault.split("-")[0])
            elif fault == "network-cut":
                r = drill.network_cut()
            elif fault == "soak":
                r = drill.soak(soak_seconds, rate_batch=soak_batch)
            else:
                raise ValueError(f"unknown fault {fault!r} (known: {', '.join(FAULTS)})")
            say(f"drill: {r.row()}")
            results.append(r)
    finally:
        lab.down(wipe=False)
        proxy.close()
    return results

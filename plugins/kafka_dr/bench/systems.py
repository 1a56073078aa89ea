"""The systems under test behind one small interface (MirrorMaker 2's in
:mod:`kafka_dr.bench.mm2_systems`).

Each replicates one source topic of the lab's ``east`` into a target topic of its own on
``west`` (so runs never interfere): ours into the same name (provenance policy, as the lab's
flows), MirrorMaker 2 into ``east.<topic>`` (its default replication policy; a task per core),
with ``tasks.max = 1`` as it ships into ``east.t1.<topic>``, with exactly-once into
``east.eos.<topic>`` (a transaction per poll, as it ships) and ``east.eosi.<topic>`` (a
transaction per interval), the raw pipe (a pipe per core) into ``raw.<topic>`` and the
one-process raw pipe into ``raw1.<topic>``.
``start(topics, continuous)`` launches the system as its own process (tree) for one topic or
several, ``done(...)`` says whether a backlog is completely copied, ``finish()`` waits for a
batch run's exit, ``stop()`` ends it.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import yaml
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_dr.bench.procmem import group_alive
from kafka_dr.core.config import DrConfig
from kafka_dr.core.config_load import load_config
from kafka_dr.kafka.clients import client_config
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.spark.timeline import PREFIX as TIMELINE_PREFIX

FLOW = "east_to_west"
_TIMELINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) " + re.escape(TIMELINE_PREFIX) + r" (.+)$", re.M)


def start_up_timeline(log: str, launched: float) -> dict[str, float]:
    """Seconds from ``launched`` (epoch) to the first of each ``timeline:`` mark in a job's log
    (its times are local, to the millisecond)."""
    out: dict[str, float] = {}
    for stamp, mark in _TIMELINE.findall(log):
        when = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()
        out.setdefault(mark.strip(), round(when - launched, 2))
    return out


class System:
    name = ""
    guarantee = ""
    #: a batch run ends by itself once its backlog is copied; a system that never does
    #: (MirrorMaker 2) is stopped the moment its copy is done, as a batch user would
    exits_when_done = True

    def __init__(self, cfg: DrConfig, workdir: Path, source: str = "east", target: str = "west") -> None:
        self.cfg = cfg
        self.source, self.target = cfg.cluster(source), cfg.cluster(target)
        self.workdir = workdir / self.name
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self._t_admin = AdminClient(client_config(self.target))  # created before any target topic: only for creating

    def target_topic(self, topic: str) -> str:
        raise NotImplementedError

    def start(self, topics: str | list[str], partitions: int, continuous: bool) -> None:
        raise NotImplementedError

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def done(self, topic: str, partitions: int, source_ends: list[int], target_total: int) -> bool:
        """The whole backlog is on the target (non-transactional systems: by end offsets)."""
        return target_total >= sum(source_ends)

    def stop(self, grace: float = 60.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def finish(self, timeout: float) -> float:
        """Once the copy is done: until every process of the system is gone (its own exit, or
        after :meth:`stop` for one that never exits); returns when (monotonic). Its processes
        are one session, so a JVM its launcher leaves behind still counts."""
        assert self.proc is not None
        pgid = self.proc.pid
        if self.exits_when_done:
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                raise TimeoutError(f"{self.name} did not exit within {timeout:.0f}s of its copy being done") from None
        else:
            self.stop()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not group_alive(pgid):
                return time.monotonic()
            time.sleep(0.02)
        raise TimeoutError(f"{self.name}: processes of its session still running {timeout:.0f}s after it exited")

    def _spawn(self, cmd: list[str], log_name: str, env: dict | None = None) -> None:
        with open(self.workdir / log_name, "ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def log_tail(self, n: int = 30) -> str:
        logs = sorted(self.workdir.glob("*.log"), key=lambda f: f.stat().st_mtime)
        return "\n".join(logs[-1].read_text(errors="replace").splitlines()[-n:]) if logs else ""

    def timeline(self, topic: str, launched: float) -> dict[str, float]:
        """Seconds from the launch (``launched``, epoch) to each step of the start-up the system
        logs; none by default."""
        return {}


class Ours(System):
    """This project's job, through the same entry point the DAGs spark-submit
    (``kafka_dr.spark.job.main``, which ``spark_jobs/replicate.py`` calls), local Spark by
    default. ``flow``: which of the lab's two flows (the scale-out runs two at once);
    ``spark_conf``: the config's Spark settings for the run; ``job_args``: more of the job's
    arguments (``--tasks``)."""

    name = "ours"
    guarantee = "exactly-once (transactions, read_committed)"

    def __init__(
        self,
        cfg: DrConfig,
        workdir: Path,
        config_path: Path,
        master: str = "local[2]",
        trigger_seconds: float = 1.0,
        flow: str = FLOW,
        spark_conf: dict[str, str] | None = None,
        job_args: tuple[str, ...] = (),
    ) -> None:
        self._flow_index = next(i for i, f in enumerate(cfg.flows) if f.name == flow)
        f = cfg.flows[self._flow_index]
        super().__init__(cfg, workdir, f.source, f.target)
        self.config_path, self.master, self.trigger_seconds = config_path, master, trigger_seconds
        self.flow, self.spark_conf, self.job_args = flow, spark_conf, tuple(job_args)
        self._progress: Consumer | None = None
        self._stop_file = self.workdir / "stop"

    def target_topic(self, topic: str) -> str:
        return topic

    def _write_config(self, topics: list[str]) -> Path:
        doc = yaml.safe_load(Path(self.config_path).read_text())
        flow = doc["flows"][self._flow_index]  # the loaded config keeps the file's order of flows
        flow["topics"] = {"allow": [re.escape(t) for t in topics]}
        doc["flows"] = [flow]
        doc.pop("schema_mirror", None)
        if self.spark_conf is not None:
            doc["spark"] = {"master": self.master, "conf": dict(self.spark_conf)}
        path = self.workdir / f"kafka-dr-{topics[0]}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path

    def start(self, topics: str | list[str], partitions: int, continuous: bool) -> None:
        topics = [topics] if isinstance(topics, str) else topics
        topic = topics[0]
        path = self._write_config(topics)
        self._flow_cfg = load_config(path)
        self._stop_file.unlink(missing_ok=True)
        cmd = [
            *self._command(path),
            "--mode",
            "continuous" if continuous else "incremental",
            "--master",
            self.master,
            "--trigger-seconds",
            str(self.trigger_seconds),
            "--stop-file",
            str(self._stop_file),
            # on a crowded machine Spark's Python workers can miss their fixed 10 s connect-back
            # window at query start; the job's own supervisor retries (as the DAG's would)
            "--max-restarts",
            "12",
            *self.job_args,
        ]
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
        self._spawn(cmd, f"job-{topic}.log", env)

    def nothing_new(self, topic: str) -> dict:
        """An incremental run on ``topic`` once it is copied: launch to exit, and the CPU of the
        process and all it started (no other child of this process runs meanwhile)."""
        path = self._write_config([topic])
        cmd = [*self._command(path), "--mode", "incremental", "--master", self.master]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        launched = time.monotonic()
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        seconds = time.monotonic() - launched
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise RuntimeError(f"the nothing-new run failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
        summary = json.loads(proc.stdout.strip().splitlines()[-1])["kafka_dr.summary"]
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return {"seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2), "stopped_by": summary["stopped_by"]}

    def _command(self, config: Path) -> list[str]:
        """The job's entry point, as the DAGs' spark-submit runs it, for the config ``config``."""
        job = "import sys; from kafka_dr.spark.job import main; sys.exit(main())"
        return [sys.executable, "-c", job, "--config", str(config), "--flow", self.flow]

    def timeline(self, topic: str, launched: float) -> dict[str, float]:
        """The job's ``timeline:`` log lines (kafka_dr.spark.job) of its run on ``topic``."""
        log = self.workdir / f"job-{topic}.log"
        return start_up_timeline(log.read_text(errors="replace"), launched) if log.exists() else {}

    def done(self, topic: str, partitions: int, source_ends: list[int], target_total: int) -> bool:
        """Copy complete = the flow's committed progress reached every partition's end
        (target end offsets cannot tell: transaction markers take offsets too)."""
        if self._progress is None:
            self._progress = Consumer(
                client_config(
                    self.target,
                    **{"group.id": self._flow_cfg.names.progress_group(self.flow), "enable.auto.commit": False},
                )
            )
        try:
            got = self._progress.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=5)
        except Exception:  # noqa: BLE001 - the target topic or the group may not exist yet
            return False
        return all(tp.error is None and tp.offset >= source_ends[tp.partition] for tp in got)

    def stop(self, grace: float = 60.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self._stop_file.touch()  # graceful: finish the batch in flight, then stop
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        super().stop(grace)
        if self._progress is not None:
            self._progress.close()
            self._progress = None


class OursSpark(Ours):
    """Ours with every backlog copied by Spark (``--driver-copy-max-records 0``), however small:
    what a backlog above the driver-copy limit costs, beside ``ours``."""

    name = "ours_spark"
    guarantee = "as ours; a backlog always copied by Spark"

    def __init__(self, cfg: DrConfig, workdir: Path, config_path: Path) -> None:
        super().__init__(cfg, workdir, config_path, job_args=("--driver-copy-max-records", "0"))


class RawPipe(System):
    """The raw-pipe limit with one pipe per core (:mod:`kafka_dr.bench.rawpipe`), sharing the
    partitions: what this machine's brokers and librdkafka from Python allow."""

    name = "rawpipe"
    guarantee = "none (at-least-once at best)"
    prefix = "raw."

    def __init__(self, cfg: DrConfig, workdir: Path, processes: int | None = None) -> None:
        super().__init__(cfg, workdir)
        self.processes = processes or os.cpu_count() or 1

    def target_topic(self, topic: str) -> str:
        return f"{self.prefix}{topic}"

    def start(self, topics: str | list[str], partitions: int, continuous: bool) -> None:
        topics = [topics] if isinstance(topics, str) else topics
        for t in topics:
            ensure_topic(self._t_admin, self.target_topic(t), partitions)
        cmd = [
            sys.executable,
            "-m",
            "kafka_dr.bench.rawpipe",
            "--source",
            self.source.bootstrap_servers,
            "--target",
            self.target.bootstrap_servers,
            *[a for t in topics for a in ("--topic", t)],
            "--target-prefix",
            self.prefix,
            "--partitions",
            str(partitions),
            "--processes",
            str(self.processes),
            *([] if continuous else ["--until-end"]),
        ]
        self._spawn(cmd, f"rawpipe-{topics[0]}.log")


class RawPipeOneProcess(RawPipe):
    """One pipe, one Python thread: the second, lower reference."""

    name = "rawpipe1"
    prefix = "raw1."

    def __init__(self, cfg: DrConfig, workdir: Path) -> None:
        super().__init__(cfg, workdir, processes=1)

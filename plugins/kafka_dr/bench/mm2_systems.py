"""MirrorMaker 2 as a system under test (:mod:`kafka_dr.bench.systems`): a task per core
(``mm2``), ``tasks.max = 1`` as it ships (``mm2t1``), exactly-once with a transaction per poll
as it ships (``mm2eos``) and per interval (``mm2eosint``), each writing remote topics of its
own on the target."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from kafka_dr.bench.mm2 import MirrorMaker2, Mm2Settings
from kafka_dr.bench.systems import System
from kafka_dr.core.config import DrConfig
from kafka_dr.kafka.clients import client_config
from kafka_dr.kafka.copy_tuning import CopyTuning
from kafka_dr.spark.job import JobOptions


class Mm2(System):
    """MirrorMaker 2, ``tasks.max`` one per core (the machine's limit; it ships with 1)."""

    name = "mm2"
    guarantee = "at-least-once (MirrorMaker 2 default)"
    exits_when_done = False
    #: ``tasks.max``; None: one per core
    tasks: int | None = None

    def __init__(self, cfg: DrConfig, workdir: Path, settings: Mm2Settings | None = None) -> None:
        super().__init__(cfg, workdir)
        self.settings = settings or Mm2Settings()
        self.settings.tasks = self.tasks or os.cpu_count() or 1
        self.mm: MirrorMaker2 | None = None

    def target_topic(self, topic: str) -> str:
        return f"{self.source.name}{self.settings.separator}{topic}"

    def start(self, topics: str | list[str], partitions: int, continuous: bool) -> None:
        topics = [topics] if isinstance(topics, str) else topics
        # remote and internal topics replicated as the lab's own (3 of 3 brokers, 1 of 1)
        self.settings.replication_factor = min(3, len(self._t_admin.list_topics(timeout=10).brokers))
        self.settings.run_id = f"kafka-dr-bench-{self.name}.{topics[0]}"
        self.mm = MirrorMaker2(
            self.workdir / topics[0], self.source, self.target, "|".join(re.escape(t) for t in topics), self.settings
        ).start()
        self.proc = self.mm.proc

    def log_tail(self, n: int = 30) -> str:
        return self.mm.log_tail(n) if self.mm else ""


class Mm2OneTask(Mm2):
    """MirrorMaker 2 with ``tasks.max = 1``, as it ships. Remote topics ``east.t1.<topic>``."""

    name = "mm2t1"
    tasks = 1

    def __init__(self, cfg: DrConfig, workdir: Path) -> None:
        super().__init__(cfg, workdir, Mm2Settings(separator=".t1."))


class Mm2ExactlyOnce(Mm2):
    """MirrorMaker 2 with its exactly-once source support: the like-for-like comparison for
    ours (``read_committed`` readers), a transaction per poll as it ships
    (``transaction.boundary = poll``). Its remote topics are ``east.eos.<topic>``, so every
    MirrorMaker run of one bench run writes topics of its own."""

    name = "mm2eos"
    guarantee = "exactly-once (MirrorMaker 2 EOS source, txn per poll)"
    #: ``transaction.boundary = interval``: transactions as long as ours may last (a backlog
    #: chunk's time bound, a streaming task's commit interval); False: per poll, as shipped
    interval_boundary = False

    def __init__(self, cfg: DrConfig, workdir: Path, separator: str = ".eos.") -> None:
        super().__init__(cfg, workdir, Mm2Settings(exactly_once=True, separator=separator))
        self._offsets: Consumer | None = None
        self._copied: dict[tuple[str, int], int] = {}

    def start(self, topics: str | list[str], partitions: int, continuous: bool) -> None:
        self.set_transaction_boundary(continuous)
        super().start(topics, partitions, continuous)
        self._close_offsets()

    def set_transaction_boundary(self, continuous: bool) -> None:
        if self.interval_boundary:
            self.settings.transaction_interval_ms = round(
                1000 * (JobOptions.commit_seconds if continuous else CopyTuning.chunk_seconds)
            )

    def done(self, topic: str, partitions: int, source_ends: list[int], target_total: int) -> bool:
        """Copy complete = MirrorMaker's committed source offsets reached every partition's end
        (read ``read_committed`` from its offsets topic: they commit with the records, and
        end offsets cannot tell, as commit markers take offsets too)."""
        if self._offsets is None:
            self._offsets = Consumer(
                client_config(
                    self.target,
                    **{
                        "group.id": f"kafka-dr-bench-{self.name}-done",
                        "enable.auto.commit": False,
                        "isolation.level": "read_committed",
                    },
                )
            )
        if not self._offsets.assignment():
            meta = self._offsets.list_topics(self.mm.offsets_topic, timeout=5).topics.get(self.mm.offsets_topic)
            if meta is None or meta.error is not None or not meta.partitions:
                return False  # MirrorMaker has not created it yet
            self._offsets.assign([TopicPartition(self.mm.offsets_topic, p, OFFSET_BEGINNING) for p in meta.partitions])
        for m in self._offsets.consume(num_messages=10_000, timeout=0.05):
            if m.error() is None and m.key() and m.value():
                _, where = json.loads(m.key())
                key = (where.get("topic"), int(where.get("partition", -1)))
                self._copied[key] = max(self._copied.get(key, -1), int(json.loads(m.value())["offset"]))
        return all(self._copied.get((topic, p), -1) + 1 >= end for p, end in enumerate(source_ends))

    def _close_offsets(self) -> None:
        if self._offsets is not None:
            self._offsets.close()
            self._offsets = None
        self._copied.clear()

    def stop(self, grace: float = 60.0) -> None:
        super().stop(grace)
        self._close_offsets()


class Mm2ExactlyOnceInterval(Mm2ExactlyOnce):
    """MirrorMaker 2 exactly-once with ``transaction.boundary = interval``, transactions as
    long as ours may last. Remote topics ``east.eosi.<topic>``."""

    name = "mm2eosint"
    guarantee = "exactly-once (MirrorMaker 2 EOS source, txn per interval)"
    interval_boundary = True

    def __init__(self, cfg: DrConfig, workdir: Path) -> None:
        super().__init__(cfg, workdir, separator=".eosi.")

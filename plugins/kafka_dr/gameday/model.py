"""The game day's names and plain values (pure): what the traffic, the readers and the proof share.

Every record the game day produces is identified by its ``gd.id`` header,
``<app>:<topic>:<seq>``: the app is named after its home cluster and keeps its id namespace
when it moves to another cluster, ``seq`` counts up per app and topic. A replicated copy
keeps the header, so one id names the record on every cluster.

:class:`Ledger` collects every produced record's fate from the producer threads; the proof
works on its :class:`LedgerView`. Times are epoch seconds (``time.time()``) everywhere: the
orchestration's fault times and these values are compared directly.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import NamedTuple

from kafka_dr.core.provenance import origin_cluster

#: errors a ledger keeps word for word; later ones are only counted
MAX_ERRORS = 1000

GD_ID = "gd.id"
GD_SEQ = "gd.seq"

#: fates of a produced record
ACKED = "acked"  #: acknowledged by the cluster (for a transaction: committed)
ABORTED = "aborted"  #: part of an aborted transaction: never visible to read_committed readers
UNCERTAIN = "uncertain"  #: delivery failed or its transaction's outcome is unknown: at most once


@dataclass(frozen=True)
class GamedayNames:
    """Every topic, consumer group and ``transactional.id`` a game day uses. All start with
    ``prefix``, so a game day never touches a user's topics or groups.

    Partition counts and topic configs live here too: both clusters must create the topics
    alike (identity replication keeps partition numbers).
    """

    prefix: str = "gd"
    apps: tuple[str, ...] = ("east", "west")
    key_space: int = 16  #: keys per app on the keyed, second and transactional topics
    compacted_keys: int = 8  #: keys per app on the compacted topic
    #: the compacted topic rolls a segment a minute, so the cleaner acts within a game day
    compacted_config: tuple[tuple[str, str], ...] = (
        ("cleanup.policy", "compact"),
        ("segment.ms", "60000"),
        ("min.cleanable.dirty.ratio", "0.1"),
    )

    @property
    def keyed_topic(self) -> str:
        return f"{self.prefix}.keyed"

    @property
    def second_topic(self) -> str:
        return f"{self.prefix}.second"

    @property
    def compacted_topic(self) -> str:
        return f"{self.prefix}.compacted"

    @property
    def transactional_topic(self) -> str:
        return f"{self.prefix}.txn"

    @property
    def topics(self) -> tuple[str, ...]:
        return (self.keyed_topic, self.second_topic, self.compacted_topic, self.transactional_topic)

    @property
    def plain_topics(self) -> tuple[str, ...]:
        """The topics the idempotent (non-transactional) producers write."""
        return (self.keyed_topic, self.second_topic, self.compacted_topic)

    def partitions(self, topic: str) -> int:
        return 4 if topic == self.keyed_topic else 2

    def topic_config(self, topic: str) -> dict[str, str]:
        return dict(self.compacted_config) if topic == self.compacted_topic else {}

    def group(self, app: str) -> str:
        """The consumer group of an app's readers, e.g. ``gd-app-east``."""
        return f"{self.prefix}-app-{app}"

    @property
    def groups_regex(self) -> str:
        """Matches every game-day group (the config's consumer-group selection)."""
        return f"{self.prefix}-app-.*"

    @property
    def scan_group(self) -> str:
        """The ``group.id`` of the proof's whole-cluster reads (assign only, never commits)."""
        return f"{self.prefix}-scan"

    def transactional_id(self, app: str) -> str:
        return f"{self.prefix}.txn.{app}"

    def key(self, app: str, topic: str, seq: int) -> str:
        """The key of an app's record ``seq`` on ``topic``: a small key space per app, so every
        key sees many records (per-key order is checkable)."""
        if topic == self.compacted_topic:
            return f"{app}-c{seq % self.compacted_keys}"
        return f"{app}-k{seq % self.key_space}"


#: the default names: the orchestration, the traffic and the readers agree on them
NAMES = GamedayNames()


def gd_id(app: str, topic: str, seq: int) -> str:
    return f"{app}:{topic}:{seq}"


def parse_id(value: str) -> tuple[str, str, int]:
    """``(app, topic, seq)`` of a ``gd.id``; raises ``ValueError`` naming the value."""
    parts = value.split(":")
    if len(parts) != 3 or not parts[2].isdigit():
        raise ValueError(f"not a game-day id: {value!r} (expected <app>:<topic>:<seq>)")
    return parts[0], parts[1], int(parts[2])


class Produced(NamedTuple):
    """One produced record and its fate. ``partition``/``offset``/``acked_at`` are known for
    acknowledged records (and for aborted ones the cluster acknowledged before the abort)."""

    gd_id: str
    app: str
    topic: str
    key: str
    seq: int
    cluster: str  #: the cluster it was written to
    fate: str  #: ACKED, ABORTED or UNCERTAIN
    produced_at: float
    acked_at: float | None = None
    partition: int | None = None
    offset: int | None = None
    error: str = ""


class Stored(NamedTuple):
    """One record as a cluster holds it (read read_committed)."""

    gd_id: str
    cluster: str
    topic: str
    partition: int
    offset: int
    key: str
    origin: str  #: the provenance's origin for a replicated copy, else the cluster itself


class Read(NamedTuple):
    """One record as a consumer group read it."""

    gd_id: str
    group: str
    cluster: str
    topic: str
    partition: int
    offset: int
    at: float
    origin: str  #: the provenance's origin for a replicated copy, else the cluster read from


class Move(NamedTuple):
    """A consumer group closed on one cluster and reopened on another."""

    group: str
    source: str
    target: str
    requested_at: float
    at: float  #: when the old consumer was closed: reads from here on belong to this move
    first_read_at: float | None = None  #: the first read on ``target`` after it


@dataclass(frozen=True)
class LedgerView:
    """Every produced record's fate at one moment, by ``gd.id``."""

    acked: dict[str, Produced]
    aborted: dict[str, Produced]
    uncertain: dict[str, Produced]
    errors: tuple[str, ...] = ()

    def known(self, gd: str) -> bool:
        return gd in self.acked or gd in self.aborted or gd in self.uncertain

    def counts(self) -> dict[str, int]:
        return {ACKED: len(self.acked), ABORTED: len(self.aborted), UNCERTAIN: len(self.uncertain)}


def identify(headers, here: str) -> tuple[str, str]:
    """``(gd.id, origin)`` of a record as read on cluster ``here``: origin is the provenance's
    origin for a replicated copy, else ``here``. A record without ``gd.id`` gets ``""``."""
    gd = next(((v or b"").decode(errors="replace") for k, v in headers or () if k == GD_ID), None)
    return gd or "", origin_cluster(headers) or here


class Ledger:
    """Every produced record's fate, by ``gd.id``; safe to use from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_fate: dict[str, dict[str, Produced]] = {ACKED: {}, ABORTED: {}, UNCERTAIN: {}}
        self._errors: list[str] = []
        self.error_count = 0

    def record(self, p: Produced) -> None:
        with self._lock:
            self._by_fate[p.fate][p.gd_id] = p

    def error(self, where: str, message: str) -> None:
        with self._lock:
            self.error_count += 1
            if len(self._errors) < MAX_ERRORS:
                self._errors.append(f"{time.time():.3f} {where}: {message}")

    def view(self) -> LedgerView:
        with self._lock:
            return LedgerView(
                dict(self._by_fate[ACKED]),
                dict(self._by_fate[ABORTED]),
                dict(self._by_fate[UNCERTAIN]),
                tuple(self._errors),
            )

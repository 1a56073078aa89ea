"""The game day's producer threads: one idempotent and one transactional producer per app.

Each thread follows its app's :class:`Route` (the cluster it writes to now; a redirect bumps
the route's version and the thread retires its producer and opens one on the new cluster)
and records every record's fate in the :class:`~kafka_dr.gameday.model.Ledger`. A cluster
that is down delays a thread, never stops it: errors are recorded and it backs off.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from confluent_kafka import KafkaException

from kafka_dr.gameday.model import ABORTED, ACKED, GD_ID, GD_SEQ, UNCERTAIN, GamedayNames, Ledger, Produced, gd_id
from kafka_dr.kafka import clients


@dataclass(frozen=True)
class TrafficSettings:
    rate: float = 200.0  #: records per second per app, over all its topics
    keyed_share: float = 0.5
    second_share: float = 0.2
    compacted_share: float = 0.1
    transactional_share: float = 0.2
    transaction_size: int = 8
    abort_every: int = 5  #: every n-th transaction of an app is aborted
    value_bytes: int = 100
    tick_s: float = 0.05
    delivery_timeout_s: float = 120.0
    commit_timeout_s: float = 10.0  #: one try of a commit, an abort or init_transactions
    retire_flush_s: float = 3.0  #: a producer left behind delivers this long, then the rest is purged
    backoff_s: float = 1.0


def describe(e: Exception) -> str:
    if isinstance(e, KafkaException) and e.args and hasattr(e.args[0], "str"):
        return e.args[0].str()
    return f"{type(e).__name__}: {e}"


class Route:
    """Where an app writes now (``None``: nowhere, its producers are stopped); a version per
    redirect, so its threads notice a change."""

    def __init__(self, cluster) -> None:
        self._cond = threading.Condition()
        self.cluster, self.version = cluster, 0
        self._taken: dict[str, int] = {}

    def set(self, cluster) -> int:
        with self._cond:
            self.cluster, self.version = cluster, self.version + 1
            return self.version

    def get(self) -> tuple:
        with self._cond:
            return self.cluster, self.version

    def taken(self, thread: str, version: int) -> None:
        with self._cond:
            self._taken[thread] = version
            self._cond.notify_all()

    def wait_taken(self, threads: list[str], version: int, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: all(self._taken.get(t, -1) >= version for t in threads), timeout)


class AppThread(threading.Thread):
    """One producer of one app: follows the app's route, survives its cluster being down.
    Subclasses give ``open()`` (a producer, or None to back off), ``step()`` and ``retire()``."""

    kind = ""

    def __init__(self, app: str, route: Route, names: GamedayNames, settings: TrafficSettings, ledger: Ledger):
        super().__init__(name=f"gameday-{app}-{self.kind}", daemon=True)
        self.app, self.route, self.names, self.settings, self.ledger = app, route, names, settings, ledger
        self.stopping = threading.Event()
        self.producer = None
        self.cluster = None
        self.version = -1
        self.seqs: dict[str, int] = {}
        self.pad = b"." * max(0, settings.value_bytes - 40)

    def run(self) -> None:
        while not self.stopping.is_set():
            cluster, version = self.route.get()
            if version != self.version:
                self.retire()
                self.cluster, self.version = cluster, version
                self.route.taken(self.name, version)
            if self.cluster is None:  # stopped by the operator: writes nowhere until moved
                self.stopping.wait(self.settings.tick_s)
                continue
            try:
                if self.producer is None:
                    self.producer = self.open()
                if self.producer is None:
                    self.stopping.wait(self.settings.backoff_s)
                    continue
                self.step()
            except Exception as e:  # the thread lives on whatever its cluster does; the producer is replaced
                self.ledger.error(self.where, describe(e))
                self.retire()
                self.stopping.wait(self.settings.backoff_s)
        self.retire()

    @property
    def where(self) -> str:
        return f"{self.name} on {getattr(self.cluster, 'name', '?')}"

    def moved(self) -> bool:
        return self.route.get()[1] != self.version

    def next_record(self, topic: str) -> tuple[str, str, int, bytes, list]:
        seq = self.seqs.get(topic, 0)
        self.seqs[topic] = seq + 1
        gd = gd_id(self.app, topic, seq)
        headers = [(GD_ID, gd.encode()), (GD_SEQ, b"%d" % seq)]
        return gd, self.names.key(self.app, topic, seq), seq, gd.encode() + b"|" + self.pad, headers

    def fate(self, here: str, gd: str, topic: str, key: str, seq: int, fate: str, at: float, **kw) -> None:
        """Record what became of one record written to the cluster ``here`` at ``at``."""
        self.ledger.record(Produced(gd, self.app, topic, key, seq, here, fate, at, **kw))


class PlainProducer(AppThread):
    """The idempotent producer of the keyed, second and compacted topics, paced per topic."""

    kind = "plain"

    def __init__(self, *args) -> None:
        super().__init__(*args)
        s, n = self.settings, self.names
        self.rates = {
            n.keyed_topic: s.rate * s.keyed_share,
            n.second_topic: s.rate * s.second_share,
            n.compacted_topic: s.rate * s.compacted_share,
        }
        self.due = dict.fromkeys(self.rates, 0.0)
        self.last = time.monotonic()
        self.fatal = False

    def open(self):
        def on_error(err) -> None:
            self.ledger.error(self.where, err.str())
            self.fatal = self.fatal or err.fatal()

        self.fatal = False
        timeout_ms = int(self.settings.delivery_timeout_s * 1000)
        return clients.producer(
            self.cluster, **{"acks": "all", "delivery.timeout.ms": timeout_ms, "error_cb": on_error}
        )

    def step(self) -> None:
        now = time.monotonic()
        elapsed, self.last = now - self.last, now
        for topic, rate in self.rates.items():
            self.due[topic] = min(rate, self.due[topic] + rate * elapsed)  # at most a second's worth at once
            while self.due[topic] >= 1 and self.produce_one(topic):
                self.due[topic] -= 1
        self.producer.poll(0)
        if self.fatal:
            self.ledger.error(self.where, "fatal producer error: replacing the producer")
            self.retire()
        self.stopping.wait(self.settings.tick_s)

    def produce_one(self, topic: str) -> bool:
        gd, key, seq, value, headers = self.next_record(topic)
        here, at = self.cluster.name, time.time()

        def on_delivery(err, msg) -> None:
            if err is None:
                where = {"partition": msg.partition(), "offset": msg.offset()}
                self.fate(here, gd, topic, key, seq, ACKED, at, acked_at=time.time(), **where)
            else:
                self.fate(here, gd, topic, key, seq, UNCERTAIN, at, error=err.str())

        try:
            self.producer.produce(topic, key=key.encode(), value=value, headers=headers, on_delivery=on_delivery)
            return True
        except BufferError:  # the cluster is not taking records: the queue is full
            self.seqs[topic] = seq  # not produced: the id is used by the next record
            self.producer.poll(self.settings.backoff_s)
            return False

    def retire(self) -> None:
        """Give queued records a short while, then purge them: their delivery reports (errors)
        make them uncertain."""
        p, self.producer = self.producer, None
        if p is None:
            return
        p.flush(self.settings.retire_flush_s)
        p.purge()
        p.flush(self.settings.retire_flush_s)


class TransactionalProducer(AppThread):
    """Transactions of ``transaction_size`` records on the app's transactional topic; every
    ``abort_every``-th is aborted."""

    kind = "txn"

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.transactions = 0
        self.pause = self.settings.transaction_size / max(0.1, self.settings.rate * self.settings.transactional_share)
        self.next_start = time.monotonic()

    def open(self):
        conf = {
            "transactional.id": self.names.transactional_id(self.app),
            "acks": "all",
            "delivery.timeout.ms": int(self.settings.commit_timeout_s * 1000),
            # a transaction left open (its producer given up) holds read_committed readers back this long
            "transaction.timeout.ms": 30_000,
        }
        try:
            p = clients.producer(self.cluster, **conf)
            p.init_transactions(self.settings.commit_timeout_s)
            return p
        except KafkaException as e:
            self.ledger.error(self.where, f"init_transactions: {e.args[0].str()}")
            return None

    def step(self) -> None:
        self.stopping.wait(max(0.0, self.next_start - time.monotonic()))
        self.next_start = max(self.next_start + self.pause, time.monotonic() - 1.0)
        topic, p = self.names.transactional_topic, self.producer
        sent: dict[str, tuple] = {}  # gd.id -> (key, seq, produced_at)
        where: dict[str, tuple[int, int]] = {}  # gd.id -> (partition, offset) once acknowledged

        def delivered(gd: str):  # a delivery report carries no headers: the id travels in the closure
            def on_delivery(err, msg) -> None:
                if err is None:
                    where[gd] = (msg.partition(), msg.offset())

            return on_delivery

        here = self.cluster.name
        p.begin_transaction()
        self.transactions += 1
        try:
            for _ in range(self.settings.transaction_size):
                gd, key, seq, value, headers = self.next_record(topic)
                at = time.time()
                p.produce(topic, key=key.encode(), value=value, headers=headers, on_delivery=delivered(gd))
                sent[gd] = (key, seq, at)
            delivered_all = self.drained(p)
        except (KafkaException, BufferError) as e:  # never committed: the records are aborted
            self.ledger.error(self.where, f"in a transaction: {describe(e)}")
            delivered_all = False
        if not delivered_all and self.moved():
            # its cluster does not answer and the app has moved on: never committed, the
            # transaction is aborted by the coordinator (its timeout, or this id's next producer)
            outcome, self.producer = ABORTED, None
        elif not delivered_all or self.transactions % self.settings.abort_every == 0:
            outcome = self.abort()
        else:
            outcome = self.commit()
        now = time.time()
        for gd, (key, seq, at) in sent.items():
            part, off = where.get(gd, (None, None))
            acked_at = now if outcome == ACKED else None
            self.fate(here, gd, topic, key, seq, outcome, at, acked_at=acked_at, partition=part, offset=off)

    def drained(self, p) -> bool:
        """Did every record of the transaction reach the cluster? Waited for in short slices,
        so a redirect or a stop is not held up by a cluster that is down."""
        deadline = time.monotonic() + self.settings.commit_timeout_s
        left = p.flush(0.5)
        while left and time.monotonic() < deadline and not self.moved() and not self.stopping.is_set():
            left = p.flush(0.5)
        if left:
            self.ledger.error(self.where, f"{left} record(s) of a transaction not acknowledged: aborting it")
        return not left

    def commit(self) -> str:
        """ACKED, ABORTED (the commit failed in a way that requires an abort: it never happened)
        or UNCERTAIN (given up while its outcome was unknown: the producer is replaced)."""
        while True:
            try:
                self.producer.commit_transaction(self.settings.commit_timeout_s)
                return ACKED
            except KafkaException as e:
                err = e.args[0]
                self.ledger.error(self.where, f"commit: {err.str()}")
                if err.txn_requires_abort():
                    return self.abort()
                if not err.retriable() or self.moved() or self.stopping.is_set():
                    self.producer = None
                    return UNCERTAIN
                self.stopping.wait(self.settings.backoff_s)

    def abort(self) -> str:
        """ABORTED whatever happens: a transaction never committed is never visible (the
        coordinator aborts it on its timeout when this abort cannot reach it)."""
        for _ in range(3):
            try:
                self.producer.abort_transaction(self.settings.commit_timeout_s)
                return ABORTED
            except KafkaException as e:
                self.ledger.error(self.where, f"abort: {e.args[0].str()}")
                if not e.args[0].retriable() or self.moved() or self.stopping.is_set():
                    break
                self.stopping.wait(self.settings.backoff_s)
        self.producer = None
        return ABORTED

    def retire(self) -> None:
        self.producer = None  # a step never leaves a transaction open

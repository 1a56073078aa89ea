"""What the benchmark does to the brokers: backlogs, a steady producer, arrival timelines,
exact counts and a latency probe. Plain confluent-kafka; nothing here knows which system runs.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, IsolationLevel, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from kafka_dr.core.config import ClusterConfig
from kafka_dr.kafka.clients import client_config


#: the few headers every benchmark record carries (an application's usual tracing headers)
def _headers(i: int) -> list[tuple[str, bytes]]:
    return [("app", b"bench"), ("trace-id", b"%016x" % i), ("content-type", b"application/octet-stream")]


_RANDOM = random.Random()


def value_of(i: int, size: int) -> bytes:
    """``size`` bytes: a sequence number, then fresh random bytes. Every record's own: slices of
    one repeating pool let lz4 find matches inside a batch, and would flatter whoever compresses."""
    head = b"%012d" % i
    return head + _RANDOM.randbytes(max(0, size - len(head)))


def producer(cluster: ClusterConfig, **overrides) -> Producer:
    conf = {
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 20,
        "batch.size": 1_000_000,
        "compression.type": "lz4",
        "queue.buffering.max.messages": 500_000,
        "queue.buffering.max.kbytes": 512 * 1024,
        **overrides,
    }
    return Producer(client_config(cluster, **conf))


@dataclass(frozen=True)
class Produced:
    """A backlog as it was produced: seconds, and the bytes the producer sent on the wire
    (produce requests, lz4-compressed batches included; librdkafka's ``txbytes``)."""

    seconds: float
    wire_bytes: int | None


#: librdkafka statistics every this many ms while a backlog is produced (for its wire bytes)
STATS_INTERVAL_MS = 500


def produce_backlog(cluster: ClusterConfig, topic: str, records: int, size: int, partitions: int) -> Produced:
    """``records`` records of ``size``-byte values spread round-robin over ``partitions``.
    Raises if any record is not acknowledged."""
    stats: list[dict] = []
    p = producer(
        cluster, **{"statistics.interval.ms": STATS_INTERVAL_MS, "stats_cb": lambda s: stats.append(json.loads(s))}
    )
    errors: list[str] = []

    def on_delivery(err, msg):
        if err is not None and len(errors) < 3:
            errors.append(f"{topic}[{msg.partition()}]: {err.str()}")

    t0 = time.monotonic()
    for i in range(records):
        while True:
            try:
                p.produce(
                    topic,
                    key=b"k%08d" % (i % 100_000),
                    value=value_of(i, size),
                    headers=_headers(i),
                    partition=i % partitions,
                    on_delivery=on_delivery,
                )
                break
            except BufferError:
                p.poll(0.05)
        if i % 10_000 == 0:
            p.poll(0)
    left = p.flush(120)
    if left or errors:
        raise RuntimeError(f"producing the backlog into {topic}: {left} unacknowledged; errors: {errors}")
    seconds = time.monotonic() - t0
    return Produced(seconds, _wire_bytes_after_flush(p, stats))


def _wire_bytes_after_flush(p: Producer, stats: list[dict]) -> int | None:
    """The bytes ``p`` sent to its brokers, from the first statistics emitted after its flush."""
    seen = len(stats)
    deadline = time.monotonic() + 3 * STATS_INTERVAL_MS / 1000
    while len(stats) == seen and time.monotonic() < deadline:
        p.poll(0.05)
    if len(stats) == seen:
        return None
    return sum(b.get("txbytes", 0) for b in stats[-1].get("brokers", {}).values())


def transactional_traffic(cluster: ClusterConfig, topic: str, partitions: int, seconds: float, group: str) -> int:
    """For ``seconds``: one thread per partition, each a transactional producer committing small
    transactions (10 records and an offset commit for ``group``), as an exactly-once copier
    does. Returns how many transactions were committed. Raises if one fails."""
    counts, errors = [0] * partitions, []
    end = time.monotonic() + seconds

    def run(p: int) -> None:
        try:
            prod = producer(cluster, **{"transactional.id": f"{topic}.{p}", "linger.ms": 5})
            group_consumer = Consumer(client_config(cluster, **{"group.id": group}))
            meta = group_consumer.consumer_group_metadata()
            group_consumer.close()
            prod.init_transactions(30)
            n = 0
            while time.monotonic() < end:
                prod.begin_transaction()
                for _ in range(10):
                    prod.produce(topic, value=value_of(n, 100), partition=p, headers=_headers(n))
                    n += 1
                prod.send_offsets_to_transaction([TopicPartition(topic, p, n)], meta, 30)
                prod.commit_transaction(30)
                counts[p] += 1
        except Exception as e:  # noqa: BLE001 - reported by the caller
            errors.append(f"partition {p}: {e}")

    threads = [threading.Thread(target=run, args=(p,), daemon=True) for p in range(partitions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 120)
    if errors:
        raise RuntimeError(f"transactions on {topic} failed: {errors[0]}")
    return sum(counts)


def end_offsets(admin: AdminClient, topic: str, partitions: int, committed: bool = False) -> list[int]:
    level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    fs = admin.list_offsets(
        {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)},
        isolation_level=level,
        request_timeout=10,
    )
    return [fs[TopicPartition(topic, p)].result().offset for p in range(partitions)]


@dataclass
class Timeline:
    """When records first arrived on the target and when the system was done."""

    started: float
    first: float | None = None
    done: float | None = None
    samples: list = field(default_factory=list)


def ping_until(cluster: ClusterConfig, topic: str, partitions: int, arrived, alive, timeout: float) -> int:
    """One record (key and value ``ping``) every half second on ``topic`` until ``arrived()``:
    a system just started runs and copies. Returns how many were sent."""
    pinger = producer(cluster, **{"linger.ms": 0})
    pings, deadline = 0, time.monotonic() + timeout
    while not arrived():
        if not alive() or time.monotonic() > deadline:
            raise RuntimeError(f"no record came through within {timeout:.0f}s")
        pinger.produce(topic, key=b"ping", value=b"ping", partition=pings % partitions)
        pinger.flush(10)
        pings += 1
        time.sleep(0.5)
    return pings


def watch_arrivals(
    cluster: ClusterConfig,
    topic: str,
    partitions: int,
    done,
    started: float,
    timeout: float,
    interval: float = 0.1,
    alive=lambda: True,
) -> Timeline:
    """Poll the target's end offsets until ``done(total end offsets)`` says the copy is complete.

    ``done`` is the system's own completion test (offsets alone cannot tell for a transactional
    copy: commit markers take offsets too). ``alive`` lets a dead system fail the wait early.
    """
    admin = AdminClient(client_config(cluster))
    tl = Timeline(started)
    deadline = started + timeout
    empty = started  # the last poll that saw nothing on the target
    while True:
        now = time.monotonic()
        try:
            total = sum(max(0, x) for x in end_offsets(admin, topic, partitions))
        except Exception:  # noqa: BLE001 - the topic may not exist yet (MirrorMaker creates its own)
            total = 0
            # a client that asked before the topic existed can keep answering "unknown topic"
            admin = AdminClient(client_config(cluster))
        tl.samples.append((now - started, total))
        if total > 0 and tl.first is None:
            tl.first = now
        if done(total):
            tl.done = time.monotonic()
            if tl.first is None or tl.first == now:
                # the whole copy became visible between two polls (one transaction): its window is
                # at most the time since the last empty poll, so its rate is a lower bound
                tl.first = empty
            return tl
        if total == 0:
            empty = now
        if now > deadline:
            raise TimeoutError(f"{cluster.name}/{topic}: not complete after {timeout:.0f}s ({total} offsets so far)")
        if not alive():
            raise RuntimeError(
                f"{cluster.name}/{topic}: the system stopped before the copy was complete ({total} offsets so far)"
            )
        time.sleep(interval)


def count_records(cluster: ClusterConfig, topic: str, partitions: int, timeout: float = 300.0) -> int:
    """Records a ``read_committed`` consumer sees in ``topic`` (what an application would read)."""
    c = Consumer(
        client_config(
            cluster,
            **{
                "group.id": "kafka-dr-bench-count",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
                "fetch.max.bytes": 64 * 1024 * 1024,
            },
        )
    )
    try:
        c.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
        eof: set[int] = set()
        n = 0
        deadline = time.monotonic() + timeout
        while len(eof) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{cluster.name}/{topic}: counting did not reach the end within {timeout:.0f}s")
            for m in c.consume(num_messages=10_000, timeout=0.5):
                err = m.error()
                if err is None:
                    n += 1
                elif err.code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                else:
                    raise RuntimeError(f"{cluster.name}/{topic}[{m.partition()}]: {err.str()}")
        return n
    finally:
        c.close()


class SteadyProducer(threading.Thread):
    """Produces ``rate`` records/s of ``size`` bytes until stopped; each record's timestamp is
    its produce time, which every system under test keeps, so arrival - timestamp is the
    end-to-end latency."""

    def __init__(self, cluster: ClusterConfig, topic: str, partitions: int, rate: float, size: int = 100) -> None:
        super().__init__(name=f"steady-{topic}", daemon=True)
        self.p = producer(cluster, **{"linger.ms": 1})
        self.topic, self.partitions, self.rate, self.size = topic, partitions, rate, size
        self.sent = 0
        self._halt = threading.Event()

    def run(self) -> None:
        t0 = time.monotonic()
        while not self._halt.is_set():
            due = int((time.monotonic() - t0) * self.rate)
            while self.sent < due:
                i = self.sent
                self.p.produce(
                    self.topic,
                    key=b"k%08d" % i,
                    value=value_of(i, self.size),
                    headers=_headers(i),
                    partition=i % self.partitions,
                    timestamp=int(time.time() * 1000),
                )
                self.sent += 1
            self.p.poll(0)
            time.sleep(0.002)
        self.p.flush(30)

    def stop(self) -> None:
        self._halt.set()
        self.join(60)


class ArrivalProbe(threading.Thread):
    """Reads the target topic (``read_committed``, as an application would) and records each
    record's latency: arrival time minus its timestamp, for records stamped from ``since_ms``
    to ``until_ms``."""

    def __init__(self, cluster: ClusterConfig, topic: str, partitions: int) -> None:
        super().__init__(name=f"probe-{topic}", daemon=True)
        self.cluster, self.topic, self.partitions = cluster, topic, partitions
        self.since_ms, self.until_ms = 1 << 62, 1 << 62
        self.latencies: list[int] = []
        self.seen = 0
        self._halt = threading.Event()

    def run(self) -> None:
        c = Consumer(
            client_config(
                self.cluster,
                **{
                    "group.id": "kafka-dr-bench-probe",
                    "enable.auto.commit": False,
                    "isolation.level": "read_committed",
                    "fetch.wait.max.ms": 10,
                },
            )
        )
        try:
            c.assign([TopicPartition(self.topic, p, -2) for p in range(self.partitions)])
            while not self._halt.is_set():
                # consume() returns at num_messages or the timeout: at a steady load below 1,000
                # records per timeout it waits out the timeout, which adds up to the timeout to
                # every sample (it was 50 ms, for every system alike); 5 ms keeps that small
                for m in c.consume(num_messages=1000, timeout=0.005):
                    if m.error() is not None:
                        continue
                    now = int(time.time() * 1000)
                    self.seen += 1
                    ts = m.timestamp()[1]
                    if self.since_ms <= ts <= self.until_ms:
                        self.latencies.append(now - ts)
        finally:
            c.close()

    def stop(self) -> None:
        self._halt.set()
        self.join(30)


def topic_exists(cluster: ClusterConfig, topic: str, admin: AdminClient | None = None) -> bool:
    # all topics: a metadata request naming the topic could have it auto-created
    t = (admin or AdminClient(client_config(cluster))).list_topics(timeout=10).topics.get(topic)
    return t is not None and t.error is None and bool(t.partitions)


def wait_for_topic(cluster: ClusterConfig, topic: str, timeout: float) -> None:
    admin = AdminClient(client_config(cluster))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if topic_exists(cluster, topic, admin):
            return
        time.sleep(0.2)
    raise TimeoutError(f"{cluster.name}/{topic} did not appear within {timeout:.0f}s")

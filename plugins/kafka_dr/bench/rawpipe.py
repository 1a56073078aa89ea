r"""The raw-pipe limit: the simplest consume-and-produce loop with librdkafka, no transformation.

A pipe is one Python process with one consumer and one producer, no transactions, no headers
added, no loop policy: records go from ``topic[p]`` to ``target_topic[p]`` with key, value,
headers and timestamp as they are. The producer batches like ours (1 MB batches, lz4,
acks=all, idempotent; linger 100 ms for a backlog, ``--until-end``, 10 ms otherwise) so the
comparison is about the work, not the settings.
One pipe is bound by its one Python thread; ``--processes N`` runs N pipes side by side,
each with every N-th partition, so that with one per core the machine is the limit.

    python -m kafka_dr.bench.rawpipe --source HOST:PORT --target HOST:PORT \
        --topic T [--topic U ...] --partitions 8 [--until-end] [--processes N]

Each topic ``T`` goes to ``raw.T`` (``--target-prefix``).

``--until-end`` stops after the end offsets seen at start; otherwise it runs until SIGTERM.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

PRODUCER = {
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 10,
    "batch.size": 1_000_000,
    "compression.type": "lz4",
    "queue.buffering.max.messages": 500_000,
    "queue.buffering.max.kbytes": 512 * 1024,
}
#: ``linger.ms`` of a backlog's copy, as ours' (``kafka_dr.kafka.copy_tuning.BACKLOG_LINGER_MS``;
#: not imported, so that the pipe loads nothing of ours at its start)
BACKLOG_LINGER_MS = 100
#: the copiers' fetch settings, ``fetch.queue.backoff.ms`` included (20 ms instead of librdkafka's
#: 1,000: kafka_dr.kafka.copy_tuning.FETCH_QUEUE_BACKOFF_MS); with the default, the raw pipe copied
#: 197,000-203,000 records/s of 100 B here, with 20 ms 255,000-266,000 (two runs each)
CONSUMER = {
    "group.id": "kafka-dr-bench-rawpipe",
    "enable.auto.commit": False,
    "isolation.level": "read_committed",
    "enable.partition.eof": True,
    "fetch.max.bytes": 64 * 1024 * 1024,
    "max.partition.fetch.bytes": 8 * 1024 * 1024,
    "queued.max.messages.kbytes": 256 * 1024,
    "fetch.queue.backoff.ms": 20,
}


def pipe(
    source: str, target: str, topics: list[str], target_prefix: str, partitions: int, until_end: bool, share=(0, 1)
) -> int:
    """One pipe over the partitions of ``share`` (i, n): every n-th one from the i-th."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    c = Consumer({"bootstrap.servers": source, **CONSUMER})
    p = Producer(producer_config(target, until_end))
    tps = [(t, q) for t in topics for q in range(partitions)][share[0] :: share[1]]
    ends = {}
    if until_end:
        ends = {(t, q): c.get_watermark_offsets(TopicPartition(t, q), timeout=30, cached=False)[1] for t, q in tps}
    c.assign([TopicPartition(t, q, -2) for t, q in tps])
    done: set[tuple[str, int]] = {tp for tp, e in ends.items() if e == 0}
    targets = {t: target_prefix + t for t in topics}
    n = 0
    produce = p.produce
    while not stop and not (until_end and len(done) == len(tps)):
        for m in _queued(c):
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    if until_end and m.offset() >= ends[(m.topic(), m.partition())]:
                        done.add((m.topic(), m.partition()))
                    continue
                raise RuntimeError(f"{m.topic()}[{m.partition()}]: {err.str()}")
            while True:
                try:
                    produce(
                        targets[m.topic()],
                        m.value(),
                        m.key(),
                        m.partition(),
                        timestamp=m.timestamp()[1],
                        headers=m.headers(),
                    )
                    break
                except BufferError:
                    p.poll(0.05)
            n += 1
        p.poll(0)
    left = p.flush(120)
    c.close()
    if left:
        print(f"rawpipe: {left} record(s) not acknowledged by {target}", file=sys.stderr)
        return 1
    print(f"rawpipe: {n} records {', '.join(topics)} -> {target_prefix}*", flush=True)
    return 0


def producer_config(target: str, until_end: bool) -> dict:
    """The pipe's producer: ours' batching, a backlog's linger when it copies one (``until_end``)."""
    return {"bootstrap.servers": target, **PRODUCER, **({"linger.ms": BACKLOG_LINGER_MS} if until_end else {})}


def _queued(c: Consumer) -> list:
    """Every record queued now (10,000 at most) or, when none is, the first to arrive: a
    ``consume`` with a timeout would hold a short batch until the timeout, a latency floor."""
    return c.consume(num_messages=10_000, timeout=0) or c.consume(num_messages=1, timeout=0.1)


def pipes(argv: list[str], processes: int) -> int:
    """``processes`` pipes as child processes, each with its share of the partitions; SIGTERM
    is passed on to them. The exit status is the worst of theirs."""
    children = [
        subprocess.Popen([sys.executable, "-m", "kafka_dr.bench.rawpipe", *argv, "--share", f"{i}/{processes}"])
        for i in range(processes)
    ]
    signal.signal(signal.SIGTERM, lambda *_: [c.terminate() for c in children])
    return max(c.wait() for c in children)


def _share(text: str) -> tuple[int, int]:
    i, n = (int(x) for x in text.split("/"))
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"{text!r}: expected I/N with 0 <= I < N")
    return i, n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rawpipe", description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--topic", required=True, action="append", help="a source topic (repeatable)")
    ap.add_argument("--target-prefix", default="raw.")
    ap.add_argument("--partitions", type=int, required=True)
    ap.add_argument("--until-end", action="store_true")
    ap.add_argument("--processes", type=int, default=1, help="pipes side by side, sharing the partitions")
    ap.add_argument("--share", type=_share, default=(0, 1), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.processes > 1:
        child = ["--source", a.source, "--target", a.target, "--target-prefix", a.target_prefix]
        child += [*(x for t in a.topic for x in ("--topic", t)), "--partitions", str(a.partitions)]
        return pipes(child + (["--until-end"] if a.until_end else []), a.processes)
    return pipe(a.source, a.target, a.topic, a.target_prefix, a.partitions, a.until_end, a.share)


if __name__ == "__main__":
    sys.exit(main())

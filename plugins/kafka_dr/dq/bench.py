"""Measure a data-quality run at scale on the lab: ``python -m kafka_dr.dq.bench``.

Produces ``--records`` records (100 B values) on the first flow's source in a fresh topic,
replicates them with the real replication job, then times :func:`run_data_quality` narrowed to
that topic four times: in full twice (the first run pays the Spark/Python-worker start-up),
incrementally with nothing new since the watermarks the full runs left, and, after as many
records again are produced and replicated, incrementally over those new records only. Prints
one JSON line of figures. Not a test: the figures are reported in docs/data-quality.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path


def _positive(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return n


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m kafka_dr.dq.bench",
        description="Time data-quality runs over a fresh replicated topic on the lab.",
    )
    p.add_argument(
        "--config",
        default=os.environ.get("KAFKA_DR_CONFIG") or ".lab/kafka-dr.yaml",
        help="the lab's config (default: $KAFKA_DR_CONFIG, else .lab/kafka-dr.yaml)",
    )
    p.add_argument("--records", type=_positive, default=1_000_000, help="records per side, each time (100 B values)")
    p.add_argument("--partitions", type=_positive, default=4, help="partitions of the bench topic")
    p.add_argument("--master", default="local[2]", help="the Spark master of the comparison")
    p.add_argument(
        "--topic", default=None, help="an already replicated topic of the first flow: skip producing and replicating"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    if not Path(a.config).is_file():
        parser.error(f"--config {a.config}: no such file (start the lab first: .venv/bin/kafka-dr lab up)")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    import yaml

    from kafka_dr.core.config_load import load_config
    from kafka_dr.dq import run_data_quality
    from kafka_dr.kafka import clients
    from kafka_dr.kafka.topics import ensure_topic
    from kafka_dr.spark.job import spark_session

    doc = yaml.safe_load(Path(a.config).read_text())
    topic = a.topic or f"dq-bench-{uuid.uuid4().hex[:6]}"
    flow = doc["flows"][0]
    doc["flows"] = [{**flow, "topics": {"allow": [topic]}, "mode": "incremental"}]
    doc.pop("schema_mirror", None)
    work = Path(tempfile.mkdtemp(prefix="kafka-dr-dq-bench-"))
    doc["data_quality"] = {"dir": str(work / "dq")}
    # the bench measures the comparison; the records wait for the replication run to start
    doc["thresholds"] = {**doc.get("thresholds", {}), "latency_p99_max_seconds": 86400}
    path = work / "kafka-dr.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    cfg = load_config(path)
    f = cfg.flows[0]
    for name in (f.source, f.target):
        ensure_topic(clients.admin(cfg.cluster(name)), topic, partitions=a.partitions)

    produced_s = replicated_s = None
    spark = spark_session(cfg, "kafka-dr-dq-bench", a.master)
    if not a.topic:
        produced_s, replicated_s = _produce_and_replicate(cfg, path, f, topic, a, spark)

    runs = []

    def timed(full: bool) -> None:
        t = time.monotonic()
        r = run_data_quality(cfg, spark, topics=[topic], publish_results=False, full=full)
        runs.append({"seconds": round(time.monotonic() - t, 1), "success": r.success, "full": full, **r.figures})

    for full in (True, True, False):  # cold, warm, then an incremental run with nothing new
        timed(full)
    if not a.topic:
        _produce_and_replicate(cfg, path, f, topic, a, spark)
        timed(False)  # incremental over the new records only
    print(
        json.dumps(
            {
                "records_per_side": a.records,
                "partitions": a.partitions,
                "master": a.master,
                "produce_seconds": produced_s,
                "replicate_seconds": replicated_s,
                "dq_runs": runs,
                "load_average": os.getloadavg(),
            }
        )
    )
    return 0 if all(r["success"] for r in runs) else 1


def _produce_and_replicate(cfg, path, f, topic, a, spark):
    from kafka_dr.kafka import clients
    from kafka_dr.kafka.writing import produce_all
    from kafka_dr.spark.job import JobOptions, run_flow

    t = time.monotonic()
    now = int(time.time() * 1000)
    value = b"x" * 100
    rows = ((f"k{i}".encode(), value, [("app", b"bench")], now, i % a.partitions) for i in range(a.records))
    produce_all(
        clients.producer(cfg.cluster(f.source), **{"linger.ms": 50, "batch.size": 1_000_000}), topic, rows, timeout=300
    )
    produced_s = time.monotonic() - t

    t = time.monotonic()
    run_flow(JobOptions(config=str(path), flow=f.name, mode="incremental"), spark=spark)
    replicated_s = time.monotonic() - t

    return round(produced_s, 1), round(replicated_s, 1)


if __name__ == "__main__":
    sys.exit(main())

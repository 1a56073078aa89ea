"""The demo a new user sees first: the lab's two clusters taking and serving real records.

It starts (or reuses) the lab, creates a ``demo.orders`` topic on every cluster, produces a
few records with headers on each, reads every cluster back and prints what it holds. As the
replication features land, the demo grows to show records crossing between clusters.
"""

from __future__ import annotations

import time
from pathlib import Path

from kafka_dr.core.config_load import load_config
from kafka_dr.core.provenance import Provenance
from kafka_dr.kafka import clients
from kafka_dr.kafka.reading import read_partitions
from kafka_dr.kafka.topics import ensure_topic
from kafka_dr.lab.lab import Lab

TOPIC = "demo.orders"


def run_demo(lab_dir: Path | None = None) -> int:
    lab = Lab(lab_dir)
    print(f"== starting the lab in {lab.root} (first run fetches Kafka from Maven Central)")
    cfg_path = lab.up()
    cfg = load_config(cfg_path)
    for st in lab.status():
        print(f"   {st.name}: {st.bootstrap} cluster id {st.cluster_id} ({'healthy' if st.answering else 'DOWN'})")

    stamp = int(time.time())
    for name, cluster in cfg.clusters.items():
        ensure_topic(clients.admin(cluster), TOPIC, partitions=3)
        p = clients.producer(cluster)
        for i in range(3):
            p.produce(
                TOPIC,
                key=f"{name}-order-{i}".encode(),
                value=f'{{"order": {i}, "dc": "{name}", "run": {stamp}}}'.encode(),
                headers=[("source-app", b"demo"), ("dc", name.encode())],
            )
        left = p.flush(30)
        if left:
            raise RuntimeError(f"{left} demo record(s) to {name} were not acknowledged within 30s")
        print(f"== produced 3 records to {name}/{TOPIC}")

    print("\n== replicating both ways with Spark (incremental runs of both flows; loop policy: provenance)")
    from kafka_dr.spark.job import JobOptions, run_flow, spark_session

    spark = spark_session(cfg, "kafka-dr-demo", master="local[2]")
    for flow in cfg.flows:
        s = run_flow(JobOptions(config=str(cfg_path), flow=flow.name, mode="incremental"), spark=spark)
        print(f"   {flow.name}: {s.records_written} record(s) copied, {s.records_filtered} skipped by the loop policy")
    for flow in cfg.flows:  # a second pass finds nothing: no record travels back
        s = run_flow(JobOptions(config=str(cfg_path), flow=flow.name, mode="incremental"), spark=spark)
        print(f"   {flow.name} again: {s.records_written} copied (nothing loops back)")

    for name, cluster in cfg.clusters.items():
        c = clients.consumer(cluster, group_id="kafka-dr-demo")
        try:
            records = read_partitions(c, TOPIC, [0, 1, 2])
        finally:
            c.close()
        mine = [r for r in records if f'"run": {stamp}'.encode() in (r.value or b"")]
        print(f"\n== {name}/{TOPIC}: {len(records)} record(s) in all; this run's {len(mine)}:")
        print(f"   {'p':>2} {'offset':>6}  {'key':<16} {'origin':<26} value")
        for r in sorted(mine, key=lambda r: (r.partition, r.offset)):
            p = Provenance.from_headers(r.headers)
            origin = "local" if p is None else f"from {p.cluster} @{p.offset}"
            print(
                f"   {r.partition:>2} {r.offset:>6}  {(r.key or b'').decode():<16} {origin:<26} "
                f"{(r.value or b'').decode()}"
            )
    print(
        f"\nThe lab keeps running. Config: {cfg_path}\n"
        f"Stop it with: .venv/bin/kafka-dr lab down   (add --wipe to delete its data)"
    )
    return 0

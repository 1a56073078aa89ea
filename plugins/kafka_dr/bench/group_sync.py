"""What the continuous group-offset sync costs with many groups, measured on the lab:
``python -m kafka_dr.bench.group_sync --groups 1000``.

A topic of ``--partitions`` partitions gets ``--records`` records per partition on ``east``,
copied to ``west`` by the flow's copier (no Spark: the sync is what is measured). ``--groups``
consumer groups then commit a position on every partition of it (each group a position of its
own, so that no two share a translation), and the east -> west flow's
:class:`~kafka_dr.kafka.group_sync.ContinuousGroupSync` (the job's own, as its driver thread
runs it) runs three rounds: the **first** (it reads every live commit of the source and syncs
every group's positions), an **idle** one (no group committed since) and a **moved** one (every
group committed again, further on). Each round's wall time and this process's CPU time (the
sync's threads and its clients') are reported per round, per group and per partition position,
as a table and one JSON line. The run's topic and groups are deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import yaml
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

from kafka_dr.core.config_load import load_config
from kafka_dr.kafka import clients
from kafka_dr.kafka.copier import RangeCopier
from kafka_dr.kafka.copy_spec import RangeSpec
from kafka_dr.kafka.group_sync import ContinuousGroupSync
from kafka_dr.kafka.topics import delete_topics, ensure_topic
from kafka_dr.kafka.writing import produce_all

FLOW = "east_to_west"


def _cpu() -> float:
    """This process's CPU seconds (the sync's threads and its clients'; nothing else runs in it
    during a round)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _commit_all(admin, groups: list[str], topic: str, offsets: Callable[[int], list[int]]) -> float:
    """Group ``i`` commits ``offsets(i)`` (one per partition) on ``topic``; the seconds it took."""
    t0 = time.monotonic()
    for start in range(0, len(groups), 100):  # a hundred requests in flight at a time
        futures = [
            admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(g, [TopicPartition(topic, p, o) for p, o in enumerate(offsets(i))])]
            )
            for i, g in enumerate(groups[start : start + 100], start)
        ]
        for f in futures:
            for done in f.values():
                done.result(60)
    return time.monotonic() - t0


def _copy(cfg, flow, topic: str, partitions: int, end: int) -> None:
    copier = RangeCopier(cfg, flow)
    try:
        for p in range(partitions):
            copier.copy(RangeSpec(topic, p, 0, end, topic))
    finally:
        copier.close()


def _round(sync: ContinuousGroupSync) -> dict:
    cpu = _cpu()
    r = sync.round()
    return {
        "seconds": round(r.seconds, 3),
        "cpu_seconds": round(_cpu() - cpu, 3),
        "groups": r.groups,
        "positions": r.partitions,
        "committed": r.committed,
    }


def measure(config: Path, groups: int, partitions: int, records: int) -> dict:
    run = f"bench.groups.{uuid.uuid4().hex[:6]}"
    topic, names = run, [f"{run}.g{i:05d}" for i in range(groups)]
    doc = yaml.safe_load(config.read_text())
    for f in doc["flows"]:
        f["topics"] = {"allow": [topic.replace(".", r"\.")]}
    doc["consumer_groups"] = {"allow": [f"{run.replace('.', r'[.]')}[.]g.*"]}
    narrowed = config.with_name(f"{run}.yaml")
    narrowed.write_text(yaml.safe_dump(doc, sort_keys=False))
    cfg = load_config(narrowed)
    flow = next(f for f in cfg.flows if f.name == FLOW)
    east, west = cfg.cluster("east"), cfg.cluster("west")
    e_admin, w_admin = clients.admin(east), clients.admin(west)
    sync = ContinuousGroupSync(cfg, flow)
    try:
        for admin in (e_admin, w_admin):
            ensure_topic(admin, topic, partitions)
        rows = [(f"k{i}".encode(), b"v" * 100, [], None, p) for p in range(partitions) for i in range(records)]
        produce_all(clients.producer(east), topic, rows)
        _copy(cfg, flow, topic, partitions, records)
        # each group at a position of its own (the costly case: no two share a translation)
        committed_s = _commit_all(e_admin, names, topic, lambda i: [records // 2 - i % (records // 2)] * partitions)
        first = _round(sync)
        idle = _round(sync)
        moved_commit_s = _commit_all(e_admin, names, topic, lambda i: [records - i % (records // 2)] * partitions)
        moved = _round(sync)
    finally:
        sync.close()
        e_admin.delete_consumer_groups(names)
        w_admin.delete_consumer_groups(names)
        for admin in (e_admin, w_admin):
            delete_topics(admin, [topic])
        narrowed.unlink(missing_ok=True)
    positions = groups * partitions
    out = {
        "bench": "kafka-dr group-sync",
        "groups": groups,
        "partitions": partitions,
        "positions": positions,
        "commit_all_seconds": round(committed_s, 2),
        "commit_all_again_seconds": round(moved_commit_s, 2),
    }
    for name, r in (("first", first), ("idle", idle), ("moved", moved)):
        for k, v in r.items():
            out[f"{name}_{k}"] = v
        if r["positions"]:
            out[f"{name}_ms_per_group"] = round(r["seconds"] * 1000 / max(1, r["groups"]), 2)
            out[f"{name}_cpu_ms_per_position"] = round(r["cpu_seconds"] * 1000 / r["positions"], 3)
    return out


def table(f: dict) -> str:
    lines = [
        f"group-offset sync: {f['groups']:,} groups x {f['partitions']} partitions = {f['positions']:,} positions "
        f"(committed on the source in {f['commit_all_seconds']} s)",
        f"{'round':<8}{'seconds':>9}{'CPU s':>8}{'groups':>8}{'positions':>11}{'committed':>11}{'ms/group':>10}"
        f"{'CPU ms/position':>17}",
    ]
    for name in ("first", "idle", "moved"):
        lines.append(
            f"{name:<8}{f[f'{name}_seconds']:>9}{f[f'{name}_cpu_seconds']:>8}{f[f'{name}_groups']:>8}"
            f"{f[f'{name}_positions']:>11}{f[f'{name}_committed']:>11}{f.get(f'{name}_ms_per_group', '-'):>10}"
            f"{f.get(f'{name}_cpu_ms_per_position', '-'):>17}"
        )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m kafka_dr.bench.group_sync", description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", type=Path, default=Path(".lab"), help="lab folder (default .lab); started if not running")
    p.add_argument("--groups", type=int, default=1000)
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--records", type=int, default=1000, help="records per partition")
    return p


def main(argv: list[str] | None = None) -> int:
    p = build_parser()
    a = p.parse_args(argv)
    for flag, v in (("--groups", a.groups), ("--partitions", a.partitions), ("--records", a.records)):
        if v < 1:
            print(f"{p.prog}: {flag} {v}: must be at least 1", file=sys.stderr)
            return 2
    from kafka_dr.lab.lab import Lab

    config = Lab(a.dir).up(count=2)
    figures = measure(Path(config), a.groups, a.partitions, a.records)
    print(table(figures))
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())

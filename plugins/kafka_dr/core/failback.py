"""Failback decisions that need no cluster: the re-seed transform, the seed map, where a
consumer group resumes on the recovered cluster, and the transient flows failback copies with.

Two modes (``dr_failback``):

``resync``
    The recovered cluster came back with its data. The normal flows catch up in both
    directions from their committed progress: the survivor's outage writes go to the recovered
    cluster; the recovered cluster's records that were never replicated before it failed go to
    the survivor, where they land after the outage writes (out of order; counted). In an
    active/passive setup there is no flow back, so a transient one copies the survivor's own
    records (no provenance, optionally within a time window: the Confluent seed's
    ``provenance.header.filter.overrides``).
``reseed``
    The recovered cluster is new and empty (the Redpanda seed's fail-forward). Every selected
    record of the survivor is copied in order, rewriting provenance so that both clusters look
    as before the outage: records that originated on the recovered cluster lose their
    provenance headers there; the survivor's own records gain them. A seed map (runs of
    consecutive source/target offsets, written in the same transaction as the records) lets
    consumer groups move back exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from kafka_dr.core.config import FlowConfig, LoopPolicy, ProvenanceRule, TopicSelection
from kafka_dr.core.formats import readable, stamped
from kafka_dr.core.loop import Transform
from kafka_dr.core.provenance import Headers, Provenance, origin_and_topic, strip_product_headers

RESYNC = "resync"
RESEED = "reseed"
MODES = (RESYNC, RESEED)


class FailbackRefused(RuntimeError):
    """A precondition of the failback does not hold; nothing was changed."""


def transient_flow(name: str, survivor: str, recovered: str, topics: TopicSelection) -> FlowConfig:
    """A flow that exists only while failing back: survivor -> recovered, same topic names,
    its own progress group and transactional ids (``<prefix>.progress.<name>``)."""
    return FlowConfig(
        name=name,
        source=survivor,
        target=recovered,
        topics=topics,
        loop_policy=LoopPolicy.PROVENANCE,
        provenance_rule=ProvenanceRule.NOT_TO_ORIGIN,
    )


def narrowed(topics: TopicSelection, pattern: str | None) -> TopicSelection:
    """The flow's topic selection narrowed by the operator's regex (never widened)."""
    if not pattern or pattern == ".*":
        return topics
    # a topic must match one of the flow's allow patterns and the operator's pattern
    return replace(topics, allow=tuple(f"(?=(?:{pattern})$)(?:{a})" for a in topics.allow))


def in_window(ts_ms: int, since_ms: int | None, until_ms: int | None) -> bool:
    """The time window of a resync's transient flow: ``since_ms <= timestamp < until_ms``."""
    return (since_ms is None or ts_ms >= since_ms) and (until_ms is None or ts_ms < until_ms)


def reseed_transform(survivor: str, recovered: str, verbatim_topics: frozenset[str] = frozenset()) -> Transform:
    """Provenance as if the outage never happened, for records copied survivor -> recovered.

    - origin == recovered (a record that started on the recovered cluster): every product
      header is dropped; the record is local again, as it was before the outage;
    - no origin (the survivor's own record): provenance of the survivor is added, as the normal
      flow would have done;
    - another origin (a third cluster): kept as it is;
    - ``verbatim_topics`` (the schema registry's topic): copied unchanged.
    """
    recovered_b = recovered.encode()

    def transform(headers: Headers, topic: str, partition: int, offset: int, now_ms: int):
        if topic in verbatim_topics:
            return list(headers or ())
        origin, origin_topic = origin_and_topic(headers)
        if origin is None:
            return [*(headers or ()), *Provenance(survivor, topic, partition, offset, now_ms).to_headers()]
        if origin == recovered_b:
            if origin_topic is not None and origin_topic != topic.encode():
                return list(headers)  # it came from another topic of the recovered cluster: keep the trail
            return strip_product_headers(headers)
        return list(headers)

    return transform


# --- the seed map ----------------------------------------------------------------------


@dataclass(frozen=True)
class SeedRun:
    """``count`` records copied from survivor offsets ``source_start..`` to recovered offsets
    ``target_start..``, both consecutive."""

    source_start: int
    target_start: int
    count: int

    @property
    def source_end(self) -> int:
        return self.source_start + self.count


def runs_from_pairs(pairs: list[tuple[int, int]]) -> list[SeedRun]:
    """Coalesce ``(source offset, target offset)`` pairs (in copy order) into runs."""
    runs: list[SeedRun] = []
    for s, t in pairs:
        last = runs[-1] if runs else None
        if last is not None and s == last.source_end and t == last.target_start + last.count:
            runs[-1] = SeedRun(last.source_start, last.target_start, last.count + 1)
        else:
            runs.append(SeedRun(s, t, 1))
    return runs


def seed_map_key(topic: str, partition: int, source_start: int) -> bytes:
    return json.dumps([topic, partition, source_start], separators=(",", ":")).encode()


def seed_map_value(run: SeedRun) -> bytes:
    return json.dumps(
        stamped({"source_start": run.source_start, "target_start": run.target_start, "count": run.count}),
        separators=(",", ":"),
    ).encode()


def decode_seed_map(key: bytes | None, value: bytes | None) -> tuple[str, int, SeedRun] | None:
    try:
        topic, partition, _ = json.loads(key or b"")
        v = readable(json.loads(value or b""), "a failback's seed map")
        return str(topic), int(partition), SeedRun(int(v["source_start"]), int(v["target_start"]), int(v["count"]))
    except (ValueError, KeyError, TypeError):
        return None


def seeded_position(runs: list[SeedRun], source_offset: int, target_end: int) -> int:
    """Where a group that committed ``source_offset`` on the survivor resumes on the re-seeded
    cluster: the target offset of the first seeded record at or after it (the end when it
    had read everything seeded). Exact: the seed copied every record, in order."""
    for run in sorted(runs, key=lambda r: r.source_start):
        if source_offset < run.source_start:
            return run.target_start  # the group's position sits in a gap (compaction) before this run
        if source_offset < run.source_end:
            return run.target_start + (source_offset - run.source_start)
    return target_end


def resync_position(survivor_origin_target: int | None, first_unread_local: int | None, target_end: int) -> int:
    """Where a group resumes on the resynced cluster: no record it has not read may lie below.

    ``survivor_origin_target``: the recovered-cluster offset of the first survivor-origin record
    the group had not read (translation by provenance; ``None``: it read them all).
    ``first_unread_local``: the recovered cluster's own offset of the first of its local
    records the group had not read on the survivor (``None``: it read them all). Records of the
    recovered cluster that were never replicated before the outage reach the survivor after the
    outage writes, so a group can be past the latter and before the former: then it resumes at
    the earlier of the two and re-reads the survivor records in between, rather than skipping.
    """
    candidates = [o for o in (survivor_origin_target, first_unread_local) if o is not None]
    return min(candidates) if candidates else target_end

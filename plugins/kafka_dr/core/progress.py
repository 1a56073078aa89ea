"""A flow's progress: per source topic-partition, the next source offset to copy.

Progress lives on the **target** cluster as the committed offsets of the consumer group
``<prefix>.progress.<flow>``, written with ``send_offsets_to_transaction`` in the same Kafka
transaction as the records they cover (Kafka's own exactly-once mechanism). So after any
crash, what a ``read_committed`` reader of the target sees and what the progress says agree:
a restart resumes exactly after the last committed record, with neither loss nor duplicate.

The offset is committed on the *target* topic-partition that the source partition maps to
(``orders[3]`` -> ``orders[3]`` or ``east.orders[3]``): a flow maps source partitions to
target partitions one to one, and the target topic exists, which a broker requires for an
offset commit. The number stored is the **source** offset; the commit metadata says so
(``{"src": "orders", "ts": ...}``), for an operator who looks with kafka-consumer-groups.
"""

from __future__ import annotations

import json

from kafka_dr.core.formats import readable, stamped


def encode_metadata(source_topic: str, updated_ms: int) -> str:
    return json.dumps(stamped({"src": source_topic, "ts": updated_ms}), separators=(",", ":"))


def decode_metadata(raw: str | None) -> dict:
    """The commit metadata, or ``{}`` when absent or not ours."""
    try:
        d = json.loads(raw or "")
    except ValueError:
        return {}
    return dict(readable(d, "a flow's committed progress")) if isinstance(d, dict) else {}


def resume_offset(committed: int | None, planned_start: int, log_start: int, allow_reset: bool) -> int:
    """Where a range copy really starts, given the committed progress.

    - committed progress wins over what the planner thought (a replayed micro-batch after a
      crash starts after what is already committed: no duplicate);
    - a committed offset below the log start means the source deleted records before they were
      copied (retention outran replication): start at the log start, the loss is reported;
    - no progress but a planned start past the log start means the progress state was lost:
      refuse rather than silently skip or recopy, unless the operator allows a reset.
    """
    if committed is not None:
        return max(committed, log_start)
    if planned_start > log_start and not allow_reset:
        raise ProgressLost(
            f"no committed progress, but the run was planned to start at offset {planned_start} "
            f"(log start {log_start}): the progress topic was deleted or truncated"
        )
    return max(planned_start, log_start)


def first_run_gap(committed: int | None, log_start: int, start: int, reported_until: int = 0) -> tuple[int, int] | None:
    """The offsets ``(first, last)`` the source deleted before this flow ever copied the
    partition, or ``None``.

    A first copy (no committed progress; the caller also makes sure the target holds no copy
    of the partition) starts at the log start, so every record below it, from offset 0, was
    gone before replication saw it (retention, DeleteRecords). It is lost like records deleted
    after the flow had progress (:func:`resume_offset`), and reported, but it is no failure.
    Not a gap: committed progress, a start past the log start (resumed after the copies found
    with ``--reset-progress``), and offsets below ``reported_until`` (already reported).
    """
    if committed is not None or start > log_start or log_start <= reported_until:
        return None
    return reported_until, log_start - 1


def lost_progress_starts(
    flow: str, target: str, copies: dict[tuple[str, int], tuple[str, int] | None], allow_reset: bool
) -> dict[tuple[str, int], int]:
    """Decide where partitions *without* committed progress start, at the job's start.

    ``copies`` maps each such source ``(topic, partition)`` to ``(target topic, last source
    offset found replicated on the target)``, or ``None`` when the target holds no copy of it
    (a first run: start at the log start, nothing is returned for it). A partition that has
    copies but no progress lost its progress state (group deleted, offsets expired): starting
    at the log start would copy everything again. Refused with :class:`ProgressLost` naming
    every such partition, unless ``allow_reset`` (``--reset-progress``), which resumes right
    after the last copy found: neither loss nor duplicate.
    """
    found = {tp: c for tp, c in copies.items() if c is not None}
    if found and not allow_reset:
        parts = ", ".join(
            f"{t}[{p}] (last copy on {target}/{c[0]}[{p}] is of offset {c[1]})" for (t, p), c in sorted(found.items())
        )
        raise ProgressLost(
            f"flow {flow}: no committed progress on {target} for {parts}, yet {target} holds records copied from them: "
            f"the progress group was deleted or expired. Not restarting from the beginning (that would duplicate); "
            f"re-run with --reset-progress (JobOptions.allow_reset) to resume after the last copy found"
        )
    return {tp: c[1] + 1 for tp, c in found.items()}


class ProgressLost(RuntimeError):
    """The flow's progress state is gone; restarting from anywhere would lose or duplicate."""

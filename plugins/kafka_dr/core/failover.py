"""Failover decisions that need no cluster: the recovery-point report and the summary.

When the failed cluster is gone, what the survivor is missing can only be bounded from what
the survivor itself holds: the flow's committed copy progress (next source offset copied),
the last source end offsets the replication job reported in its metrics, and the newest
heartbeat of the failed cluster that reached the survivor. Records produced on the failed
cluster after its last report are unknowable; the report says "at least" and gives the time
window instead.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RpoEntry:
    flow: str
    topic: str
    partition: int
    copied_up_to: int | None  #: next source offset the survivor has (committed progress)
    last_known_source_end: int | None  #: from the job's last metrics row for the partition
    missing_at_least: int | None  #: records known to exist on the failed cluster and not copied

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def cluster_pair_problem(known: list[str], first: tuple[str, str], second: tuple[str, str]) -> str | None:
    """What is wrong with the two clusters an operator run names (``(role, name)`` each), or
    None: both must be configured and differ. Shared by failover and failback."""
    for role, name in (first, second):
        if name not in known:
            return f"unknown {role} cluster {name!r} (known: {', '.join(known)})"
    if first[1] == second[1]:
        return f"the {first[0]} and the {second[0]} cluster are both {first[1]!r}"
    return None


def rpo_entry(flow: str, topic: str, partition: int, copied_up_to: int | None, last_known_end: int | None) -> RpoEntry:
    missing = None
    if copied_up_to is not None and last_known_end is not None:
        missing = max(0, last_known_end - copied_up_to)
    elif last_known_end is not None:
        missing = last_known_end  # nothing copied at all
    return RpoEntry(flow, topic, partition, copied_up_to, last_known_end, missing)


def rpo_seconds(now_ms: int, newest_heartbeat_ms: int | None) -> float | None:
    """Upper bound of the window of writes the survivor may lack: time since the newest
    heartbeat of the failed cluster that reached the survivor (None: never reached)."""
    return None if newest_heartbeat_ms is None else max(0.0, (now_ms - newest_heartbeat_ms) / 1000.0)


def last_known_ends(metric_rows: list[dict], flow: str) -> dict[tuple[str, int], int]:
    """Per (source topic, partition), the largest source end the job reported: range end plus
    the lag it saw after copying."""
    out: dict[tuple[str, int], int] = {}
    for r in metric_rows:
        if r.get("flow") != flow or "topic" not in r or "partition" not in r:
            continue
        end = int(r.get("end") or 0) + int(r.get("lag") or 0)
        k = (r["topic"], int(r["partition"]))
        out[k] = max(out.get(k, 0), end)
    return out

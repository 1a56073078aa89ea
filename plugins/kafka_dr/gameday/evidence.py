"""What each broker's log holds around a lost record's offset, read from the segment files.

A record acknowledged in a committed transaction but missing from a cluster is either gone
from the log (truncated) or still there and hidden from read_committed readers (an ABORT
marker, or a listed aborted transaction). Kafka's own ``DumpLogSegments`` tool prints every
batch, control marker and aborted-transaction index entry; :func:`dump_partition` runs it on
one broker's copy of a partition and :func:`around` says in one line what the copy holds at
the offset. The full dumps are kept next to the game day's logs.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

DUMP_TOOL = "org.apache.kafka.tools.DumpLogSegments"
_FIELD = re.compile(r"(\w+): (\S+)")


def dump_partition(jars: Path, partition_dir: Path, timeout: float = 120.0) -> str:
    """DumpLogSegments' output for every segment and aborted-transaction index of one copy."""
    files = sorted(partition_dir.glob("*.log")) + sorted(partition_dir.glob("*.txnindex"))
    if not files:
        return ""
    command = ["java", "-cp", f"{jars}/*", DUMP_TOOL, "--deep-iteration", "--print-data-log"]
    command += ["--files", ",".join(str(f) for f in files)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    return done.stdout


def _fields(line: str) -> dict[str, str]:
    return dict(_FIELD.findall(line))


def batches(dump: str) -> list[dict[str, str]]:
    """The batches of a dump in log order; a control batch carries its ``endTxnMarker``."""
    out: list[dict[str, str]] = []
    for line in dump.splitlines():
        if line.startswith("baseOffset:"):
            out.append(_fields(line))
        elif line.startswith("|") and "endTxnMarker:" in line and out:
            out[-1]["endTxnMarker"] = _fields(line)["endTxnMarker"]
    return out


def aborted_entries(dump: str) -> list[dict[str, str]]:
    """The aborted-transaction index entries of a dump (``producerId``, ``firstOffset``...)."""
    return [_fields(line) for line in dump.splitlines() if "firstOffset:" in line and "producerId:" in line]


def around(dump: str, offset: int) -> str:
    """One line: the batch holding ``offset`` in this copy, the marker that ended its
    transaction, and whether the aborted-transaction index covers it."""
    found = batches(dump)
    if not found:
        return "no segment"
    hit = next((b for b in found if int(b["baseOffset"]) <= offset <= int(b["lastOffset"])), None)
    if hit is None:
        return f"offset {offset} not in the log ({found[0]['baseOffset']}..{found[-1]['lastOffset']})"
    pid, base = hit["producerId"], int(hit["baseOffset"])
    marker = next(
        (
            f"{b['endTxnMarker']} at {b['baseOffset']} (epoch {b['producerEpoch']})"
            for b in found
            if int(b["baseOffset"]) > base and b.get("isControl") == "true" and b["producerId"] == pid
        ),
        "no marker after it",
    )
    listed = [
        f"{e['firstOffset']}..{e['lastOffset']}"
        for e in aborted_entries(dump)
        if e["producerId"] == pid and int(e["firstOffset"]) <= offset <= int(e["lastOffset"])
    ]
    return (
        f"batch {base}..{hit['lastOffset']} producer {pid} epoch {hit['producerEpoch']} "
        f"leader epoch {hit['partitionLeaderEpoch']}, ended by {marker}"
        + (f", listed aborted {', '.join(listed)}" if listed else "")
    )

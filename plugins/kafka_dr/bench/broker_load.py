"""What one copy asked of the lab's brokers: the requests they served for it, by API (their own
request metrics, read before the launch and after the exit), and the record batches it left in
the target topic's log (read from the brokers' segment files).

Both are read outside the measured windows: the request metrics by a short JVM that attaches
to each broker (``java/BrokerRequests.java``, compiled once per host into the cache; the brokers
need no JMX port), the batches by walking the batch headers of one replica of each partition.
A figure that cannot be read (no JDK attach, a broker not found) is None, never a guess.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections import Counter
from dataclasses import dataclass, fields
from pathlib import Path

from kafka_dr.kafka.java_helper import launch_command

HELPER = Path(__file__).with_name("java") / "BrokerRequests.java"
#: a helper's JVM lives a second: C2's compilations and a parallel collector would only cost CPU
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
#: the requests of a transaction besides its produce requests (not InitProducerId: every
#: idempotent producer sends that once, the Java clients' by default)
TRANSACTION_APIS = ("AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn")
#: record batch v2 header: baseOffset int64, batchLength int32, then (from byte 12) leader epoch
#: int32, magic int8, crc int32, attributes int16, lastOffsetDelta int32, two timestamps int64,
#: producer id int64, producer epoch int16, base sequence int32, records count int32
_HEADER = struct.Struct(">qiibIhiqqqhii")
_CONTROL = 0x20  #: attributes bit 5: a transaction marker's batch


def request_counts(pids: tuple[int, ...]) -> Counter | None:
    """Requests served so far by the brokers ``pids``, summed by API; None if unreadable."""
    java = shutil.which("java")
    if not pids or java is None:
        return None
    try:
        proc = subprocess.run(
            [*launch_command(HELPER, java, [], "broker-requests", JVM_OPTIONS), *map(str, pids)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        return None
    counts: Counter = Counter()
    for line in proc.stdout.splitlines():
        _pid, api, n = line.split("\t")
        counts[api] += int(n)
    return counts


def log_dirs(pids: tuple[int, ...]) -> list[Path]:
    """The log directories of the brokers ``pids`` (``log.dirs`` of the properties file each was
    started with)."""
    out = []
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        # kafka.Kafka's one argument: its server properties (a -D option may name properties too)
        props = next((Path(a.decode()) for a in argv if a.endswith(b".properties") and not a.startswith(b"-")), None)
        if props is None or not props.is_file():
            continue
        for line in props.read_text().splitlines():
            if line.startswith("log.dirs="):
                out += [Path(d) for d in line.split("=", 1)[1].split(",") if d]
    return out


@dataclass(frozen=True)
class Batches:
    data_batches: int = 0
    records: int = 0  #: records in data batches (aborted ones included: they stay in the log)
    control_batches: int = 0  #: transaction markers
    data_bytes: int = 0  #: the data batches' bytes as stored (compressed, headers included)


def segment_batches(data: bytes) -> Batches:
    """Count the batches of one segment file's bytes (a batch cut short at the end is left out)."""
    data_batches = records = control = nbytes = pos = 0
    while pos + _HEADER.size <= len(data):
        header = _HEADER.unpack_from(data, pos)
        length, attributes, count = header[1], header[5], header[12]
        if length <= 0 or pos + 12 + length > len(data):
            break
        if attributes & _CONTROL:
            control += 1
        else:
            data_batches += 1
            records += count
            nbytes += 12 + length
        pos += 12 + length
    return Batches(data_batches, records, control, nbytes)


def cluster_of(log_dir: Path) -> str | None:
    """The id of the cluster whose broker writes ``log_dir`` (its ``meta.properties``)."""
    try:
        text = (log_dir / "meta.properties").read_text()
    except OSError:
        return None
    return next((line.split("=", 1)[1] for line in text.splitlines() if line.startswith("cluster.id=")), None)


def topic_batches(dirs: list[Path], topic: str, cluster_id: str) -> Batches | None:
    """The batches of ``topic`` on the cluster ``cluster_id`` (a copy may have its source's
    name), in one replica of each partition; None if none is found."""
    seen: dict[str, Path] = {}
    for d in (d for d in dirs if cluster_of(d) == cluster_id):
        for part in d.glob(f"{topic}-*"):
            suffix = part.name[len(topic) + 1 :]
            if suffix.isdigit():
                seen.setdefault(suffix, part)
    if not seen:
        return None
    counts = [segment_batches(seg.read_bytes()) for part in seen.values() for seg in sorted(part.glob("*.log"))]
    return Batches(*(sum(getattr(b, f.name) for b in counts) for f in fields(Batches)))


def figures(before: Counter | None, after: Counter | None, batches: Batches | None, copy_seconds: float) -> dict:
    """A copy's figures: the produce, consumer fetch, follower fetch and transaction requests the
    brokers served from before its launch to after its exit (produce also per second of copy
    window), and its target log's batches. Followers fetch as their leaders append, so produce
    requests cost the brokers their followers' fetches too."""
    keys = ("produce_requests", "produce_requests_per_s", "fetch_requests", "follower_fetch_requests")
    keys += ("transaction_requests",)
    out: dict = dict.fromkeys((*keys, "log_records", "log_batches", "log_bytes", "control_batches"))
    if before is not None and after is not None:
        produce = after["Produce"] - before["Produce"]
        out["produce_requests"] = produce
        out["produce_requests_per_s"] = round(produce / copy_seconds) if copy_seconds > 0 else None
        out["fetch_requests"] = after["FetchConsumer"] - before["FetchConsumer"]  # not the followers'
        out["follower_fetch_requests"] = after["FetchFollower"] - before["FetchFollower"]
        out["transaction_requests"] = sum(after[a] - before[a] for a in TRANSACTION_APIS)
    if batches is not None:
        out["log_records"], out["log_batches"] = batches.records, batches.data_batches
        out["log_bytes"] = batches.data_bytes
        out["control_batches"] = batches.control_batches
    return out


def broker_figures(rounds: list[dict], records: int, window: float) -> dict:
    """What a system's rounds asked of the brokers, over all of them: produce requests per
    second of copy window and records per produce request, transaction requests and markers
    summed, records per data batch and bytes per record in the target logs. A figure some round
    lacks is None."""

    def total(m: str) -> int | None:
        got = [r.get(m) for r in rounds]
        return None if None in got else sum(got)

    produce, batches, in_log = total("produce_requests"), total("log_batches"), total("log_records")
    fetch, follower = total("fetch_requests"), total("follower_fetch_requests")
    stored = total("log_bytes")
    return {
        "produce_requests_per_s": round(produce / window) if produce is not None and window > 0 else None,
        "records_per_produce_request": round(records / produce, 1) if produce else None,
        "records_per_fetch_request": round(records / fetch, 1) if fetch else None,
        "records_per_follower_fetch": round(records / follower, 1) if follower else None,
        "transaction_requests": total("transaction_requests"),
        "records_per_batch": round(in_log / batches, 1) if batches else None,
        "log_bytes_per_record": round(stored / in_log, 1) if stored is not None and in_log else None,
        "control_batches": total("control_batches"),
    }


def broker_table(flat: dict, systems: list[str], sizes: list[int]) -> list[str]:
    """The table's section of what each system's copies asked of the brokers."""

    def f(v) -> str:
        return "-" if v is None else f"{v:,}"

    rows = [(size, s) for size in sizes for s in systems if f"{s}_s{size}_records_per_batch" in flat]
    if not rows:
        return []
    head = f"{'system':<13}{'size B':>7}{'produce req/s':>15}{'records/req':>13}{'records/fetch':>15}"
    head += f"{'rec/follower fetch':>20}"
    head += f"{'records/batch':>15}{'log B/rec':>11}{'txn requests':>14}{'markers':>10}"
    lines = [
        "",
        "What the copy asked of the brokers (from the brokers' request metrics: produce requests per second of "
        "copy window, records per produce request, per consumer fetch request and per follower fetch request, "
        "txn requests = AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn; from the target topic's log: "
        "records per batch, bytes per record as stored, transaction markers)",
        head,
        "-" * len(head),
    ]
    for size, s in rows:
        k = f"{s}_s{size}_"
        lines.append(
            f"{s:<13}{size:>7}{f(flat.get(k + 'produce_requests_per_s')):>15}"
            f"{f(flat.get(k + 'records_per_produce_request')):>13}{f(flat.get(k + 'records_per_fetch_request')):>15}"
            f"{f(flat.get(k + 'records_per_follower_fetch')):>20}{f(flat.get(k + 'records_per_batch')):>15}"
            f"{f(flat.get(k + 'log_bytes_per_record')):>11}"
            f"{f(flat.get(k + 'transaction_requests')):>14}{f(flat.get(k + 'control_batches')):>10}"
        )
    return lines

"""Read what the DR status page shows, from the clusters, quickly and within bounds.

The page is opened when something is wrong, so every read here is bounded twice: in time
(a cluster that does not answer a metadata request within ``probe_timeout`` is reported
down and not read further) and in size (only the newest records of a topic are read). The
clusters are probed in parallel, so one cluster down costs one probe timeout, not one per
read. Judging what was read is :func:`kafka_dr.core.status.build_status`.
"""

from __future__ import annotations

import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from confluent_kafka import KafkaError, TopicPartition

from kafka_dr.core.config import DrConfig
from kafka_dr.core.dr_state import DrState, newest
from kafka_dr.core.formats import readable
from kafka_dr.core.heartbeat import FlowLatency
from kafka_dr.core.status import ClusterHealth
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.watermarks import watermarks

log = logging.getLogger(__name__)


def probe(cfg: DrConfig, name: str, resolve: SecretResolver | None = None, timeout: float = 3.0) -> ClusterHealth:
    c = cfg.cluster(name)
    try:
        found = clients.cluster_id(c, resolve, timeout=timeout)
        return ClusterHealth(name, c.bootstrap_servers, True, found, c.cluster_id)
    except clients.ClusterUnreachable:
        return ClusterHealth(name, c.bootstrap_servers, False, None, c.cluster_id, f"no answer within {timeout:.0f}s")
    except Exception as e:  # a broken client config must not take the page down
        return ClusterHealth(name, c.bootstrap_servers, False, None, c.cluster_id, f"{type(e).__name__}: {e}")


def read_json_tail(
    cfg: DrConfig, cluster: str, topic: str, tail: int, resolve: SecretResolver | None = None, timeout: float = 5.0
) -> list[dict]:
    """The newest ``tail`` JSON records of every partition of ``topic`` on ``cluster`` (oldest
    first by record timestamp); records that are not JSON objects are skipped."""
    c = clients.consumer(
        cfg.cluster(cluster),
        cfg.names.reader_group("status-reader"),
        resolve,
        **{"enable.partition.eof": True, "isolation.level": "read_uncommitted"},
    )
    out: list[tuple[int, dict]] = []
    deadline = time.monotonic() + timeout
    try:
        md = c.list_topics(topic, timeout=timeout).topics.get(topic)
        if md is None or md.error is not None:
            return []
        for p in md.partitions:
            low, high = watermarks(c, TopicPartition(topic, p), max(0.5, deadline - time.monotonic()))
            if high <= low:
                continue
            c.assign([TopicPartition(topic, p, max(low, high - tail))])
            while time.monotonic() < deadline:
                msg = c.poll(0.5)
                if msg is None:
                    continue
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        break
                    raise RuntimeError(f"reading {cluster}/{topic}[{p}]: {msg.error().str()}")
                try:
                    value = json.loads(msg.value() or b"")
                except ValueError:
                    value = None
                if isinstance(value, dict):
                    out.append((msg.timestamp()[1], dict(readable(value, f"{cluster}/{topic}"))))
                if msg.offset() + 1 >= high:
                    break
            c.unassign()
    finally:
        c.close()
    return [v for _, v in sorted(out, key=lambda x: x[0])]


def read_status_inputs(
    cfg: DrConfig,
    resolve: SecretResolver | None = None,
    probe_timeout: float = 3.0,
    read_timeout: float = 5.0,
    metrics_tail: int = 600,
) -> dict:
    """Everything :func:`~kafka_dr.core.status.build_status` needs from the clusters:
    ``health, state, heartbeats, metrics, dq, topics`` (the flows' reachable sources' topic
    names), ``parity`` (the recorded parity reports), plus ``read_errors`` ({what: message})."""
    from kafka_dr.kafka.heartbeats import measure
    from kafka_dr.kafka.parity_store import recorded_reports
    from kafka_dr.kafka.selection import topic_names
    from kafka_dr.kafka.state_store import read_one

    names = list(cfg.clusters)
    errors: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=max(4, 2 * len(names))) as pool:
        health = dict(zip(names, pool.map(lambda n: probe(cfg, n, resolve, probe_timeout), names)))
        up = [n for n in names if health[n].reachable]

        def guarded(what: str, fn, *args):
            try:
                return fn(*args)
            except Exception as e:
                errors[what] = f"{type(e).__name__}: {e}"
                log.warning("status page: reading %s failed: %s", what, e)
                return None

        states = {n: pool.submit(guarded, f"state on {n}", read_one, cfg, n, resolve) for n in up}
        beats = {
            f.name: pool.submit(guarded, f"heartbeats of {f.name} on {f.target}", measure, cfg, f, resolve)
            for f in cfg.flows
            if f.target in up
        }
        mtopic = cfg.names.metrics_topic
        targets = sorted({f.target for f in cfg.flows if f.target in up})
        metric_reads = [
            pool.submit(guarded, f"metrics on {t}", read_json_tail, cfg, t, mtopic, metrics_tail, resolve, read_timeout)
            for t in targets
        ]
        sources = sorted({f.source for f in cfg.flows if f.source in up})
        topic_reads = {
            n: pool.submit(guarded, f"topics on {n}", topic_names, cfg, n, resolve, read_timeout) for n in sources
        }
        dq_reads = [
            pool.submit(
                guarded,
                f"data-quality results on {n}",
                read_json_tail,
                cfg,
                n,
                cfg.names.dq_results_topic,
                5,
                resolve,
                read_timeout,
            )
            for n in up
        ]
        state: DrState = newest([s.result() for s in states.values()])
        heartbeats: dict[str, FlowLatency | None] = {name: fut.result() for name, fut in beats.items()}
        metrics = sorted((r for fut in metric_reads for r in (fut.result() or [])), key=lambda r: r.get("at_ms") or 0)
        dq_rows = [r for fut in dq_reads for r in (fut.result() or []) if isinstance(r.get("ts_ms"), int)]
        parity_reads = [
            pool.submit(guarded, f"parity reports on {n}", recorded_reports, cfg, n, resolve, read_timeout)
            for n in sorted({f.target for f in cfg.flows if f.enabled and f.target in up})
        ]
        topics = {n: names for n, fut in topic_reads.items() if (names := fut.result()) is not None}
        parity = sorted(
            (r for fut in parity_reads for r in (fut.result() or {}).values()), key=lambda r: (r["from"], r["to"])
        )
    dq = max(dq_rows, key=lambda r: r["ts_ms"]) if dq_rows else None
    return {
        "health": health,
        "state": state,
        "heartbeats": heartbeats,
        "metrics": metrics,
        "dq": dq,
        "topics": topics,
        "parity": parity,
        "read_errors": errors,
    }

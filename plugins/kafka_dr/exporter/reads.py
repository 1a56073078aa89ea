"""One read of everything the exporter serves, from the clusters and the internal topics.

The exporter reads the clusters itself rather than asking the replication job: lag must be
right when the job is dead. Every read is bounded in time (a cluster that does not answer a
metadata request within ``probe_timeout`` is reported down and not read further) and runs
beside the others; what fails is left out of the reading and counted in ``errors``. The
clients stay open between reads (an exporter is scraped every few seconds).
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor

from kafka_dr.core.config import DrConfig
from kafka_dr.core.dr_runs import newest_by_kind
from kafka_dr.core.dr_state import newest
from kafka_dr.core.metric_counters import Counters
from kafka_dr.core.metric_samples import Reading
from kafka_dr.core.offsets import synced_at
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.topic_tail import TopicTail, json_rows

log = logging.getLogger(__name__)


class ClusterReads:
    def __init__(self, cfg: DrConfig, resolve: SecretResolver | None = None, probe_timeout: float = 3.0) -> None:
        self.cfg, self.resolve, self.probe_timeout = cfg, resolve, probe_timeout
        self.counters = Counters()
        self.errors: dict[str, int] = {}
        self._lag_readers: dict[str, object] = {}
        self._metrics: dict[str, TopicTail] = {}  #: by target cluster
        self._syncs: dict[str, TopicTail] = {}  #: by target cluster
        #: the offset-sync topic's newest record per key, by cluster: (value, timestamp ms)
        self._sync_latest: dict[str, dict[bytes | None, tuple]] = {}
        self._pool = ThreadPoolExecutor(max_workers=max(4, 2 * len(cfg.clusters) + len(cfg.flows)))

    def _guarded(self, what: str, fn, *args):
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - one failed read leaves the others served
            self.errors[what] = self.errors.get(what, 0) + 1
            log.warning("exporter: reading %s failed: %s", what, e)
            return None

    def read(self) -> Reading:
        from kafka_dr.kafka.status_reads import probe

        t0 = time.monotonic()
        cfg, pool = self.cfg, self._pool
        names = list(cfg.clusters)
        health = dict(zip(names, pool.map(lambda n: probe(cfg, n, self.resolve, self.probe_timeout), names)))
        up = {n for n, h in health.items() if h.reachable}
        flows = [f for f in cfg.flows if f.source in up and f.target in up]
        targets = sorted({f.target for f in cfg.flows if f.target in up})

        states = [pool.submit(self._guarded, f"state on {n}", self._state, n) for n in sorted(up)]
        lags = {f.name: pool.submit(self._guarded, f"lag of {f.name}", self._lag, f) for f in flows}
        beats = {
            f.name: pool.submit(self._guarded, f"heartbeats of {f.name}", self._heartbeat_age, f)
            for f in cfg.flows
            if f.target in up
        }
        rows = [pool.submit(self._guarded, f"metrics on {t}", self._metric_rows, t) for t in targets]
        syncs = [pool.submit(self._guarded, f"offset syncs on {t}", self._synced, t) for t in targets]
        dq = [pool.submit(self._guarded, f"data-quality results on {n}", self._dq, n) for n in sorted(up)]
        parity = [pool.submit(self._guarded, f"parity reports on {t}", self._parity, t) for t in targets]
        runs = [pool.submit(self._guarded, f"DR runs on {n}", self._runs, n) for n in sorted(up)]

        state = newest([s.result() for s in states])
        self.counters.add([r for fut in rows for r in (fut.result() or [])], {f.name for f in cfg.flows})
        group_ages: dict[tuple[str, str], float] = {}
        now_ms = int(time.time() * 1000)
        flow_names = {f.name for f in cfg.flows}
        for fut in syncs:
            for (flow, group), ms in (fut.result() or {}).items():
                if flow in flow_names:
                    group_ages[(flow, group)] = max(0.0, (now_ms - ms) / 1000)
        dq_rows = [r for fut in dq for r in (fut.result() or []) if isinstance(r.get("ts_ms"), int)]
        return Reading(
            now_ms=now_ms,
            health={n: h.reachable for n, h in health.items()},
            stopped_sources=frozenset(n for n in names if state.flow_stopped(n)),
            lags={name: fut.result() for name, fut in lags.items()},
            heartbeat_ages={name: fut.result() for name, fut in beats.items()},
            group_sync_ages=group_ages,
            dq=max(dq_rows, key=lambda r: r["ts_ms"]) if dq_rows else None,
            parity=sorted(
                (r for fut in parity for r in (fut.result() or {}).values()), key=lambda r: (r["from"], r["to"])
            ),
            dr_runs=newest_by_kind(r for fut in runs for r in (fut.result() or {}).values()),
            read_seconds=time.monotonic() - t0,
        )

    def _state(self, cluster: str):
        from kafka_dr.kafka.state_store import read_one

        return read_one(self.cfg, cluster, self.resolve)

    def _lag(self, flow):
        from kafka_dr.kafka.lag_reads import LagReader

        reader = self._lag_readers.get(flow.name)
        if reader is None:
            reader = self._lag_readers[flow.name] = LagReader(self.cfg, flow, self.resolve)
        return reader.read()

    def _heartbeat_age(self, flow) -> float | None:
        from kafka_dr.kafka.heartbeats import measure

        return measure(self.cfg, flow, self.resolve, ask_source=False).age_seconds

    def _metric_rows(self, cluster: str) -> list[dict]:
        tail = self._metrics.get(cluster)
        if tail is None:
            tail = self._metrics[cluster] = TopicTail(
                self.cfg, cluster, self.cfg.names.metrics_topic, False, self.resolve
            )
        return json_rows(tail.drain())

    def _synced(self, cluster: str) -> dict[tuple[str, str], int]:
        """When each (flow, group) was last synced onto ``cluster`` (the compacted topic read
        once from its start, then as it grows)."""
        tail = self._syncs.get(cluster)
        if tail is None:
            topic = self.cfg.names.offset_sync_topic
            tail = self._syncs[cluster] = TopicTail(self.cfg, cluster, topic, True, self.resolve)
        latest = self._sync_latest.setdefault(cluster, {})
        for r in tail.drain():
            if r.value is None:
                latest.pop(r.key, None)  # a tombstone: the group's position there is gone
            else:
                latest[r.key] = (r.value, r.timestamp_ms)
        return synced_at([(k, v, ts) for k, (v, ts) in latest.items()])

    def _dq(self, cluster: str) -> list[dict]:
        from kafka_dr.kafka.status_reads import read_json_tail

        return read_json_tail(self.cfg, cluster, self.cfg.names.dq_results_topic, 5, self.resolve)

    def _parity(self, cluster: str) -> dict:
        from kafka_dr.kafka.parity_store import recorded_reports

        return recorded_reports(self.cfg, cluster, self.resolve, timeout=5.0)

    def _runs(self, cluster: str) -> dict:
        from kafka_dr.kafka.dr_runs import read_newest

        return read_newest(self.cfg, cluster, self.resolve)

    def close(self) -> None:
        self._pool.shutdown(wait=False)
        for c in (*self._lag_readers.values(), *self._metrics.values(), *self._syncs.values()):
            try:
                c.close()
            except Exception:  # noqa: BLE001 - closing on the way out
                pass

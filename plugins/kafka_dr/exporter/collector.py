"""The Prometheus collector: a thread reads the clusters every ``interval`` seconds and keeps
the samples :mod:`kafka_dr.core.metric_samples` computes; a scrape serves the newest ones with
prometheus-client's metric families. A scrape never waits on a cluster (it answers at once
however slow a read is, and however many Prometheus servers scrape); what it serves is at most
``interval`` plus one read old (``kafka_dr_exporter_read_duration_seconds``)."""

from __future__ import annotations

import threading

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from kafka_dr.core import metric_catalog as m
from kafka_dr.core.config import DrConfig
from kafka_dr.core.metric_samples import Sample, samples
from kafka_dr.exporter.reads import ClusterReads


def _family(metric: m.Metric):
    name = f"{m.NAMESPACE}_{metric.name}"  # prometheus-client adds a counter's _total itself
    kind = {"gauge": GaugeMetricFamily, "counter": CounterMetricFamily, "histogram": HistogramMetricFamily}
    return kind[metric.kind](name, metric.help, labels=list(metric.labels))


class KafkaDrCollector(Collector):
    def __init__(self, cfg: DrConfig, reads: ClusterReads, interval: float = 5.0) -> None:
        self.cfg, self.reads, self.interval = cfg, reads, interval
        self.stopped = threading.Event()
        self._snapshot = self._read()  # the first read before the first scrape
        self._thread = threading.Thread(target=self._loop, name="kafka-dr-exporter-reads", daemon=True)
        self._thread.start()

    def _read(self) -> tuple[list[Sample], list[tuple[list[str], list, float]], list[tuple[str, int]]]:
        reading = self.reads.read()
        flows = {f.name: [f.name, f.source, f.target] for f in self.cfg.flows}
        latency = [(flows[flow], h.cumulative(), h.total) for flow, h in sorted(self.reads.counters.latency.items())]
        return samples(self.cfg, reading, self.reads.counters), latency, sorted(self.reads.errors.items())

    def _loop(self) -> None:
        while not self.stopped.wait(self.interval):
            self._snapshot = self._read()  # one reference swap: a scrape sees a whole snapshot

    def stop(self) -> None:
        self.stopped.set()
        self._thread.join(30)

    def collect(self):
        values, latency_rows, errors_seen = self._snapshot
        families: dict[str, object] = {}
        for s in values:
            fam = families.get(s.metric.name) or families.setdefault(s.metric.name, _family(s.metric))
            fam.add_metric(list(s.labels), s.value)
        latency = _family(m.LATENCY)
        for labels, buckets, total in latency_rows:
            latency.add_metric(labels, buckets=buckets, sum_value=total)
        errors = _family(m.READ_ERRORS)
        for what, n in errors_seen:
            errors.add_metric([what], n)
        yield from families.values()
        yield latency
        yield errors

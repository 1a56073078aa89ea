"""``kafka-dr exporter``: serve ``/metrics`` until stopped (SIGTERM or Ctrl-C)."""

from __future__ import annotations

import logging
import signal
import threading

from prometheus_client import CollectorRegistry, start_http_server

from kafka_dr.core.config import DrConfig
from kafka_dr.exporter.collector import KafkaDrCollector
from kafka_dr.exporter.reads import ClusterReads
from kafka_dr.kafka.clients import SecretResolver

log = logging.getLogger(__name__)

DEFAULT_PORT = 9464  #: the port OpenTelemetry's Prometheus exporters use by default


def serve(
    cfg: DrConfig,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    interval: float = 5.0,
    resolve: SecretResolver | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Serve the metrics on ``host:port`` until ``stop`` is set or SIGTERM/SIGINT arrives; the
    clusters are read every ``interval`` seconds (the first read before the port opens)."""
    stop = stop or threading.Event()
    reads = ClusterReads(cfg, resolve)
    registry = CollectorRegistry(auto_describe=False)
    collector = KafkaDrCollector(cfg, reads, interval)
    registry.register(collector)
    server, thread = start_http_server(port, addr=host, registry=registry)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    log.info("kafka-dr exporter: serving http://%s:%d/metrics", host, port)
    print(f"kafka-dr exporter: serving http://{host}:{port}/metrics", flush=True)
    try:
        stop.wait()
    finally:
        server.shutdown()
        thread.join(5)
        collector.stop()
        reads.close()

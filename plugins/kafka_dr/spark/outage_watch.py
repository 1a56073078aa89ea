"""A continuous flow's job looks at its two clusters every few seconds while it runs, and
alerts once per outage that lasts ``thresholds.restart_alert_after_seconds`` (the decision is
:class:`kafka_dr.core.silence.SilenceEpisodes`'): the job rides the outage out, so without this
only a query that happened to fail during it would have told anyone."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.silence import SilenceEpisodes

log = logging.getLogger(__name__)

#: how often the clusters are looked at; a look waits up to PROBE_SECONDS per silent cluster
LOOK_EVERY_SECONDS = 5.0
PROBE_SECONDS = 5.0


def admins(cfg: DrConfig, flow: FlowConfig) -> dict:
    """An admin client per end of the flow (source first)."""
    from kafka_dr.core.secret_refs import env_resolver
    from kafka_dr.kafka import clients

    return {name: clients.admin(cfg.cluster(name), env_resolver()) for name in (flow.source, flow.target)}


def silent_cluster(
    cfg: DrConfig, flow: FlowConfig, timeout: float = PROBE_SECONDS, ends: dict | None = None
) -> str | None:
    """The first of the flow's source and target that gives no metadata within ``timeout``;
    ``ends``: the :func:`admins` to ask (made for this call without them)."""
    for name, admin in (ends or admins(cfg, flow)).items():
        try:
            admin.list_topics(timeout=timeout)
        except Exception:  # noqa: BLE001 - any failure to answer is silence
            return name
    return None


@contextlib.contextmanager
def watch_outages(cfg: DrConfig, flow: FlowConfig, look=None) -> Iterator[None]:
    """Look at the clusters in a daemon thread while the block runs; ``look`` replaces
    :func:`silent_cluster` (tests)."""
    if cfg.alerts.webhook is None and cfg.alerts.email is None:
        yield
        return
    ends = admins(cfg, flow) if look is None else None  # kept for the job's life: they reconnect

    def silent() -> str | None:
        return look() if look is not None else silent_cluster(cfg, flow, ends=ends)

    episodes = SilenceEpisodes(cfg.thresholds.restart_alert_after_seconds)
    done = threading.Event()

    def loop() -> None:
        while not done.wait(LOOK_EVERY_SECONDS):
            due = episodes.observe(silent(), time.monotonic())
            if due is not None:
                alert_silent(cfg, flow.name, *due)

    thread = threading.Thread(target=loop, name=f"outage-watch-{flow.name}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()


def alert_silent(cfg: DrConfig, flow: str, cluster: str, seconds: float) -> None:
    """Tell the alert channels that ``cluster`` has not answered for ``seconds``. Never raises."""
    subject = (
        f"[kafka-dr] flow {flow}: cluster {cluster} has not answered for {seconds:.0f}s; "
        f"the job copies on once it answers"
    )
    payload = {"source": "kafka-dr", "flow": flow, "event": "cluster_silent", "cluster": cluster, "seconds": seconds}
    log.error("%s", subject)
    from kafka_dr.alerts import send_all

    send_all(cfg.alerts, subject, f"{subject}\n", payload)

"""Read the source clusters' topic names and judge the flows' selections on them
(:mod:`kafka_dr.core.selection`): for the heartbeat DAG, the status page and the replication job.

A source that does not answer is not judged here: reading is one metadata request, and
whoever reads reports the cluster as unreachable in its own way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from confluent_kafka.admin import AdminClient

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.selection import EmptySelection, empty_selection, empty_selections
from kafka_dr.kafka.clients import SecretResolver, client_config
from kafka_dr.kafka.topic_admin import topic_partitions

log = logging.getLogger(__name__)


def topic_names(cfg: DrConfig, cluster: str, resolve: SecretResolver | None = None, timeout: float = 10.0) -> list[str]:
    """Every topic of ``cluster`` (one metadata request)."""
    return sorted(topic_partitions(AdminClient(client_config(cfg.cluster(cluster), resolve)), timeout))


def read_selections(
    cfg: DrConfig, resolve: SecretResolver | None = None, timeout: float = 5.0, clusters: Iterable[str] | None = None
) -> tuple[list[EmptySelection], dict[str, str]]:
    """(enabled flows that select no data topic on their source, {cluster: why its topics could
    not be read}). ``clusters``: the sources to read (default: every enabled flow's)."""
    names = sorted(set(clusters) if clusters is not None else {f.source for f in cfg.flows if f.enabled})
    topics, errors = {}, {}
    for name in names:
        try:
            topics[name] = topic_names(cfg, name, resolve, timeout)
        except Exception as e:  # noqa: BLE001 - an unreachable source is reported by the caller's own checks
            errors[name] = f"{type(e).__name__}: {e}"
    return empty_selections(cfg, topics), errors


class SelectionWatch:
    """The replication job's check that its flow selects data topics.

    Warns at the run's first check, again when the selection becomes empty, and every
    ``repeat_seconds`` while it stays so (a continuous run; not at every micro-batch: the source
    is read at most every ``flow.topic_refresh_seconds``). A source that does not answer is
    left to the query, which fails naming it."""

    def __init__(
        self,
        cfg: DrConfig,
        flow: FlowConfig,
        resolve: SecretResolver | None = None,
        clock: Callable[[], float] = time.monotonic,
        repeat_seconds: float = 3600.0,
    ) -> None:
        self.cfg, self.flow, self.resolve, self.clock, self.repeat_seconds = cfg, flow, resolve, clock, repeat_seconds
        self._checked_at: float | None = None
        self._warned_at: float | None = None  #: when the current empty stretch was last warned of

    def check(self) -> EmptySelection | None:
        """Read the source when due; the :class:`EmptySelection` when it was warned of now."""
        now = self.clock()
        if self._checked_at is not None and now - self._checked_at < self.flow.topic_refresh_seconds:
            return None
        self._checked_at = now
        try:
            names = topic_names(self.cfg, self.flow.source, self.resolve)
        except Exception as e:  # noqa: BLE001 - see the class doc
            log.debug("flow %s: listing the topics of %s failed: %s", self.flow.name, self.flow.source, e)
            return None
        empty = empty_selection(self.cfg, self.flow, names)
        if empty is None:
            if self._warned_at is not None:
                log.info("flow %s: selects topics on %s again", self.flow.name, self.flow.source)
            self._warned_at = None
            return None
        if self._warned_at is not None and now - self._warned_at < self.repeat_seconds:
            return None
        self._warned_at = now
        log.warning("%s", empty)
        return empty

"""When a replication job tells the operator that a cluster of its flow has gone silent (pure).

A job rides out a cluster outage (a network cut, a cluster down) and copies on once it answers
again; its query may never fail meanwhile, so no restart is alerted. The operator still hears
of the outage once it has lasted the alert threshold: one alert per episode of silence, none
for a silence shorter than that (a broker's restart, a leader election: the cluster answers).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SilenceEpisodes:
    """Feed :meth:`observe` the cluster found silent at each look (``None``: both answered)."""

    alert_after_seconds: float
    _cluster: str | None = None
    _since: float = 0.0
    _alerted: bool = False

    def observe(self, silent: str | None, now: float) -> tuple[str, float] | None:
        """``(cluster, seconds silent)`` when an alert is due, once per episode; else ``None``.
        An answer ends the episode; another cluster going silent starts a new one."""
        if silent is None:
            self._cluster, self._alerted = None, False
            return None
        if silent != self._cluster:
            self._cluster, self._since, self._alerted = silent, now, False
        lasted = now - self._since
        if self._alerted or lasted < self.alert_after_seconds:
            return None
        self._alerted = True
        return silent, lasted

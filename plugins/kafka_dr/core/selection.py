"""Which data topics a flow selects on its source, and flows that select none.

A flow whose ``topics.allow`` matches no topic of its source copies nothing and still looks
healthy: its job succeeds and its heartbeats arrive, because the heartbeat topic is always
replicated. So the heartbeat topic and the product's own topics (``<internal_prefix>...``)
never count as selected data topics; other internal topics (``__consumer_offsets``,
``_schemas``...) count only when ``allow`` names them literally, as the selection itself does
(:meth:`~kafka_dr.core.config.TopicSelection.selects`). The pre-flight, the replication job,
the heartbeat DAG and the status page all judge with :func:`empty_selections`: a warning, not
an error (a flow may be set up before its topics exist).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.loop import router_for

#: what the status page's flow row says
SELECTS_NO_TOPICS = "selects no topics"


@dataclass(frozen=True)
class EmptySelection:
    """A flow whose selection matches no data topic on its source."""

    flow: str
    source: str
    allow: tuple[str, ...]
    deny: tuple[str, ...]

    def __str__(self) -> str:
        deny = f", deny {list(self.deny)}" if self.deny else ""
        return (
            f"flow {self.flow} {SELECTS_NO_TOPICS} on {self.source} (allow {list(self.allow)}{deny}): it copies only "
            f"heartbeats; check topics.allow, or create the topics"
        )

    def to_dict(self) -> dict:
        return {
            "flow": self.flow,
            "source": self.source,
            "allow": list(self.allow),
            "deny": list(self.deny),
            "message": str(self),
        }


def selected_data_topics(cfg: DrConfig, flow: FlowConfig, topics: Iterable[str]) -> list[str]:
    """The topics among ``topics`` (names on the flow's source) that the flow copies as data."""
    router = router_for(cfg, flow)
    return sorted(
        t
        for t in topics
        if t != cfg.names.heartbeat_topic and not cfg.names.is_internal(t) and router.target_topic(t) is not None
    )


def empty_selection(cfg: DrConfig, flow: FlowConfig, topics: Iterable[str]) -> EmptySelection | None:
    """``flow`` judged against its source's topic names: an :class:`EmptySelection`, or None."""
    if selected_data_topics(cfg, flow, topics):
        return None
    return EmptySelection(flow.name, flow.source, tuple(flow.topics.allow), tuple(flow.topics.deny))


def empty_selections(cfg: DrConfig, topics: Mapping[str, Iterable[str]]) -> list[EmptySelection]:
    """Every enabled flow that selects no data topic. ``topics``: cluster -> its topic names; a
    flow whose source is missing there (not read) is not judged."""
    found = (empty_selection(cfg, f, topics[f.source]) for f in cfg.flows if f.enabled and f.source in topics)
    return [e for e in found if e is not None]

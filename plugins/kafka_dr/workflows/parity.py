"""The parity report: before failing over from ``source`` to ``target``, is ``target`` ready for
the applications? (:mod:`kafka_dr.core.parity` says what each difference means.)

For every enabled flow ``source -> target`` it plans the topic-config, ACL and quota syncs
without applying them (what they would still change is what differs), compares SCRAM users,
checks that each consumer group committing on the source has a recent synced position on the
target, and, when ``source`` is the schema-registry primary, compares registry state. A check
that cannot run (no permission, no Java for the quota helper) becomes a note naming why.

The scheduled ``dr_parity`` and ``kafka-dr parity`` record each report on ``target``
(``<internal_prefix>.parity``, key ``source->target``).
When ``source`` does not answer (the usual case at failover) nothing can be compared: the last
recorded report is returned with its age, or the verdict ``unknown`` when there is none. When
``target`` does not answer, there is nothing to fail over to and nothing to judge: the verdict
is ``unknown`` (an outage is the heartbeats' alarm, not a readiness finding).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

from kafka_dr.core import offsets as core_offsets
from kafka_dr.core import parity as core
from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.topic_sync import plan_flow
from kafka_dr.kafka import acl_sync, clients, quota_sync
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.group_offsets import read_group_offsets
from kafka_dr.kafka.parity_store import record as record_report
from kafka_dr.kafka.parity_store import recorded_reports
from kafka_dr.kafka.reading import read_partitions
from kafka_dr.kafka.scram_users import describe_scram_users
from kafka_dr.kafka.state_store import reachable
from kafka_dr.kafka.topic_sync import gather
from kafka_dr.kafka.topics import partition_count
from kafka_dr.workflows.offset_sync import list_source_groups

log = logging.getLogger(__name__)

#: a check that takes this long or longer is named in the log with its time
SLOW_CHECK_SECONDS = 5.0

UNKNOWN = "unknown"


def parity_report(
    cfg: DrConfig,
    source: str,
    target: str,
    resolve: SecretResolver | None = None,
    record: bool = True,
    source_answers: bool | None = None,
) -> dict:
    """The report of failing over from ``source`` to ``target``, recorded on ``target`` when
    ``record`` (the scheduled ``dr_parity`` and ``kafka-dr parity`` do; a failover does not: its
    config may be narrowed to one run's groups and topics). ``source_answers``: whether the
    source is up, when the caller already knows (``None``: probe it)."""
    now_ms = int(time.time() * 1000)
    if not reachable(cfg, target, resolve):
        return _unknown(source, target, now_ms, f"{target} does not answer: its readiness cannot be judged")
    if source_answers is False or (source_answers is None and not reachable(cfg, source, resolve)):
        return _recorded(cfg, source, target, now_ms, resolve)
    flows = [f for f in cfg.flows if f.enabled and f.source == source and f.target == target]
    diffs: list[core.Difference] = []
    checked: list[str] = []

    def check(area: str, fn: Callable[[], list[core.Difference]], of: str = "") -> None:
        began = time.monotonic()
        try:
            diffs.extend(fn())
            if area not in checked:
                checked.append(area)
        except Exception as e:  # noqa: BLE001 - one check that cannot run must not hide the others
            diffs.append(core.Difference(area, core.NOTE, f"not checked: {e}"))
        took = time.monotonic() - began
        if took >= SLOW_CHECK_SECONDS:  # a slow dr_parity run says where it waited
            log.info("parity %s -> %s: %s%s took %.1fs", source, target, area, of, took)

    for flow in flows:
        of = f" of flow {flow.name}"
        check("topics", lambda flow=flow: _topics(cfg, flow, resolve), of)
        check("acls", lambda flow=flow: _acls(cfg, flow, resolve), of)
        check("quotas", lambda flow=flow: _quotas(cfg, flow, resolve), of)
        check("consumer groups", lambda flow=flow: _groups(cfg, flow, now_ms, resolve), of)
    check("scram users", lambda: _scram(cfg, source, target, flows, resolve))
    sm = cfg.schema_mirror
    if sm is not None and sm.primary == source and target in sm.targets:
        check("schema registry", lambda: _registry(cfg, target, resolve))
    report = core.build(source, target, diffs, checked, now_ms)
    if not record:
        return report
    try:
        record_report(cfg, report, resolve)
    except Exception as e:  # noqa: BLE001 - the report stands; only its copy for later is missing
        log.warning("parity %s -> %s: not recorded on %s: %s", source, target, target, e)
    return report


def _topics(cfg: DrConfig, flow: FlowConfig, resolve) -> list[core.Difference]:
    src, dst = clients.admin(cfg.cluster(flow.source), resolve), clients.admin(cfg.cluster(flow.target), resolve)
    sources, targets = gather(cfg, flow, src, dst)
    return core.topic_differences(plan_flow(cfg, flow, sources, targets), cfg.internal_prefix)


def _acls(cfg: DrConfig, flow: FlowConfig, resolve) -> list[core.Difference]:
    return core.acl_differences(acl_sync.plan_flow(cfg, flow, resolve)[0], flow.target)


def _quotas(cfg: DrConfig, flow: FlowConfig, resolve) -> list[core.Difference]:
    plan, target, _ = quota_sync.plan_flow(cfg, flow, resolve)
    return core.quota_differences(plan, target, flow.target)


def _groups(cfg: DrConfig, flow: FlowConfig, now_ms: int, resolve) -> list[core.Difference]:
    allow, deny = core_offsets.configured_groups(
        cfg.consumer_groups.allow, cfg.consumer_groups.deny, cfg.internal_prefix
    )
    live = {
        g: read_group_offsets(cfg, flow, g, resolve, skip_synced=True)
        for g in list_source_groups(cfg, flow, resolve)
        if core_offsets.group_selected(g, allow, deny)
    }
    # offsets the opposite flow's offset sync wrote there belong to the other cluster's group
    committing = [g for g, offsets in live.items() if offsets]
    records = _sync_records(cfg, flow, resolve)
    ages = {g: (now_ms - ms) / 1000 for g, ms in _synced_at(records, flow).items()}
    pairs = [(r.key, r.value) for r in records]
    for g in committing:
        # a group that has not moved since its last sync is current however old that sync is
        # (the continuous sync records a position when it moves)
        if g in ages and core_offsets.latest_synced(pairs, flow.name, g) == live[g]:
            ages[g] = 0.0
    return core.group_differences(committing, ages, cfg.thresholds.group_sync_max_age_seconds, flow.target)


def _sync_records(cfg: DrConfig, flow: FlowConfig, resolve) -> list:
    """Every record of the offset-sync topic on the flow's target."""
    topic = cfg.names.offset_sync_topic
    tgt = cfg.cluster(flow.target)
    n = partition_count(clients.admin(tgt, resolve), topic)
    if n is None:
        return []
    c = clients.consumer(tgt, cfg.names.reader_group("parity-reader"), resolve)
    try:
        return read_partitions(c, topic, list(range(n)), timeout=60)
    finally:
        c.close()


def _synced_at(records: list, flow: FlowConfig) -> dict[str, int]:
    """When the offset sync last recorded each group of ``flow`` on its target (ms)."""
    out: dict[str, int] = {}
    for r in records:
        try:
            k = json.loads(r.key or b"")
        except ValueError:
            continue
        if isinstance(k, list) and len(k) == 4 and k[0] == flow.name and r.value is not None:
            out[str(k[1])] = max(out.get(str(k[1]), 0), r.timestamp_ms)
    return out


def _scram(cfg: DrConfig, source: str, target: str, flows: list[FlowConfig], resolve) -> list[core.Difference]:
    src = describe_scram_users(clients.admin(cfg.cluster(source), resolve), source)
    dst = describe_scram_users(clients.admin(cfg.cluster(target), resolve), target)

    def on_target(user: str) -> str:
        principal = cfg.acl_sync.principal_on(f"User:{user}", source, target)
        return principal.removeprefix("User:")

    return core.scram_differences({on_target(u): m for u, m in src.items()}, dst, source, target)


def _registry(cfg: DrConfig, target: str, resolve) -> list[core.Difference]:
    from kafka_dr.kafka.schema_mirror import verify

    res = verify(cfg, target, resolve)
    if res.not_set_up:
        return [core.Difference("schema registry", core.NOTE, res.not_set_up)]
    return [core.Difference("schema registry", core.NOT_READY, d) for d in res.differences]


def _recorded(cfg: DrConfig, source: str, target: str, now_ms: int, resolve) -> dict:
    last = recorded_reports(cfg, target, resolve).get(source)
    if last is None:
        return _unknown(source, target, now_ms, f"{source} does not answer and no report was recorded")
    return {**last, "recorded_age_s": (now_ms - int(last["at_ms"])) / 1000}


def _unknown(source: str, target: str, now_ms: int, why: str) -> dict:
    return {
        "from": source,
        "to": target,
        "verdict": UNKNOWN,
        "checked": [],
        "differences": [core.Difference("clusters", core.NOTE, why).to_dict()],
        "at_ms": now_ms,
    }

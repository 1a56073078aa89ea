"""One flow's group-offset sync: translate a group's source positions, commit them on the target
under the sync rules and record each translation (:class:`GroupSync`, shared by the periodic
``dr_offset_sync`` and the continuous sync); and the continuous sync a continuous flow's job
runs beside its copy (:class:`ContinuousGroupSync`).

Every selected group's translation is committed on the target under the same group id only
while the group has no active member there, never backwards
(:mod:`kafka_dr.kafka.consumer_groups`). Each translation, and what the flow has not copied yet
per source partition (:mod:`kafka_dr.kafka.source_tails`), is recorded in
``<internal_prefix>.offset-sync`` on the target: what a failover reads once the source is gone.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from kafka_dr.core import offsets as core
from kafka_dr.core.config import DrConfig, FlowConfig
from kafka_dr.core.group_commits import positions_to_sync
from kafka_dr.core.loop import router_for
from kafka_dr.core.offsets import EXACT
from kafka_dr.kafka import clients
from kafka_dr.kafka.clients import SecretResolver
from kafka_dr.kafka.commit_log import CommitLog
from kafka_dr.kafka.consumer_groups import commit_translations, group_state
from kafka_dr.kafka.group_position import GroupPlacer
from kafka_dr.kafka.offset_translation import MOVE_PROBE_THREADS, Translator
from kafka_dr.kafka.source_tails import record_source_tails
from kafka_dr.kafka.topics import ensure_topic

log = logging.getLogger(__name__)

#: groups committed at once in a round (each commit waits on its own round trips)
COMMIT_THREADS = 8


class GroupSync:
    """One flow's sync, its clients kept across groups (and, for the continuous sync, across
    rounds): ``group(name, offsets)`` translates one group's source offsets, commits them on the
    target under the sync rules and records each translation; ``close()`` when done."""

    def __init__(self, cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None):
        self.cfg, self.flow, self.resolve = cfg, flow, resolve
        self.target = cfg.cluster(flow.target)
        self.t_admin = clients.admin(self.target, resolve)
        self.topic = cfg.names.offset_sync_topic
        ensure_topic(self.t_admin, self.topic, 1, {"cleanup.policy": "compact"})
        self.producer = clients.producer(self.target, resolve)
        self._groups = core.configured_groups(cfg.consumer_groups.allow, cfg.consumer_groups.deny, cfg.internal_prefix)
        # a group's partitions searched at once, as a failover's move does (a few readers more)
        self.tr = Translator(cfg, flow, resolve, source_available=True, probe_threads=MOVE_PROBE_THREADS)
        self.placer = GroupPlacer(cfg, flow, self.tr, resolve)
        #: seconds the last :meth:`groups` spent translating, placing and committing
        self.spent: dict[str, float] = {}

    def selects(self, group: str) -> bool:
        """Whether the config's ``consumer_groups`` select ``group``."""
        return core.group_selected(group, *self._groups)

    def selected(self, groups: Iterable[str]) -> list[str]:
        """``groups`` narrowed to those the config's ``consumer_groups`` select."""
        return [g for g in groups if self.selects(g)]

    def group(self, group: str, offsets: dict[tuple[str, int], int]) -> list[dict]:
        """Translate and commit ``group``'s ``offsets`` ({(source topic, partition): offset});
        one report row per partition."""
        return self._commit(group, self.placer.place(self.tr.translate(group, offsets)))

    def groups(self, due: dict[str, dict[tuple[str, int], int]]) -> dict[str, list[dict]]:
        """:meth:`group` for each group of ``due``. Groups at the same positions share one
        translation (it depends on the positions and the clusters, not on the group): a
        thousand groups caught up with the same topic cost one translation, not a thousand."""
        key_of = {g: frozenset(due[g].items()) for g in sorted(due)}
        shared: dict[frozenset, list] = {}
        clock, spent = time.monotonic, dict.fromkeys(("translated", "placed", "committed"), 0.0)
        for group, key in key_of.items():
            if key not in shared:
                t0 = clock()
                translated = self.tr.translate(group, due[group])
                t1 = clock()
                shared[key] = self.placer.place(translated)
                spent["translated"] += t1 - t0
                spent["placed"] += clock() - t1
        self.spent = spent
        t0 = clock()
        # the commits wait on round trips (each group's own consumer, its state, its records):
        # several at once; the translations above share readers, so they stay on this thread
        with ThreadPoolExecutor(COMMIT_THREADS, thread_name_prefix=f"group-commit-{self.flow.name}") as pool:
            done = {
                g: pool.submit(self._commit, g, [replace(t, group=g) for t in shared[k]]) for g, k in key_of.items()
            }
            out = {g: f.result() for g, f in done.items()}
        spent["committed"] = clock() - t0
        return out

    def _commit(self, group: str, translations: list) -> list[dict]:
        """Commit ``group``'s ``translations`` under the sync rules and record each one."""
        flow = self.flow
        state = group_state(self.t_admin, group, flow.target)
        rows = commit_translations(
            self.target,
            group,
            translations,
            state,
            self.resolve,
            metadata=lambda t: core.sync_commit_metadata(flow.name, t.source_offset),
        )
        now = int(time.time() * 1000)
        report = []
        for t, ok, why in rows:
            key = core.sync_key(flow.name, group, t.topic, t.partition)
            self.producer.produce(self.topic, key=key, value=core.sync_value(t, ok, now))
            report.append(
                {"flow": flow.name, **t.to_dict(), "committed": ok, "action": why, "target_group_state": state}
            )
        log.info(
            "flow %s: group %s (%s on %s): %d partition(s), %d committed",
            flow.name,
            group,
            state,
            flow.target,
            len(rows),
            sum(1 for _, ok, _ in rows if ok),
        )
        return report

    def record_tails(self) -> None:
        """What the failover's RPO report knows of the source once it is gone."""
        produce = lambda k, v: self.producer.produce(self.topic, key=k, value=v)  # noqa: E731
        record_source_tails(self.cfg, self.flow, self.tr, produce, self.resolve)

    def flush(self, timeout: float = 30.0) -> None:
        left = self.producer.flush(timeout)
        if left:
            where = f"{self.flow.target}/{self.topic}"
            raise TimeoutError(f"flow {self.flow.name}: {left} offset-sync record(s) not acknowledged by {where}")

    def close(self) -> None:
        self.placer.close()
        self.tr.close()


#: a round records the source's not-yet-copied counts (the failover's RPO report once the
#: source is gone) at most this often: counting reads the source's tails
TAILS_EVERY_SECONDS = 30.0


#: a position not translated exactly is tried again every round; after this many rounds with
#: the same outcome (a topic copied without provenance, a reverse flow that is not running),
#: only every ``SLOW_RETRY_SECONDS``
SAME_OUTCOME_ROUNDS = 12
SLOW_RETRY_SECONDS = 30.0


def settled(row: dict) -> bool:
    """Whether a synced position needs no second look: translated exactly, the copy past it (a
    position past the copy goes to the target's end, and again once its records are copied)."""
    return row["status"] == EXACT and not row["behind_records"]


@dataclass
class RoundReport:
    groups: int = 0
    partitions: int = 0
    committed: int = 0
    unsettled: int = 0
    seconds: float = 0.0
    #: of ``seconds``: reading the source's commits, then translating, placing and committing
    phases: dict[str, float] = field(default_factory=dict)


class ContinuousGroupSync:
    """The group-offset sync of one continuous flow, run every few seconds beside its copy.

    Each :meth:`round` reads the groups' commits on the source since the last round (tailing
    ``__consumer_offsets``: a group that commits nothing costs nothing) and syncs the positions
    that moved. A position not translated exactly (the copy had not reached it yet) is tried
    again every round, so an idle group's position still lands once its records are copied.
    The clients live across rounds; after a failure :meth:`reset` drops the sync's, the next
    round builds them again, and positions seen but not synced yet are kept (the tail of
    ``__consumer_offsets`` goes on where it was: its consumer reconnects by itself)."""

    def __init__(
        self, cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None, clock=time.monotonic
    ) -> None:
        self.cfg, self.flow, self.resolve, self.clock = cfg, flow, resolve, clock
        router = router_for(cfg, flow)
        self._topic_synced = lambda t: t != cfg.names.heartbeat_topic and router.target_topic(t) is not None
        self._sync: GroupSync | None = None
        self._commits: CommitLog | None = None
        self._reader = None
        self._unsettled: dict[str, dict[tuple[str, int], int]] = {}
        #: per (group, topic, partition) not settled: (last outcome, rounds it repeated, next try)
        self._retries: dict[tuple[str, str, int], tuple[tuple, int, float]] = {}
        self._tails_at = float("-inf")

    def _open_commits(self) -> None:
        self._reader = clients.consumer(
            self.cfg.cluster(self.flow.source),
            self.cfg.names.reader_group("group-commits-reader"),
            self.resolve,
            **{"enable.partition.eof": True},
        )
        self._commits = CommitLog(self._reader, self.flow.source)

    def round(self) -> RoundReport:
        started = self.clock()
        if self._commits is None:
            self._open_commits()
        if self._sync is None:
            self._sync = GroupSync(self.cfg, self.flow, self.resolve)
        sync = self._sync
        commits = self._commits.read()
        read_s = self.clock() - started
        moved = positions_to_sync(commits.values(), self._topic_synced, sync.selects)
        for group, offsets in moved.items():
            self._unsettled.setdefault(group, {}).update(offsets)
            for t, p in offsets:
                self._retries.pop((group, t, p), None)  # a new position: tried at once
        now = self.clock()
        due = {
            g: {k: x for k, x in o.items() if self._retries.get((g, *k), ((), 0, now))[2] <= now}
            for g, o in self._unsettled.items()
        }
        due = {g: o for g, o in due.items() if o}
        report = RoundReport(groups=len(due))
        for group, rows in sync.groups(due).items():
            report.partitions += len(rows)
            report.committed += sum(1 for r in rows if r["committed"])
            for r in rows:
                self._note(group, r, now)
        report.phases = {"read": read_s, **sync.spent}
        self._unsettled = {g: o for g, o in self._unsettled.items() if o}
        report.unsettled = sum(len(o) for o in self._unsettled.values())
        recording = self.clock()
        if recording - self._tails_at >= TAILS_EVERY_SECONDS:
            sync.record_tails()
            self._tails_at = self.clock()
        sync.flush()
        report.phases["recorded"] = self.clock() - recording
        report.seconds = self.clock() - started
        return report

    def _note(self, group: str, row: dict, now: float) -> None:
        """Drop a settled position; count how often an unsettled one came out the same."""
        k = (row["topic"], row["partition"])
        if settled(row):
            self._unsettled[group].pop(k, None)
            self._retries.pop((group, *k), None)
            return
        outcome = (row["status"], row["target_offset"], row["behind_records"])
        last, same, _ = self._retries.get((group, *k), ((), 0, now))
        same = same + 1 if outcome == last else 1
        wait = SLOW_RETRY_SECONDS if same >= SAME_OUTCOME_ROUNDS else 0.0
        self._retries[(group, *k)] = (outcome, same, now + wait)

    def reset(self) -> None:
        """Drop the sync's clients (after a failure); the next round builds them again."""
        if self._sync is not None:
            self._sync.close()
        self._sync = None

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()
        if self._reader is not None:
            self._reader.close()
        self._sync = self._commits = self._reader = None


#: the first round waits for the copy's query to start at most this long
BEGIN_WITHIN_SECONDS = 30.0


def run_rounds(
    sync: ContinuousGroupSync,
    interval: float,
    done: threading.Event,
    begin: Callable[[], bool] = lambda: True,
    begin_within: float = BEGIN_WITHIN_SECONDS,
) -> None:
    """A round every ``interval`` seconds (at once after a round that took longer) until ``done``,
    the first once ``begin()`` says so or after ``begin_within`` seconds: the first round reads
    every live commit and translates every position, which a starting copy must not wait for.
    A failed round is logged (the first of a run of failures, then every tenth) and retried."""
    started = time.monotonic()
    while not done.is_set() and not begin() and time.monotonic() - started < begin_within:
        done.wait(0.5)
    failures = 0
    while not done.is_set():
        started = time.monotonic()
        try:
            r = sync.round()
            if failures:
                log.info("flow %s: group-offset sync works again after %d failed round(s)", sync.flow.name, failures)
            failures = 0
            if r.partitions:
                log.info(
                    "flow %s: group-offset sync: %d group(s), %d partition(s), %d committed, %d not copied yet, "
                    "%.2fs (%s)",
                    sync.flow.name,
                    r.groups,
                    r.partitions,
                    r.committed,
                    r.unsettled,
                    r.seconds,
                    ", ".join(f"{phase} {s:.2f}s" for phase, s in r.phases.items()),
                )
        except Exception as e:  # noqa: BLE001 - a cluster away, a refusal: try again next round
            failures += 1
            if failures % 10 == 1:
                log.warning("flow %s: group-offset sync round failed (%d in a row): %s", sync.flow.name, failures, e)
            sync.reset()
        done.wait(max(0.0, interval - (time.monotonic() - started)))
    sync.close()


@contextlib.contextmanager
def syncing_meanwhile(
    cfg: DrConfig, flow: FlowConfig, resolve: SecretResolver | None = None, begin: Callable[[], bool] = lambda: True
) -> Iterator[None]:
    """Meanwhile, the flow's continuous group-offset sync runs in a thread of its own, a round
    every ``consumer_groups.sync_interval_seconds``, the first once ``begin()`` (see :func:`run_rounds`)."""
    done = threading.Event()
    sync = ContinuousGroupSync(cfg, flow, resolve)
    interval = cfg.consumer_groups.sync_interval_seconds
    thread = threading.Thread(
        target=run_rounds, args=(sync, interval, done, begin), name=f"kafka-dr-group-sync-{flow.name}", daemon=True
    )
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=30)

"""Router: which topics a flow copies and what each record becomes, per loop policy.

The copy_flags simulation replays replication end to end on plain lists: every flow of the
lab's N-cluster config copies new records from its source's log to its target's log through
its real transform closure, until nothing moves. Every record must then be on every cluster
exactly once, with provenance naming its first cluster and offset.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from kafka_dr.core.config import DrConfig, LoopPolicy
from kafka_dr.core.config_load import parse_config
from kafka_dr.core.loop import Router, router_for
from kafka_dr.core.provenance import COPY_FLAGS, Provenance, copy_flags, strip_product_headers
from kafka_dr.lab.topology import lab_clusters, lab_config

NOW = 1_700_000_000_000
#: a record's own headers: repeats, a None value, binary
OWN = [("trace", b"t1"), ("trace", b"t2"), ("nil", None), ("bin", b"\x00\xff\xfe"), ("trace", b"t1")]


def provenance_of(cluster: str, topic: str = "orders", partition: int = 3, offset: int = 42, ts: int = NOW) -> list:
    return [("dr.prov", f"1 {cluster} {topic} {partition} {offset} {ts}".encode())]


def legacy_of(cluster: str, topic: str = "orders", partition: int = 3, offset: int = 42, ts: int = NOW) -> list:
    """The five-header form earlier releases wrote."""
    return [
        ("dr.origin", cluster.encode()),
        ("dr.origin.topic", topic.encode()),
        ("dr.origin.part", str(partition).encode()),
        ("dr.origin.offset", str(offset).encode()),
        ("dr.origin.ts", str(ts).encode()),
    ]


def two_clusters(**flow) -> DrConfig:
    return parse_config(
        {
            "clusters": {
                "east": {"bootstrap_servers": "127.0.0.1:19092"},
                "west": {"bootstrap_servers": "127.0.0.1:19192"},
            },
            "flows": [{"source": "east", "target": "west", **flow}, {"source": "west", "target": "east", **flow}],
        }
    )


def router(cfg: DrConfig, source: str, target: str) -> Router:
    (flow,) = [f for f in cfg.flows if (f.source, f.target) == (source, target)]
    return router_for(cfg, flow)


NOT_TO_ORIGIN = two_clusters(loop_policy="provenance", provenance_rule="not_to_origin")
LOCAL_ONLY = two_clusters(loop_policy="provenance", provenance_rule="local_only")
PREFIX = two_clusters(loop_policy="prefix")

THREE = parse_config(
    {
        "clusters": {
            c: {"bootstrap_servers": f"127.0.0.1:{p}"} for c, p in (("east", 19092), ("west", 19192), ("north", 19292))
        },
        "distribution": {"tree": [["east", "west"], "north"]},
        "flows": [
            {"source": s, "target": t, "loop_policy": "copy_flags"}
            for s, t in (("east", "west"), ("west", "east"), ("east", "north"), ("west", "north"), ("north", "east"))
        ],
    }
)


def lab_cfg(count: int) -> DrConfig:
    return parse_config(lab_config(lab_clusters(count, 19092), {}))


# --- Router.target_topic ------------------------------------------------------------------


def test_target_topic_applies_the_flows_selection():
    cfg = two_clusters(topics={"allow": ["orders", r"payments\..*"], "deny": [r".*\.tmp"]})
    r = router(cfg, "east", "west")
    assert r.target_topic("orders") == "orders"
    assert r.target_topic("payments.eu") == "payments.eu"
    assert r.target_topic("payments.eu.tmp") is None
    assert r.target_topic("payments") is None
    assert r.target_topic("audit") is None


@pytest.mark.parametrize(
    "topic",
    [
        "__consumer_offsets",
        "__transaction_state",
        "_schemas",
        "mm2-offsets.west.internal",
        "heartbeats",
        "_kafka_dr.progress.east_to_west",
    ],
)
@pytest.mark.parametrize("cfg", [NOT_TO_ORIGIN, PREFIX], ids=["provenance", "prefix"])
def test_internal_topics_are_not_copied(cfg, topic):
    assert router(cfg, "east", "west").target_topic(topic) is None


@pytest.mark.parametrize("cfg", [NOT_TO_ORIGIN, LOCAL_ONLY, THREE], ids=["not_to_origin", "local_only", "copy_flags"])
def test_the_heartbeat_topic_is_always_copied_under_its_own_name(cfg):
    assert cfg.names.heartbeat_topic == "_kafka_dr.heartbeats"
    assert router(cfg, "east", "west").target_topic("_kafka_dr.heartbeats") == "_kafka_dr.heartbeats"


def test_the_heartbeat_topic_is_copied_whatever_the_selection():
    cfg = two_clusters(topics={"allow": ["orders"], "deny": [".*heartbeats"]})
    assert router(cfg, "east", "west").target_topic("_kafka_dr.heartbeats") == "_kafka_dr.heartbeats"
    assert router(cfg, "east", "west").target_topic("heartbeats") is None


def test_the_heartbeat_topic_follows_the_internal_prefix():
    data = {
        "clusters": {"east": {"bootstrap_servers": "h:1"}, "west": {"bootstrap_servers": "h:2"}},
        "flows": [{"source": "east", "target": "west", "topics": {"allow": ["orders"]}}],
        "internal_prefix": "drx",
    }
    r = router(parse_config(data), "east", "west")
    assert r.target_topic("drx.heartbeats") == "drx.heartbeats"
    assert r.target_topic("drx.progress.east_to_west") is None
    # the same flow copying everything still leaves the product's other topics alone
    data["flows"] = [{"source": "east", "target": "west"}]
    assert router(parse_config(data), "east", "west").target_topic("drx.progress.east_to_west") is None


def test_prefix_naming():
    east_west, west_east = router(PREFIX, "east", "west"), router(PREFIX, "west", "east")
    assert east_west.target_topic("orders") == "east.orders"
    assert east_west.target_topic("orders.v2") == "east.orders.v2"
    assert west_east.target_topic("orders") == "west.orders"
    # the copies never go back where they came from
    assert west_east.target_topic("east.orders") is None
    assert east_west.target_topic("west.orders") is None
    # heartbeats are prefixed like data, so each side's latency is measured on its own topic
    assert east_west.target_topic("_kafka_dr.heartbeats") == "east._kafka_dr.heartbeats"
    assert west_east.target_topic("east._kafka_dr.heartbeats") is None


def test_prefix_naming_with_a_custom_separator():
    cfg = two_clusters(loop_policy="prefix", prefix_separator="_")
    assert router(cfg, "east", "west").target_topic("orders") == "east_orders"
    assert router(cfg, "west", "east").target_topic("east_orders") is None
    assert router(cfg, "west", "east").target_topic("east.orders") == "west_east.orders"  # '.' is no separator here


def test_prefix_naming_with_cluster_names_containing_the_separator():
    data = {
        "clusters": {"us_east": {"bootstrap_servers": "h:1"}, "us_west": {"bootstrap_servers": "h:2"}},
        "flows": [
            {"source": "us_east", "target": "us_west", "loop_policy": "prefix", "prefix_separator": "_"},
            {"source": "us_west", "target": "us_east", "loop_policy": "prefix", "prefix_separator": "_"},
        ],
    }
    cfg = parse_config(data)
    assert router(cfg, "us_east", "us_west").target_topic("orders") == "us_east_orders"
    assert router(cfg, "us_west", "us_east").target_topic("us_east_orders") is None  # not us_west_us_east_orders


def test_identity_naming_for_provenance_and_copy_flags():
    assert router(NOT_TO_ORIGIN, "east", "west").target_topic("orders") == "orders"
    assert router(THREE, "north", "east").target_topic("east.orders") == "east.orders"


def test_router_for_copy_flags_without_a_tree():
    cfg = dataclasses.replace(THREE, distribution=None)
    with pytest.raises(ValueError, match="flow 'east_to_west': copy_flags needs a distribution tree"):
        router(cfg, "east", "west")


# --- provenance loop policy ---------------------------------------------------------------


@pytest.mark.parametrize("cfg", [NOT_TO_ORIGIN, LOCAL_ONLY], ids=["not_to_origin", "local_only"])
def test_a_local_record_gets_provenance_after_its_own_headers(cfg):
    out = router(cfg, "east", "west").transform()(list(OWN), "orders", 3, 42, NOW)
    assert out == OWN + provenance_of("east", "orders", 3, 42, NOW)
    assert out[: len(OWN)] == OWN  # order, repeats, None and binary kept exactly


@pytest.mark.parametrize("cfg", [NOT_TO_ORIGIN, LOCAL_ONLY, PREFIX], ids=["not_to_origin", "local_only", "prefix"])
@pytest.mark.parametrize("headers", [(), [], None])
def test_a_record_without_headers_gets_just_provenance(cfg, headers):
    out = router(cfg, "west", "east").transform()(headers, "payments", 0, 0, 7)
    assert out == provenance_of("west", "payments", 0, 0, 7)


def test_the_transform_does_not_change_its_input():
    headers = list(OWN)
    router(NOT_TO_ORIGIN, "east", "west").transform()(headers, "orders", 3, 42, NOW)
    assert headers == OWN


@pytest.mark.parametrize("cfg", [NOT_TO_ORIGIN, LOCAL_ONLY], ids=["not_to_origin", "local_only"])
def test_a_record_whose_origin_is_the_target_is_skipped(cfg):
    # west's record, copied to east, must not go back to west
    came_from_west = OWN + provenance_of("west", "orders", 1, 5)
    assert router(cfg, "east", "west").transform()(came_from_west, "orders", 1, 900, NOW) is None


def test_local_only_skips_any_origin():
    t = router(LOCAL_ONLY, "east", "west").transform()
    assert t(provenance_of("north"), "orders", 3, 42, NOW) is None
    assert t([("dr.origin", b"east")], "orders", 3, 42, NOW) is None
    assert t([("dr.origin", None)], "orders", 3, 42, NOW) is None


def test_not_to_origin_passes_a_third_clusters_record_unchanged():
    headers = [OWN[0], *provenance_of("north", "orders", 2, 17, 123), *OWN[1:]]
    out = router(NOT_TO_ORIGIN, "east", "west").transform()(headers, "orders", 3, 42, NOW)
    assert out == headers


def test_not_to_origin_reads_the_first_origin_header():
    t = router(NOT_TO_ORIGIN, "east", "west").transform()
    first_west = provenance_of("west") + [("dr.origin", b"north")]
    assert t(first_west, "orders", 3, 42, NOW) is None
    first_north = [("dr.origin", b"north"), *provenance_of("west")]
    assert t(first_north, "orders", 3, 42, NOW) == first_north


def test_not_to_origin_only_blocks_the_topic_the_record_started_in():
    # Replicator's rule: origin cluster AND origin topic must match for a skip
    t = router(NOT_TO_ORIGIN, "east", "west").transform()
    assert t(provenance_of("west", "orders"), "orders", 0, 1, NOW) is None
    assert t([("dr.origin", b"west")], "orders", 0, 1, NOW) is None  # no topic header: skipped
    moved = provenance_of("west", "orders-archive")
    assert t(moved, "orders", 0, 1, NOW) == moved


@pytest.mark.parametrize(
    "cfg", [NOT_TO_ORIGIN, LOCAL_ONLY, PREFIX, THREE], ids=["not_to_origin", "local_only", "prefix", "copy_flags"]
)
def test_a_record_copied_by_an_earlier_release_keeps_its_five_header_provenance(cfg):
    """The five-header form counts as provenance everywhere: never a second one, and the
    loop rules read it as they read ``dr.prov``."""
    source, target = ("east", "west") if cfg is not THREE else _a_flow(THREE)
    t = router(cfg, source, target).transform()
    third = OWN + legacy_of("north-2" if cfg is not THREE else "nowhere", "orders", 1, 5)
    out = t(third, "orders", 1, 900, NOW)
    if cfg is LOCAL_ONLY:
        assert out is None
    else:
        assert out is not None and strip_product_headers(out) == OWN and out[: len(third)] == third
        assert Provenance.from_headers(out) == Provenance.from_headers(third)
        assert "dr.prov" not in dict(out)
    if cfg in (NOT_TO_ORIGIN, LOCAL_ONLY):
        assert t(OWN + legacy_of(target, "orders", 1, 5), "orders", 1, 900, NOW) is None


def _a_flow(cfg: DrConfig) -> tuple[str, str]:
    f = cfg.flows[0]
    return f.source, f.target


def test_two_cluster_round_trip_stops_at_home():
    east_west = router(NOT_TO_ORIGIN, "east", "west").transform()
    west_east = router(NOT_TO_ORIGIN, "west", "east").transform()
    on_west = east_west(list(OWN), "orders", 3, 42, NOW)
    assert on_west == OWN + provenance_of("east")
    assert west_east(on_west, "orders", 3, 1000, NOW + 5) is None
    assert Provenance.from_headers(on_west) == Provenance("east", "orders", 3, 42, NOW)


# --- prefix loop policy -------------------------------------------------------------------


def test_prefix_adds_provenance_to_a_local_record():
    out = router(PREFIX, "east", "west").transform()(list(OWN), "orders", 3, 42, NOW)
    assert out == OWN + provenance_of("east", "orders", 3, 42, NOW)


def test_prefix_keeps_existing_provenance():
    # a second hop (west.orders on east, going on) keeps the first cluster's provenance
    headers = OWN + provenance_of("west", "orders", 1, 5, 99)
    out = router(PREFIX, "east", "west").transform()(headers, "west.orders", 1, 777, NOW)
    assert out == headers
    assert Counter(k for k, _ in out)["dr.prov"] == 1


def test_prefix_never_skips_a_record():
    # loops are stopped by topic names, not by record inspection
    t = router(PREFIX, "east", "west").transform()
    assert t(provenance_of("west"), "orders", 3, 42, NOW) == provenance_of("west")


# --- copy_flags loop policy: single decisions ---------------------------------------------


def test_copy_flags_routers_get_their_level():
    levels = {(f.source, f.target): router_for(THREE, f).level for f in THREE.flows}
    assert {k: (lv.height, lv.bit, lv.mask) for k, lv in levels.items()} == {
        ("east", "west"): (1, 0b01, 0b01),
        ("west", "east"): (1, 0b01, 0b01),
        ("east", "north"): (2, 0b10, 0b11),
        ("west", "north"): (2, 0b10, 0b11),
        ("north", "east"): (2, 0b10, 0b11),
    }
    assert {router_for(THREE, f).policy for f in THREE.flows} == {LoopPolicy.COPY_FLAGS}


def test_copy_flags_on_a_local_record():
    out = router(THREE, "east", "west").transform()(list(OWN), "orders", 3, 42, NOW)
    assert out == OWN + provenance_of("east") + [(COPY_FLAGS, b"1")]
    out = router(THREE, "east", "north").transform()(list(OWN), "orders", 3, 42, NOW)
    assert out == OWN + provenance_of("east") + [(COPY_FLAGS, b"2")]


def test_copy_flags_skips_when_the_level_or_a_lower_one_copied():
    to_north = router(THREE, "east", "north").transform()
    to_west = router(THREE, "east", "west").transform()
    assert to_north(provenance_of("west") + [(COPY_FLAGS, b"1")], "orders", 3, 42, NOW) is None
    assert to_north(provenance_of("north") + [(COPY_FLAGS, b"2")], "orders", 3, 42, NOW) is None
    assert to_west(provenance_of("west") + [(COPY_FLAGS, b"1")], "orders", 3, 42, NOW) is None
    assert to_west(provenance_of("north") + [(COPY_FLAGS, b"3")], "orders", 3, 42, NOW) is None


def test_copy_flags_passes_a_higher_level_copy_down_keeping_provenance():
    # north's record, copied to east by the root level, goes on to west at level 1
    headers = [OWN[0], *provenance_of("north", "orders", 0, 8, 55), (COPY_FLAGS, b"2"), *OWN[1:]]
    out = router(THREE, "east", "west").transform()(headers, "orders", 0, 400, NOW)
    assert out == [OWN[0], *provenance_of("north", "orders", 0, 8, 55), (COPY_FLAGS, b"3"), *OWN[1:]]


def test_copy_flags_decides_on_the_first_flags_header():
    # the same header the provenance module reads and with_copy_flags keeps
    headers = provenance_of("north") + [(COPY_FLAGS, b"2"), (COPY_FLAGS, b"1")]
    assert copy_flags(headers) == 2
    out = router(THREE, "east", "west").transform()(headers, "orders", 3, 42, NOW)
    assert out == provenance_of("north") + [(COPY_FLAGS, b"3")]


# --- copy_flags loop policy: the lab's trees, end to end ----------------------------------


@dataclasses.dataclass
class Stored:
    offset: int
    value: bytes
    headers: list
    came_from: str | None  # the cluster this copy was read from; None for a local record


def replicate(cfg: DrConfig, produced: list[tuple[str, bytes]], waves: int = 2) -> dict[str, list[Stored]]:
    """Produce ``produced`` in ``waves`` and replicate with every flow's real transform until
    nothing moves. Each cluster's log of 'orders'[0] starts at its own base offset."""
    names = list(cfg.clusters)
    base = {c: 1000 * (i + 1) for i, c in enumerate(names)}
    logs: dict[str, list[Stored]] = {c: [] for c in names}
    flows = [(f.source, f.target, router_for(cfg, f)) for f in cfg.flows]
    transforms = [(s, t, r.target_topic("orders"), r.transform()) for s, t, r in flows]
    assert {tt for _, _, tt, _ in transforms} == {"orders"}
    progress = {(s, t): 0 for s, t, _, _ in transforms}
    clock = iter(range(NOW, NOW + 1_000_000))

    def append(cluster: str, value: bytes, headers: list, came_from: str | None) -> None:
        logs[cluster].append(Stored(base[cluster] + len(logs[cluster]), value, headers, came_from))

    size = -(-len(produced) // waves)
    for w in range(waves):
        for cluster, value in produced[w * size : (w + 1) * size]:
            append(cluster, value, list(OWN), None)
        moved = True
        while moved:
            moved = False
            for s, t, _, transform in transforms:
                for rec in logs[s][progress[(s, t)] :]:
                    progress[(s, t)] += 1
                    moved = True
                    out = transform(rec.headers, "orders", 0, rec.offset, next(clock))
                    if out is not None:
                        append(t, rec.value, out, s)
    return logs


#: {origin: {cluster: copy flags there}} for the lab's four clusters, tree [[east, west], [north, south]]
FOUR_FLAGS = {
    "east": {"east": 0, "west": 1, "north": 2, "south": 3},
    "west": {"west": 0, "east": 1, "north": 2, "south": 3},
    "north": {"north": 0, "south": 1, "east": 2, "west": 3},
    "south": {"south": 0, "north": 1, "east": 2, "west": 3},
}


def produced_on(clusters, per_cluster: int = 3) -> list[tuple[str, bytes]]:
    return [(c, f"{c}-{i}".encode()) for i in range(per_cluster) for c in clusters]


def check_tree(cfg: DrConfig, logs: dict[str, list[Stored]], produced: list[tuple[str, bytes]]) -> dict:
    """Every record once everywhere, provenance intact; returns {origin: {cluster: flags}}."""
    by_value = {c: {r.value: r for r in log} for c, log in logs.items()}
    for cluster, log in logs.items():
        assert len(log) == len(produced), cluster
        assert Counter(r.value for r in log) == Counter(v for _, v in produced), cluster
    flags: dict[str, dict[str, int]] = {}
    for origin, value in produced:
        local = by_value[origin][value]
        assert local.came_from is None and local.headers == OWN
        for cluster in logs:
            copy = by_value[cluster][value]
            assert strip_product_headers(copy.headers) == OWN
            flags.setdefault(origin, {})[cluster] = copy_flags(copy.headers)
            if cluster == origin:
                continue
            p = Provenance.from_headers(copy.headers)
            assert (p.cluster, p.topic, p.partition, p.offset) == (origin, "orders", 0, local.offset)
            assert Counter(k for k, _ in copy.headers) == Counter(
                {
                    "trace": 3,
                    "nil": 1,
                    "bin": 1,
                    COPY_FLAGS: 1,
                    "dr.prov": 1,
                }
            )
            # a later hop carries exactly the provenance of the copy it was made from
            if copy.came_from != origin:
                parent = by_value[copy.came_from][value]
                assert Provenance.from_headers(parent.headers) == p
    for origin, _ in produced:
        assert len({v for v in flags[origin].values()}) == len(logs)  # a distinct path to each cluster
    return flags


def test_lab_four_cluster_tree_reaches_every_cluster_exactly_once():
    cfg = lab_cfg(4)
    assert list(cfg.clusters) == ["east", "west", "north", "south"]
    assert sorted((f.source, f.target) for f in cfg.flows) == [
        ("east", "north"),
        ("east", "west"),
        ("north", "east"),
        ("north", "south"),
        ("south", "east"),
        ("south", "north"),
        ("west", "east"),
        ("west", "north"),
    ]
    produced = produced_on(cfg.clusters)
    logs = replicate(cfg, produced)
    flags = check_tree(cfg, logs, produced)
    assert flags == FOUR_FLAGS
    # spot-check literal offsets: east's first record (offset 1000) as south sees it
    (copy,) = [r for r in logs["south"] if r.value == b"east-0"]
    assert copy.came_from == "north"
    assert copy.headers[len(OWN)][1].startswith(b"1 east orders 0 1000 ")
    assert copy.headers[-1] == (COPY_FLAGS, b"3")


def test_lab_four_cluster_tree_one_record_at_a_time():
    cfg = lab_cfg(4)
    for origin in cfg.clusters:
        logs = replicate(cfg, [(origin, b"only")], waves=1)
        assert {c: [copy_flags(r.headers) for r in log] for c, log in logs.items()} == {
            c: [f] for c, f in FOUR_FLAGS[origin].items()
        }


def test_three_cluster_tree():
    produced = produced_on(THREE.clusters)
    flags = check_tree(THREE, replicate(THREE, produced), produced)
    assert flags == {
        "east": {"east": 0, "west": 1, "north": 2},
        "west": {"west": 0, "east": 1, "north": 2},
        "north": {"north": 0, "east": 2, "west": 3},
    }


@pytest.mark.parametrize("count", [3, 5, 6])
def test_other_lab_trees(count):
    cfg = lab_cfg(count)
    produced = produced_on(cfg.clusters, 2)
    check_tree(cfg, replicate(cfg, produced, waves=2), produced)


def test_the_simulation_catches_a_duplicate_flow():
    # a second flow into the same subtree would deliver twice: the checks above must see it
    cfg = lab_cfg(4)
    extra = dataclasses.replace(
        next(f for f in cfg.flows if (f.source, f.target) == ("east", "north")), name="east_to_south", target="south"
    )
    logs = replicate(dataclasses.replace(cfg, flows=(*cfg.flows, extra)), [("east", b"x")], waves=1)
    assert [r.value for r in logs["south"]] == [b"x", b"x"]

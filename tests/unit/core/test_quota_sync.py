"""Client-quota sync's pure decisions: which quotas a flow copies, renamed how, and what it
sets and deletes given what it owns."""

from __future__ import annotations

from kafka_dr.core.config_load import parse_config_text
from kafka_dr.core.quota_sync import (
    decode_owned,
    describe_entity,
    encode_owned,
    entity,
    entity_mapper,
    format_report,
    plan_quotas,
    report,
)

CFG = parse_config_text(
    """
clusters:
  east: {bootstrap_servers: "a:1"}
  west: {bootstrap_servers: "b:1"}
flows:
  - {source: east, target: west}
  - {source: west, target: east}
acl_sync:
  principals:
    billing: {east: "User:billing-east", west: "User:billing-west"}
    robot: {east: "User:robot", west: "Group:robots"}
"""
)
EAST_TO_WEST = entity_mapper(CFG, CFG.flows[0])
P, C, R = "producer_byte_rate", "consumer_byte_rate", "request_percentage"


def test_entities_read_well():
    assert describe_entity(entity(user="alice", client_id=None)) == "client-id (default), user alice"


def test_users_are_renamed_client_ids_kept_and_other_entities_left_alone():
    assert EAST_TO_WEST(entity(user="billing-east")) == entity(user="billing-west")
    assert EAST_TO_WEST(entity(user="billing-east", client_id="app")) == entity(user="billing-west", client_id="app")
    assert EAST_TO_WEST(entity(user="someone")) == entity(user="someone")
    assert EAST_TO_WEST(entity(user=None)) == entity(user=None)  # the default user
    assert EAST_TO_WEST(entity(client_id="app")) == entity(client_id="app")
    assert EAST_TO_WEST(entity(ip="10.0.0.1")) is None
    assert EAST_TO_WEST(entity(user="robot")) is None  # mapped to a principal that is not a user


def test_the_plan_sets_what_differs_and_deletes_only_what_it_set():
    a, b, old, ops = (entity(user=u) for u in ("a", "b", "old", "ops"))
    source = {(a, P): 1000.0, (b, C): 5.0, (entity(ip="1.2.3.4"), "connection_creation_rate"): 3.0}
    target = {
        (b, C): 9.0,  # differs: set, and owned from now on
        (old, R): 50.0,  # set by the product earlier; gone from the source
        (ops, R): 10.0,  # the operator's own
        (entity(user=None), P): 1.0,  # a default on the target only
    }
    plan = plan_quotas(source, [], target, {(old, R)}, EAST_TO_WEST)
    assert plan.set_values == {(a, P): 1000.0, (b, C): 5.0}
    assert plan.delete == [(old, R)]
    assert set(plan.target_only) == {(ops, R), (entity(user=None), P)}
    assert plan.owned == {(a, P), (b, C)}
    assert plan.in_sync == 0


def test_an_equal_quota_already_there_is_in_sync_and_not_claimed():
    q = (entity(user="a"), P)
    plan = plan_quotas({q: 1.0}, [], {q: 1.0}, [], EAST_TO_WEST)
    assert plan.in_sync == 1 and plan.set_values == {} and plan.owned == set()
    assert plan_quotas({}, [], {q: 1.0}, plan.owned, EAST_TO_WEST).delete == []


def test_active_active_never_copies_the_products_own_quotas_back():
    q = (entity(user="a"), P)
    back = plan_quotas({q: 1.0}, {q}, {}, set(), entity_mapper(CFG, CFG.flows[1]))
    assert back.set_values == {} and back.target_only == []


def test_owned_record_round_trips_and_the_report_reads_well():
    owned = {(entity(user="a"), P), (entity(user=None, client_id="x"), C)}
    assert decode_owned(encode_owned("f", owned)) == ("f", owned)
    assert decode_owned(b"[]") is None
    a, x = entity(user="a"), entity(client_id="x")
    target = {(a, P): 5.0, (x, R): 20.0}
    plan = plan_quotas({(a, P): 7.0}, [], target, [], EAST_TO_WEST)
    text = format_report(report(CFG.flows[0], plan, target, dry_run=True))
    assert "1 to set, 0 to delete, 0 in sync" in text
    assert "user a: producer_byte_rate = 7 (was 5)" in text
    assert text.endswith("client-id x: request_percentage = 20")

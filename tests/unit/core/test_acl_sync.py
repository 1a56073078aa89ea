"""ACL sync's pure decisions: what a flow copies, under which name and principal, and what it
creates and deletes given what it owns."""

from __future__ import annotations

from kafka_dr.core.acl_sync import (
    Acl,
    decode_owned,
    encode_owned,
    format_report,
    plan_acls,
    report,
    scope_for,
    target_acl,
)
from kafka_dr.core.config_load import parse_config_text

BASE = """
clusters:
  east: {bootstrap_servers: "a:1"}
  west: {bootstrap_servers: "b:1"}
flows:
  - {source: east, target: west, loop_policy: %s, topics: {allow: ["orders.*"]}}
  - {source: west, target: east, loop_policy: %s, topics: {allow: ["orders.*"]}}
consumer_groups: {deny: ["private.*"]}
"""


def _scope(policy: str = "provenance", extra: str = "", flow: int = 0):
    cfg = parse_config_text(BASE % (policy, policy) + extra)
    return scope_for(cfg, cfg.flows[flow])


def acl(kind="TOPIC", name="orders", op="READ", who="User:app", perm="ALLOW", pattern="LITERAL") -> Acl:
    return Acl(kind, name, pattern, who, "*", op, perm)


def test_topic_group_transactional_and_client_cluster_bindings_are_copied_as_they_are():
    s = _scope()
    for a in (
        acl(op="WRITE"),
        acl(op="ALL"),
        acl("GROUP", "billing"),
        acl("TRANSACTIONAL_ID", "app-tx", "WRITE"),
        acl("CLUSTER", "kafka-cluster", "IDEMPOTENT_WRITE"),
        acl(name="orders", pattern="PREFIXED"),
    ):
        assert target_acl(a, s) == (a, None)


def test_what_a_flow_does_not_replicate_or_owns_itself_is_not_its_business():
    s = _scope()
    assert target_acl(acl(name="payments"), s) == (None, None)  # topic not selected
    assert target_acl(acl("GROUP", "private.team"), s) == (None, None)  # group denied
    assert target_acl(acl("GROUP", "_confluent"), s) == (None, None)
    assert target_acl(acl("TOPIC", "_kafka_dr.state"), s) == (None, None)
    assert target_acl(acl("TRANSACTIONAL_ID", "_kafka_dr.east_to_west.task", "WRITE"), s) == (None, None)


def test_wildcards_and_administrative_cluster_operations_are_reported_not_copied():
    s = _scope()
    assert "wildcard" in target_acl(acl(name="*"), s)[1]
    assert "wildcard" in target_acl(acl("GROUP", "*"), s)[1]
    assert "administrative" in target_acl(acl("CLUSTER", "kafka-cluster", "ALTER"), s)[1]


def test_prefix_flows_copy_topic_bindings_read_only_onto_the_remote_topic():
    s = _scope("prefix")
    assert target_acl(acl(), s)[0] == acl(name="east.orders")
    assert target_acl(acl(op="ALL"), s)[0] == acl(name="east.orders", op="READ")  # MirrorMaker 2's downgrade
    assert target_acl(acl(op="DESCRIBE_CONFIGS"), s)[0] == acl(name="east.orders", op="DESCRIBE_CONFIGS")
    mapped, why = target_acl(acl(op="WRITE"), s)
    assert mapped is None and "read-only" in why
    # a deny never grants: copied as it is, even WRITE
    assert target_acl(acl(op="WRITE", perm="DENY"), s)[0] == acl(name="east.orders", op="WRITE", perm="DENY")
    assert target_acl(acl(name="orders", pattern="PREFIXED"), s)[0] == acl(name="east.orders", pattern="PREFIXED")
    # producers still write their own topics on the target after failover
    assert target_acl(acl("TRANSACTIONAL_ID", "app-tx", "WRITE"), s)[0] is not None


def test_read_only_sync_copies_topic_reads_and_groups_only():
    s = _scope(extra="acl_sync: {read_only: true}\n")
    assert target_acl(acl(op="WRITE"), s)[0] is None
    assert target_acl(acl(op="ALL"), s)[0] == acl(op="READ")
    assert target_acl(acl("GROUP", "billing"), s)[0] == acl("GROUP", "billing")
    assert "read-only" in target_acl(acl("TRANSACTIONAL_ID", "app-tx", "WRITE"), s)[1]
    assert "read-only" in target_acl(acl("CLUSTER", "kafka-cluster", "IDEMPOTENT_WRITE"), s)[1]


def test_principals_are_renamed_per_cluster_both_ways():
    extra = 'acl_sync:\n  principals:\n    billing: {east: "User:billing-east", west: "User:billing-west"}\n'
    assert target_acl(acl(who="User:billing-east"), _scope(extra=extra))[0] == acl(who="User:billing-west")
    assert target_acl(acl(who="User:billing-west"), _scope(extra=extra, flow=1))[0] == acl(who="User:billing-east")
    assert target_acl(acl(who="User:other"), _scope(extra=extra))[0] == acl(who="User:other")


def test_transactional_ids_follow_their_own_selection():
    s = _scope(extra='acl_sync: {transactional_ids: {allow: ["app-.*"], deny: ["app-test.*"]}}\n')
    assert target_acl(acl("TRANSACTIONAL_ID", "app-tx", "WRITE"), s)[0] is not None
    assert target_acl(acl("TRANSACTIONAL_ID", "app-test-1", "WRITE"), s) == (None, None)
    assert target_acl(acl("TRANSACTIONAL_ID", "other", "WRITE"), s) == (None, None)


def test_the_plan_creates_what_is_missing_and_deletes_only_what_it_created():
    s = _scope()
    read, write, group = acl(), acl(op="WRITE"), acl("GROUP", "billing")
    operators = acl(who="User:ops", op="DESCRIBE")
    gone = acl(name="orders.old")  # created by the product earlier; the source dropped it
    plan = plan_acls([read, group], [], [group, operators, gone, write], {gone, write}, s)
    assert plan.create == [read]
    assert sorted(plan.delete) == sorted([gone, write])
    assert plan.in_sync == 1 and plan.target_only == [operators]
    assert plan.owned == {read}
    assert plan.intent == {read, gone, write}  # recorded before creating


def test_a_binding_already_on_the_target_is_not_claimed_and_so_never_deleted():
    s = _scope()
    plan = plan_acls([acl()], [], [acl()], [], s)
    assert plan.create == [] and plan.owned == set()
    later = plan_acls([], [], [acl()], plan.owned, s)
    assert later.delete == [] and later.target_only == [acl()]


def test_a_recorded_binding_deleted_by_hand_is_forgotten_then_recreated_from_the_source():
    s = _scope()
    plan = plan_acls([acl()], [], [], {acl()}, s)
    assert plan.create == [acl()] and plan.delete == [] and plan.owned == {acl()}


def test_active_active_never_copies_the_products_own_copies_back():
    # east -> west created READ on west; the operator removed it on east. west -> east must
    # not bring it back from west, and east -> west removes it from west.
    back = _scope(flow=1)
    plan = plan_acls([acl()], {acl()}, [], set(), back)
    assert plan.create == [] and plan.target_only == []
    forward = plan_acls([], [], [acl()], {acl()}, _scope())
    assert forward.delete == [acl()]


def test_the_record_of_owned_bindings_round_trips_and_ignores_what_it_cannot_read():
    owned = {acl(), acl("GROUP", "billing")}
    assert decode_owned(encode_owned("east_to_west", owned)) == ("east_to_west", owned)
    assert decode_owned(b"{}") is None and decode_owned(b"not json") is None and decode_owned(None) is None


def test_the_report_names_each_binding_readably():
    cfg = parse_config_text(BASE % ("provenance", "provenance"))
    plan = plan_acls([acl(), acl(name="*")], [], [], set(), _scope())
    text = format_report(report(cfg.flows[0], plan, dry_run=True))
    assert "1 to create, 0 to delete, 0 in sync" in text
    assert "ALLOW User:app READ on topic orders" in text
    assert "ALLOW User:app READ on topic *: wildcard" in text


def test_the_bindings_of_kafka_drs_own_principal_are_never_copied():
    cfg = parse_config_text(BASE % ("provenance", "provenance"))
    s = scope_for(cfg, cfg.flows[0], own_principals={"User:kafka-dr"})
    mapped, why = target_acl(acl(who="User:kafka-dr"), s)
    assert mapped is None and "kafka-dr's own principal" in why
    assert target_acl(acl(), s) == (acl(), None)

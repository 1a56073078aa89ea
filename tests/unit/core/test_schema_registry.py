"""The registry topic's records, the state they build, subject renaming and the state diff.

Records are literals in the format Confluent Schema Registry's KafkaStore writes.
"""

from __future__ import annotations

import json

import pytest

from kafka_dr.core.schema_registry import (
    RegistryState,
    SchemaRecordError,
    SchemaReference,
    diff_states,
    parse_key,
    parse_schema_value,
    rebuild_state,
    rename_record,
    rename_subject,
)

ORDERS_V1 = '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}'
ORDERS_V2 = (
    '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},'
    '{"name":"note","type":["null","string"],"default":null}]}'
)


def skey(subject: str, version: int) -> bytes:
    return b'{"keytype":"SCHEMA","subject":"%s","version":%d,"magic":1}' % (subject.encode(), version)


def sval(subject: str, version: int, id_: int, schema: str, deleted: bool = False, **extra) -> bytes:
    d = {"subject": subject, "version": version, "id": id_, "schema": schema, **extra, "deleted": deleted}
    return json.dumps(d, separators=(",", ":")).encode()


GLOBAL_CONFIG_KEY = b'{"keytype":"CONFIG","magic":0}'
NOOP_KEY = b'{"keytype":"NOOP","magic":0}'


def records(*kv):
    return [(i, k, v) for i, (k, v) in enumerate(kv)]


# --- names -------------------------------------------------------------------------------


def test_rename_subject():
    assert rename_subject("orders-value", "dr-{subject}") == "dr-orders-value"
    assert rename_subject("orders-value", "{subject}") == "orders-value"
    assert rename_subject("orders-value", "{subject}.{subject}") == "orders-value.orders-value"
    # a context-qualified subject keeps its context; a context's own entry has no name
    assert rename_subject(":.eu:orders-value", "dr-{subject}") == ":.eu:dr-orders-value"
    assert rename_subject(":.eu:", "dr-{subject}") == ":.eu:"


# --- parsing -----------------------------------------------------------------------------


def test_parse_keys():
    k = parse_key(skey("orders-value", 3))
    assert (k.keytype, k.subject, k.version, k.magic) == ("SCHEMA", "orders-value", 3, 1)
    k = parse_key(GLOBAL_CONFIG_KEY)
    assert (k.keytype, k.subject, k.version) == ("CONFIG", None, None)
    assert parse_key(b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}').subject == "s"


@pytest.mark.parametrize(
    "key, message",
    [
        (None, "key is null"),
        (b"not json", "key is not JSON"),
        (b'{"subject":"s"}', "key has no 'keytype'"),
        (b'{"keytype":"SCHEMA","subject":"s","magic":1}', "SCHEMA key needs a subject and an integer version"),
    ],
)
def test_bad_keys(key, message):
    with pytest.raises(SchemaRecordError, match=message):
        parse_key(key)


def test_parse_schema_value_with_type_and_references():
    v = parse_schema_value(
        b'{"subject":"pay-value","version":2,"id":9,"schema":"syntax = \\"proto3\\";","schemaType":"PROTOBUF",'
        b'"references":[{"name":"common.proto","subject":"common","version":1}],"metadata":{"properties":{"a":"b"}},"deleted":false}'
    )
    assert (v.subject, v.version, v.id, v.schema_type, v.deleted) == ("pay-value", 2, 9, "PROTOBUF", False)
    assert v.schema == 'syntax = "proto3";'
    assert v.references == (SchemaReference("common.proto", "common", 1),)
    assert v.other == '{"metadata":{"properties":{"a":"b"}}}'
    # no schemaType means Avro, as in the registry
    assert parse_schema_value(sval("s", 1, 1, '"string"')).schema_type == "AVRO"


def test_schema_value_missing_fields():
    with pytest.raises(SchemaRecordError, match="SCHEMA value lacks id, schema"):
        parse_schema_value(b'{"subject":"s","version":1}')


# --- state -------------------------------------------------------------------------------


def test_rebuild_later_records_win_and_tombstones_delete():
    st = rebuild_state(
        records(
            (GLOBAL_CONFIG_KEY, b'{"compatibilityLevel":"BACKWARD"}'),
            (NOOP_KEY, None),
            (skey("orders-value", 1), sval("orders-value", 1, 1, ORDERS_V1)),
            (skey("orders-value", 2), sval("orders-value", 2, 2, ORDERS_V2)),
            (skey("pay-value", 1), sval("pay-value", 1, 3, '"string"')),
            (skey("pay-value", 1), sval("pay-value", 1, 3, '"string"', deleted=True)),  # soft delete
            (skey("pay-value", 1), None),  # hard delete
            (b'{"keytype":"CONFIG","subject":"orders-value","magic":0}', b'{"compatibilityLevel":"FULL"}'),
            (b'{"keytype":"MODE","magic":0}', b'{"mode":"READWRITE"}'),
            (GLOBAL_CONFIG_KEY, b'{"compatibilityLevel":"NONE"}'),
        )
    )
    assert sorted(st.subjects) == ["orders-value"]  # pay-value: every version hard-deleted
    assert {v: s.id for v, s in st.subjects["orders-value"].items()} == {1: 1, 2: 2}
    assert st.subjects["orders-value"][2].schema == ORDERS_V2
    assert st.configs == {None: {"compatibilityLevel": "NONE"}, "orders-value": {"compatibilityLevel": "FULL"}}
    assert st.modes == {None: {"mode": "READWRITE"}}
    assert st.records == 10 and st.skipped == []


def test_soft_delete_keeps_the_version_marked():
    st = rebuild_state(
        records(
            (skey("s", 1), sval("s", 1, 5, '"int"')),
            (skey("s", 1), sval("s", 1, 5, '"int"', deleted=True)),
        )
    )
    assert st.subjects["s"][1].deleted is True
    assert st.live_versions("s") == []


def test_delete_subject_soft_deletes_up_to_its_version_and_clear_subject_drops_them():
    base = [
        (skey("s", 1), sval("s", 1, 1, '"int"')),
        (skey("s", 2), sval("s", 2, 2, '"long"')),
        (skey("s", 3), sval("s", 3, 3, '"string"')),
        (b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}', b'{"subject":"s","version":2}'),
    ]
    st = rebuild_state(records(*base))
    assert {v: s.deleted for v, s in st.subjects["s"].items()} == {1: True, 2: True, 3: False}
    st = rebuild_state(records(*base, (b'{"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}', b'{"subject":"s"}')))
    assert sorted(st.subjects["s"]) == [3]
    # compaction's tombstones for the markers change nothing
    st = rebuild_state(records(*base, (b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}', None)))
    assert st.subjects["s"][1].deleted is True


def test_unreadable_records_are_skipped_with_their_offset():
    st = rebuild_state(
        [
            (0, b"garbage", b"x"),
            (1, skey("s", 1), b"{broken"),
            (2, skey("s", 1), sval("other", 1, 1, '"int"')),
            (3, skey("s", 2), sval("s", 2, 7, '"int"')),
        ]
    )
    assert list(st.subjects) == ["s"] and list(st.subjects["s"]) == [2]
    assert st.skipped[0].startswith("offset 0: key is not JSON")
    assert st.skipped[1].startswith("offset 1: SCHEMA value is not JSON")
    assert st.skipped[2] == "offset 2: key names 's' version 1, value names 'other' version 1"


def test_unknown_key_types_are_kept_opaquely():
    ctx_key = b'{"keytype":"CONTEXT","tenant":"default","context":".eu","magic":0}'
    st = rebuild_state(records((ctx_key, b'{"tenant":"default","context":".eu"}')))
    assert st.other == {
        '{"context":".eu","keytype":"CONTEXT","magic":0,"tenant":"default"}': '{"context":".eu","tenant":"default"}'
    }
    assert rebuild_state(records((ctx_key, b"{}"), (ctx_key, None))).other == {}


# --- renaming ----------------------------------------------------------------------------


def test_identity_template_passes_the_same_bytes():
    key, value = skey("s", 1), b'{"subject":"s","version":1,"id":1,"schema":"\\"int\\"","deleted":false}'
    k2, v2 = rename_record(key, value, "{subject}")
    assert k2 is key and v2 is value
    assert rename_record(b"junk", None, "{subject}") == (b"junk", None)


def test_renaming_changes_only_subjects():
    value = (
        b'{"subject":"pay-value","version":2,"id":9,"schema":"syntax = \\"proto3\\";","schemaType":"PROTOBUF",'
        b'"references":[{"name":"common.proto","subject":"common","version":1}],"deleted":false}'
    )
    k, v = rename_record(skey("pay-value", 2), value, "dr-{subject}")
    assert k == b'{"keytype":"SCHEMA","subject":"dr-pay-value","version":2,"magic":1}'
    assert v == (
        b'{"subject":"dr-pay-value","version":2,"id":9,"schema":"syntax = \\"proto3\\";","schemaType":"PROTOBUF",'
        b'"references":[{"name":"common.proto","subject":"dr-common","version":1}],"deleted":false}'
    )


def test_renaming_other_key_types():
    t = "dr-{subject}"
    # a hard-delete tombstone keeps its null value
    assert rename_record(skey("s", 1), None, t) == (
        b'{"keytype":"SCHEMA","subject":"dr-s","version":1,"magic":1}',
        None,
    )
    assert rename_record(
        b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}', b'{"subject":"s","version":3}', t
    ) == (b'{"keytype":"DELETE_SUBJECT","subject":"dr-s","magic":0}', b'{"subject":"dr-s","version":3}')
    assert rename_record(b'{"keytype":"CONFIG","subject":"s","magic":0}', b'{"compatibilityLevel":"FULL"}', t) == (
        b'{"keytype":"CONFIG","subject":"dr-s","magic":0}',
        b'{"compatibilityLevel":"FULL"}',
    )
    # no subject (global config, NOOP) or not readable: unchanged, same bytes
    for key, value in [(GLOBAL_CONFIG_KEY, b'{"compatibilityLevel":"NONE"}'), (NOOP_KEY, None), (b"junk", b"x")]:
        k, v = rename_record(key, value, t)
        assert k is key and v is value


def test_renamed_state_keeps_ids():
    recs = records(
        (skey("orders-value", 1), sval("orders-value", 1, 11, ORDERS_V1)),
        (skey("orders-value", 2), sval("orders-value", 2, 12, ORDERS_V2)),
        (b'{"keytype":"DELETE_SUBJECT","subject":"orders-value","magic":0}', b'{"subject":"orders-value","version":1}'),
    )
    st = rebuild_state((o, *rename_record(k, v, "dr-{subject}")) for o, k, v in recs)
    assert list(st.subjects) == ["dr-orders-value"]
    assert {v: (s.id, s.deleted) for v, s in st.subjects["dr-orders-value"].items()} == {1: (11, True), 2: (12, False)}


# --- diff --------------------------------------------------------------------------------


def _state(*kv) -> RegistryState:
    return rebuild_state(records(*kv))


def test_equal_states_have_no_difference():
    kv = [(skey("s", 1), sval("s", 1, 1, '"int"')), (GLOBAL_CONFIG_KEY, b'{"compatibilityLevel":"FULL"}')]
    assert diff_states(_state(*kv), _state(*kv), "east", "west") == []
    # the same state through different histories is no difference either
    assert diff_states(_state(*kv), _state((skey("s", 1), sval("s", 1, 9, '"x"')), *kv), "east", "west") == []


def test_every_difference_is_named():
    east = _state(
        (skey("orders-value", 1), sval("orders-value", 1, 10, ORDERS_V1)),
        (skey("orders-value", 3), sval("orders-value", 3, 12, ORDERS_V2)),
        (skey("orders-value", 4), sval("orders-value", 4, 13, '"int"')),
        (skey("only-east", 1), sval("only-east", 1, 20, '"int"')),
        (skey("only-east", 2), sval("only-east", 2, 21, '"long"', deleted=True)),
        (skey("typed", 1), sval("typed", 1, 30, "syntax", schemaType="PROTOBUF")),
        (skey("soft", 1), sval("soft", 1, 40, '"int"', deleted=True)),
        (GLOBAL_CONFIG_KEY, b'{"compatibilityLevel":"BACKWARD"}'),
        (b'{"keytype":"MODE","subject":"orders-value","magic":0}', b'{"mode":"READONLY"}'),
    )
    west = _state(
        (skey("orders-value", 1), sval("orders-value", 1, 10, ORDERS_V1.replace("long", "int"))),
        (skey("orders-value", 3), sval("orders-value", 3, 14, ORDERS_V2)),
        (skey("orders-value", 5), sval("orders-value", 5, 15, '"int"')),
        (skey("only-west", 1), sval("only-west", 1, 50, '"int"')),
        (skey("typed", 1), sval("typed", 1, 30, "syntax", schemaType="JSON")),
        (skey("soft", 1), sval("soft", 1, 40, '"int"')),
        (GLOBAL_CONFIG_KEY, b'{"compatibilityLevel":"FULL"}'),
    )
    assert diff_states(east, west, "east", "west") == [
        "subject 'only-east': on east (versions 1, 2 (deleted)), missing on west",
        "subject 'only-west': on west (version 1), missing on east",
        "subject 'orders-value' version 1: schema text differs from character 63: "
        """...'e":"id","type":"long"}]}' on east, ...'e":"id","type":"int"}]}' on west""",
        "subject 'orders-value' version 3: id 12 on east, 14 on west",
        "subject 'orders-value' version 4: on east (id 13), missing on west",
        "subject 'orders-value' version 5: on west (id 15), missing on east",
        "subject 'soft' version 1: soft-deleted on east, live on west",
        "subject 'typed' version 1: schema type PROTOBUF on east, JSON on west",
        'global config: {"compatibilityLevel":"BACKWARD"} on east, {"compatibilityLevel":"FULL"} on west',
        'mode of subject \'orders-value\': {"mode":"READONLY"} on east, none on west',
    ]


def test_reference_and_other_field_differences():
    ref = lambda subject: [{"name": "c.proto", "subject": subject, "version": 1}]  # noqa: E731
    east = _state((skey("p", 1), sval("p", 1, 1, "x", references=ref("common"), metadata={"a": 1})))
    west = _state((skey("p", 1), sval("p", 1, 1, "x", references=ref("dr-common"), metadata={"a": 2})))
    assert diff_states(east, west, "east", "west") == [
        "subject 'p' version 1: references [c.proto=common/1] on east, [c.proto=dr-common/1] on west",
        'subject \'p\' version 1: other fields {"metadata":{"a":1}} on east, {"metadata":{"a":2}} on west',
    ]

"""The schema registry's storage topic (``_schemas``): records, state, renaming, comparison.

Confluent Schema Registry keeps its whole state in one compacted, single-partition topic
(``kafkastore.topic``). Keys and values are JSON:

- ``{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}`` ->
  ``{"subject":"s","version":1,"id":7,"schema":"...","schemaType":"PROTOBUF"?,"references":[...]?,"deleted":false}``
  (a ``null`` value is a hard delete of that version; ``"deleted": true`` a soft delete)
- ``{"keytype":"CONFIG","subject":"s"?,"magic":0}`` -> ``{"compatibilityLevel":"BACKWARD",...}``
  (no subject: the global config)
- ``{"keytype":"MODE","subject":"s"?,"magic":0}`` -> ``{"mode":"READWRITE"}``
- ``{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}`` -> ``{"subject":"s","version":3}``
  (versions 1..3 of ``s`` become soft-deleted)
- ``{"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}`` -> ``{"subject":"s"}``
  (soft-deleted versions of ``s`` are dropped)
- ``{"keytype":"NOOP","magic":0}`` -> ``null`` (the registry's own read-your-writes marker)

Other key types (``CONTEXT``, newer ones) are kept opaquely: last value per key wins.

Everything here is pure: the mirror and the verification in ``kafka_dr.kafka.schema_mirror``
feed it bytes read from Kafka; unit tests feed it literals.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

IDENTITY_TEMPLATE = "{subject}"

#: Key types whose key (and value) carry a subject name.
SUBJECT_KEYTYPES = frozenset({"SCHEMA", "CONFIG", "MODE", "DELETE_SUBJECT", "CLEAR_SUBJECT"})

#: SCHEMA value fields with a meaning of their own; anything else is compared as "other fields".
_SCHEMA_FIELDS = ("subject", "version", "id", "schema", "schemaType", "references", "deleted")


class SchemaRecordError(ValueError):
    """A ``_schemas`` record that is not in the registry's format."""


# --- names ------------------------------------------------------------------------------


def rename_subject(subject: str, template: str) -> str:
    """``orders-value`` -> ``dr-orders-value`` for template ``dr-{subject}``.

    A context-qualified subject (``:.ctx:orders-value``) keeps its context; only the name
    after it is renamed. An empty name (a context's own config) stays empty.
    """
    if template == IDENTITY_TEMPLATE:
        return subject
    prefix, name = "", subject
    if subject.startswith(":.") and subject.count(":") >= 2:
        cut = subject.index(":", 2) + 1
        prefix, name = subject[:cut], subject[cut:]
    if not name:
        return subject
    return prefix + template.replace("{subject}", name)


# --- parsing -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RegistryKey:
    keytype: str
    subject: str | None = None
    version: int | None = None
    magic: int | None = None
    #: the key as parsed, for key types this module does not interpret
    raw: tuple[tuple[str, Any], ...] = ()

    def canonical(self) -> str:
        return json.dumps(dict(self.raw), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class SchemaReference:
    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class SchemaVersion:
    """One registered (subject, version): what a registry serves for it."""

    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple[SchemaReference, ...] = ()
    deleted: bool = False
    #: further value fields (``metadata``, ``ruleSet``...), canonical JSON, compared as a whole
    other: str = "{}"


def _json(data: bytes, what: str) -> Any:
    try:
        return json.loads(data)
    except (UnicodeDecodeError, ValueError) as e:
        raise SchemaRecordError(f"{what} is not JSON ({e}): {_preview(data)}") from None


def _preview(data: bytes | None, limit: int = 80) -> str:
    if data is None:
        return "null"
    text = data[:limit].decode("utf-8", "replace")
    return repr(text) + ("..." if len(data) > limit else "")


def parse_key(key: bytes | None) -> RegistryKey:
    if key is None:
        raise SchemaRecordError("key is null")
    d = _json(key, "key")
    if not isinstance(d, dict) or not isinstance(d.get("keytype"), str):
        raise SchemaRecordError(f"key has no 'keytype': {_preview(key)}")
    subject = d.get("subject")
    version = d.get("version")
    if subject is not None and not isinstance(subject, str):
        raise SchemaRecordError(f"key subject is not a string: {_preview(key)}")
    if d["keytype"] == "SCHEMA" and (not isinstance(subject, str) or not isinstance(version, int)):
        raise SchemaRecordError(f"SCHEMA key needs a subject and an integer version: {_preview(key)}")
    return RegistryKey(
        d["keytype"], subject, version if isinstance(version, int) else None, d.get("magic"), tuple(d.items())
    )


def parse_schema_value(value: bytes) -> SchemaVersion:
    d = _json(value, "SCHEMA value")
    if not isinstance(d, dict):
        raise SchemaRecordError(f"SCHEMA value is not an object: {_preview(value)}")
    missing = [f for f in ("subject", "version", "id", "schema") if f not in d]
    if missing:
        raise SchemaRecordError(f"SCHEMA value lacks {', '.join(missing)}: {_preview(value)}")
    refs = []
    for r in d.get("references") or ():
        if not isinstance(r, dict):
            raise SchemaRecordError(f"SCHEMA value has a reference that is not an object: {_preview(value)}")
        refs.append(SchemaReference(str(r.get("name")), str(r.get("subject")), int(r.get("version", -1))))
    other = {k: v for k, v in d.items() if k not in _SCHEMA_FIELDS}
    return SchemaVersion(
        subject=d["subject"],
        version=int(d["version"]),
        id=int(d["id"]),
        schema=d["schema"],
        schema_type=d.get("schemaType") or "AVRO",
        references=tuple(refs),
        deleted=bool(d.get("deleted", False)),
        other=json.dumps(other, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
    )


# --- state -------------------------------------------------------------------------------


@dataclass
class RegistryState:
    """What a registry reading the topic would hold: subject -> version -> schema, plus configs."""

    subjects: dict[str, dict[int, SchemaVersion]] = field(default_factory=dict)
    #: per subject (``None`` = global): the config value as parsed
    configs: dict[str | None, Any] = field(default_factory=dict)
    modes: dict[str | None, Any] = field(default_factory=dict)
    #: key types not interpreted here: canonical key -> canonical value
    other: dict[str, str] = field(default_factory=dict)
    records: int = 0
    #: records a registry would skip as unreadable, "offset N: why"
    skipped: list[str] = field(default_factory=list)

    def live_versions(self, subject: str) -> list[int]:
        return sorted(v for v, s in self.subjects.get(subject, {}).items() if not s.deleted)


def rebuild_state(records: Iterable[tuple[int, bytes | None, bytes | None]]) -> RegistryState:
    """Replay ``(offset, key, value)`` records in log order, as the registry does at start-up.

    Later records win; a ``null`` value removes the key (hard delete); ``DELETE_SUBJECT``
    soft-deletes versions up to the one it names; ``CLEAR_SUBJECT`` drops the soft-deleted
    versions of its subject. Unreadable records are skipped and listed in ``skipped``.
    """
    st = RegistryState()
    for offset, key, value in records:
        st.records += 1
        try:
            _apply(st, parse_key(key), value)
        except SchemaRecordError as e:
            st.skipped.append(f"offset {offset}: {e}")
    for s in [s for s, vs in st.subjects.items() if not vs]:
        del st.subjects[s]
    return st


def _apply(st: RegistryState, k: RegistryKey, value: bytes | None) -> None:
    if k.keytype == "SCHEMA":
        versions = st.subjects.setdefault(k.subject, {})
        if value is None:
            versions.pop(k.version, None)
            return
        sv = parse_schema_value(value)
        if (sv.subject, sv.version) != (k.subject, k.version):
            raise SchemaRecordError(
                f"key names {k.subject!r} version {k.version}, value names {sv.subject!r} version {sv.version}"
            )
        versions[k.version] = sv
    elif k.keytype in ("CONFIG", "MODE"):
        target = st.configs if k.keytype == "CONFIG" else st.modes
        if value is None:
            target.pop(k.subject, None)
        else:
            target[k.subject] = _json(value, f"{k.keytype} value")
    elif k.keytype == "DELETE_SUBJECT":
        if value is None:
            return  # compaction's tombstone for the marker itself: no state change
        d = _json(value, "DELETE_SUBJECT value")
        upto = d.get("version") if isinstance(d, dict) else None
        if not isinstance(upto, int):
            raise SchemaRecordError(f"DELETE_SUBJECT value has no integer version: {_preview(value)}")
        versions = st.subjects.get(d.get("subject", k.subject), {})
        for v, sv in list(versions.items()):
            if v <= upto and not sv.deleted:
                versions[v] = replace(sv, deleted=True)
    elif k.keytype == "CLEAR_SUBJECT":
        if value is None:
            return
        d = _json(value, "CLEAR_SUBJECT value")
        subject = d.get("subject", k.subject) if isinstance(d, dict) else k.subject
        versions = st.subjects.get(subject, {})
        for v in [v for v, sv in versions.items() if sv.deleted]:
            del versions[v]
    elif k.keytype == "NOOP":
        return
    else:
        ck = k.canonical()
        if value is None:
            st.other.pop(ck, None)
        else:
            parsed = _json(value, f"{k.keytype} value")
            st.other[ck] = json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# --- renaming ----------------------------------------------------------------------------


def rename_record(key: bytes | None, value: bytes | None, template: str) -> tuple[bytes | None, bytes | None]:
    """The record as it goes to a target whose subjects follow ``template``.

    Only subject names change (in the key, the value and a schema's references); ids,
    versions, schema text and every other field stay. The identity template returns the very
    same bytes. A record that is not readable JSON, or has no subject (the global config,
    ``NOOP``), passes through unchanged: a registry skips or applies it the same way.
    """
    if template == IDENTITY_TEMPLATE:
        return key, value
    try:
        k = json.loads(key) if key is not None else None
    except (UnicodeDecodeError, ValueError):
        return key, value
    if not isinstance(k, dict) or k.get("keytype") not in SUBJECT_KEYTYPES or not isinstance(k.get("subject"), str):
        return key, value
    k["subject"] = rename_subject(k["subject"], template)
    new_value = value
    if value is not None:
        try:
            v = json.loads(value)
        except (UnicodeDecodeError, ValueError):
            v = None
        if isinstance(v, dict):
            if isinstance(v.get("subject"), str):
                v["subject"] = rename_subject(v["subject"], template)
            for ref in v.get("references") or ():
                if isinstance(ref, dict) and isinstance(ref.get("subject"), str):
                    ref["subject"] = rename_subject(ref["subject"], template)
            new_value = _dump(v)
    return _dump(k), new_value


def _dump(obj: Any) -> bytes:
    """Compact JSON in the key order given, as the registry's Jackson writes it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# --- comparison --------------------------------------------------------------------------


def diff_states(a: RegistryState, b: RegistryState, a_name: str, b_name: str) -> list[str]:
    """Every difference between two registry states, one sentence each, in a stable order.

    Names the subject and version and says what differs and on which side: ``subject
    'orders-value' version 3: id 12 on east, 14 on west``. Empty when a registry reading
    either topic would serve the same subjects, versions, ids, schemas, configs and modes.
    """
    out: list[str] = []
    for subject in sorted(set(a.subjects) | set(b.subjects)):
        va, vb = a.subjects.get(subject), b.subjects.get(subject)
        if va is None or vb is None:
            have, name, missing = (va, a_name, b_name) if vb is None else (vb, b_name, a_name)
            out.append(f"subject {subject!r}: on {name} ({_versions(have)}), missing on {missing}")
            continue
        for version in sorted(set(va) | set(vb)):
            sa, sb = va.get(version), vb.get(version)
            where = f"subject {subject!r} version {version}"
            if sa is None or sb is None:
                s, name, missing = (sa, a_name, b_name) if sb is None else (sb, b_name, a_name)
                out.append(
                    f"{where}: on {name} (id {s.id}{', soft-deleted' if s.deleted else ''}), missing on {missing}"
                )
                continue
            out.extend(_diff_version(where, sa, sb, a_name, b_name))
    out.extend(_diff_map("config", a.configs, b.configs, a_name, b_name))
    out.extend(_diff_map("mode", a.modes, b.modes, a_name, b_name))
    for ck in sorted(set(a.other) | set(b.other)):
        xa, xb = a.other.get(ck), b.other.get(ck)
        if xa != xb:
            out.append(f"record {ck}: {_short(xa)} on {a_name}, {_short(xb)} on {b_name}")
    return out


def _diff_version(where: str, sa: SchemaVersion, sb: SchemaVersion, a_name: str, b_name: str) -> list[str]:
    out = []
    if sa.id != sb.id:
        out.append(f"{where}: id {sa.id} on {a_name}, {sb.id} on {b_name}")
    if sa.schema != sb.schema:
        i = next(
            (n for n, (x, y) in enumerate(zip(sa.schema, sb.schema)) if x != y), min(len(sa.schema), len(sb.schema))
        )
        out.append(
            f"{where}: schema text differs from character {i}: "
            f"{_around(sa.schema, i)} on {a_name}, {_around(sb.schema, i)} on {b_name}"
        )
    if sa.schema_type != sb.schema_type:
        out.append(f"{where}: schema type {sa.schema_type} on {a_name}, {sb.schema_type} on {b_name}")
    if sa.references != sb.references:
        out.append(f"{where}: references {_refs(sa.references)} on {a_name}, {_refs(sb.references)} on {b_name}")
    if sa.deleted != sb.deleted:
        state = lambda s: "soft-deleted" if s.deleted else "live"  # noqa: E731
        out.append(f"{where}: {state(sa)} on {a_name}, {state(sb)} on {b_name}")
    if sa.other != sb.other:
        out.append(f"{where}: other fields {_short(sa.other)} on {a_name}, {_short(sb.other)} on {b_name}")
    return out


def _diff_map(what: str, a: dict, b: dict, a_name: str, b_name: str) -> list[str]:
    out = []
    for subject in sorted(set(a) | set(b), key=lambda s: (s is not None, s or "")):
        xa, xb = a.get(subject, _ABSENT), b.get(subject, _ABSENT)
        if xa != xb:
            scope = f"global {what}" if subject is None else f"{what} of subject {subject!r}"
            out.append(f"{scope}: {_show(xa)} on {a_name}, {_show(xb)} on {b_name}")
    return out


_ABSENT = object()


def _show(x: Any) -> str:
    if x is _ABSENT:
        return "none"
    return _short(json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def _short(text: str | None, limit: int = 60) -> str:
    if text is None:
        return "none"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _around(text: str, i: int, before: int = 16, after: int = 24) -> str:
    """The text near character ``i``, quoted, with ``...`` where it was cut."""
    lo, hi = max(0, i - before), min(len(text), i + after)
    return ("..." if lo else "") + repr(text[lo:hi]) + ("..." if hi < len(text) else "")


def _versions(versions: dict[int, SchemaVersion]) -> str:
    parts = [f"{v}{' (deleted)' if s.deleted else ''}" for v, s in sorted(versions.items())]
    return ("version " if len(parts) == 1 else "versions ") + ", ".join(parts)


def _refs(refs: tuple[SchemaReference, ...]) -> str:
    return "[" + ", ".join(f"{r.name}={r.subject}/{r.version}" for r in refs) + "]"

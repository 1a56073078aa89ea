"""Resolve ``${airflow:CONN_ID[.field]}`` and ``${env:NAME}`` secret references.

Used inside tasks (never at DAG parse time): a connection lookup goes to Airflow's secrets
backends. Errors name the reference and the connection, never a value.
"""

from __future__ import annotations

import json

from kafka_dr.core.secret_refs import SecretRef, UnresolvedSecret, env_resolver


def airflow_resolver():
    """A resolver for both kinds of reference, for use inside Airflow tasks."""
    from_env = env_resolver()

    def resolve(ref: SecretRef) -> str:
        if ref.source == "env":
            return from_env(ref)
        from airflow.sdk import BaseHook

        conn_id, _, field = ref.name.partition(".")
        try:
            conn = BaseHook.get_connection(conn_id)
        except Exception as e:  # noqa: BLE001 - Airflow raises several kinds
            raise UnresolvedSecret(f"{ref}: Airflow connection {conn_id!r} not found ({type(e).__name__})") from None
        field = field or "password"
        if field.startswith("extra."):
            extra = conn.extra_dejson if hasattr(conn, "extra_dejson") else json.loads(conn.extra or "{}")
            key = field[len("extra.") :]
            if key not in extra:
                raise UnresolvedSecret(f"{ref}: connection {conn_id!r} has no extra field {key!r}")
            return str(extra[key])
        value = getattr(conn, field, None)
        if value in (None, ""):
            raise UnresolvedSecret(f"{ref}: connection {conn_id!r} has no {field}")
        return str(value)

    return resolve

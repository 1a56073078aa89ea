"""Secret references in the config, and a value type that never prints itself.

A config value may be a literal or a reference resolved only when a client is built:

- ``${env:NAME}``: the environment variable ``NAME``;
- ``${airflow:CONN_ID}``: the password of Airflow connection ``CONN_ID``;
- ``${airflow:CONN_ID.FIELD}``: another field of that connection (``login``, ``host``,
  ``extra.<key>``).

The core only parses references; resolving them is the job of a resolver passed in by the
caller (environment here, Airflow connections in ``kafka_dr.airflow``), so this module stays
free of Airflow imports. Resolved values are wrapped in :class:`Secret`, whose ``repr``/
``str`` are masked, so an accidental log line or exception message shows ``***``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

_REF = re.compile(r"^\$\{(env|airflow):([^}]+)\}$")

#: librdkafka properties whose values are secrets wherever they come from.
SECRET_KEYS = frozenset(
    {
        "sasl.password",
        "sasl.oauthbearer.client.secret",
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.key.pem",
        "ssl_key",  # confluent-kafka alias
        "basic.auth.user.info",
        "password",
    }
)

MASK = "***"


@dataclass(frozen=True)
class SecretRef:
    """A reference to a value kept outside the config file."""

    source: str  # "env" | "airflow"
    name: str

    def __str__(self) -> str:
        return f"${{{self.source}:{self.name}}}"


class Secret:
    """A resolved secret. Compare and use with :meth:`reveal`; printing shows ``***``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret({MASK})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def parse_ref(value: object) -> SecretRef | None:
    """Return the reference in ``value`` if it is one (``${env:X}``/``${airflow:Y}``)."""
    if isinstance(value, str):
        m = _REF.match(value.strip())
        if m:
            return SecretRef(m.group(1), m.group(2).strip())
    return None


def is_secret_key(key: str) -> bool:
    return key in SECRET_KEYS or key.endswith(".password") or key.endswith(".secret")


class UnresolvedSecret(LookupError):
    """A reference could not be resolved. The message names the reference, never a value."""


def ref_env_name(ref: SecretRef) -> str:
    """The environment variable that carries an ``${airflow:...}`` reference's value into a
    process that has no Airflow (the Spark job): ``KAFKA_DR_SECRET_<CONN_ID>[_<FIELD>]``."""
    return "KAFKA_DR_SECRET_" + re.sub(r"[^A-Za-z0-9]", "_", ref.name).upper()


def env_resolver(environ: dict[str, str] | None = None) -> Callable[[SecretRef], str]:
    """Resolve ``${env:...}`` references from ``environ`` (default: the process env)."""
    env = os.environ if environ is None else environ

    def resolve(ref: SecretRef) -> str:
        name = ref.name if ref.source == "env" else ref_env_name(ref)
        if name not in env:
            if ref.source == "env":
                raise UnresolvedSecret(f"{ref}: environment variable {ref.name} is not set")
            raise UnresolvedSecret(
                f"{ref}: Airflow connections are not reachable from here; run under Airflow "
                f"(the operator passes the value as ${name}) or set {name}"
            )
        return env[name]

    return resolve


def config_refs(values) -> list[SecretRef]:
    """Every secret reference among ``values`` (a mapping's values or any iterable)."""
    vals = values.values() if hasattr(values, "values") else values
    return [v for v in vals if isinstance(v, SecretRef)]


def mask_config(conf: dict[str, object]) -> dict[str, object]:
    """A copy of a client config that is safe to log: secret keys and Secrets masked."""
    out: dict[str, object] = {}
    for k, v in conf.items():
        if isinstance(v, Secret) or is_secret_key(k):
            out[k] = MASK
        else:
            out[k] = v
    return out

"""Client quotas on one cluster, through Kafka's own Admin client.

confluent-kafka (librdkafka) has no DescribeClientQuotas / AlterClientQuotas, so a single Java
source file next to this module (``java/ClientQuotas.java``) runs with Java's single-file launch
on the Kafka client jars (fetched from Maven Central once, like the lab's: Java 17 is there
wherever Spark runs). The client settings, secrets included, go to it on stdin: never on a
command line, never in a file. The source is compiled once per host and version into the cache
(``$KAFKA_DR_CACHE/client-quotas-<hash>/``, with the JDK's ``javac``; where the JDK has none the
file runs from source): a call then costs a short-lived JVM with the C1 compiler only, about
0.7 s of CPU here against 2.3 s compiling it on every call. One call describes several
clusters at once (a flow's source and target).

On the helper's wire an entity is ``type=name`` pairs joined by ``&`` with form-encoded names
(``user=alice&client-id=app``), a bare type (``user``) being that type's default; here it
becomes :data:`~kafka_dr.core.quota_sync.Entity`.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from urllib.parse import quote_plus, unquote_plus

from kafka_dr.core.config import DrConfig
from kafka_dr.core.quota_sync import Entity, Quota
from kafka_dr.kafka.clients import ClusterUnreachable, SecretResolver, client_config
from kafka_dr.kafka.java_helper import launch_command
from kafka_dr.kafka.jvm import client_jars

SOURCE = Path(__file__).with_name("java") / "ClientQuotas.java"
#: a call's JVM lives a second: C2's compilations and a parallel collector would only cost CPU
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Dslf4j.internal.verbosity=ERROR")
#: librdkafka settings with the same name and meaning in the Java client
SAME = ("bootstrap.servers", "security.protocol", "client.id")
#: librdkafka settings that only tune librdkafka itself
IGNORED_PREFIXES = ("logger", "log_level", "socket.", "enable.", "statistics", "request.timeout", "message.")
LOGIN = {
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
}


class QuotaCallFailed(RuntimeError):
    """The cluster refused a quota call, or the helper could not run."""


def java_properties(conf: Mapping[str, object], cluster: str) -> str:
    """The Java client's properties for librdkafka settings ``conf`` (``.properties`` text)."""
    out = {k: str(conf[k]) for k in SAME if k in conf}
    mech = conf.get("sasl.mechanisms") or conf.get("sasl.mechanism")
    if mech:
        if mech not in LOGIN:
            raise QuotaCallFailed(f"quota sync on {cluster!r}: SASL mechanism {mech} is not supported")
        out["sasl.mechanism"] = str(mech)
        user, password = (_jaas_quote(str(conf.get(k, ""))) for k in ("sasl.username", "sasl.password"))
        out["sasl.jaas.config"] = f'{LOGIN[mech]} required username="{user}" password="{password}";'
    if "ssl.ca.location" in conf:
        out["ssl.truststore.type"] = "PEM"
        out["ssl.truststore.location"] = str(conf["ssl.ca.location"])
    if str(conf.get("ssl.endpoint.identification.algorithm", "https")).lower() == "none":
        out["ssl.endpoint.identification.algorithm"] = ""
    handled = {*SAME, "sasl.mechanisms", "sasl.mechanism", "sasl.username", "sasl.password", "ssl.ca.location"}
    handled.add("ssl.endpoint.identification.algorithm")
    unsupported = sorted(
        k for k in conf if k not in handled and k.startswith(("ssl.", "sasl.")) and not k.startswith(IGNORED_PREFIXES)
    )
    if unsupported:
        raise QuotaCallFailed(f"quota sync on {cluster!r}: client setting(s) {', '.join(unsupported)} not supported")
    return "".join(f"{k}={_prop_escape(v)}\n" for k, v in out.items())


def _jaas_quote(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def _prop_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("\n", "\\n")


def to_wire(entity: Entity) -> str:
    return "&".join(k if v is None else f"{k}={quote_plus(v)}" for k, v in entity)


def from_wire(text: str) -> Entity:
    pairs = []
    for part in text.split("&"):
        kind, eq, name = part.partition("=")
        pairs.append((kind, unquote_plus(name) if eq else None))
    return tuple(sorted(pairs))


def _run(
    cfg: DrConfig, clusters: Sequence[str], verb: str, lines: Iterable[str], resolve: SecretResolver | None
) -> str:
    props = [java_properties(client_config(cfg.cluster(c), resolve), c) for c in clusters]
    stdin = "".join(f"{p}---\n" for p in props) + "".join(f"{x}\n" for x in lines)
    java = shutil.which("java") or "java"
    jars = [str(j) for j in client_jars()]
    cmd = [*launch_command(SOURCE, java, jars, "client-quotas", JVM_OPTIONS), verb]
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        named = ", ".join(repr(c) for c in clusters)
        raise ClusterUnreachable(f"quota sync: {verb} client quotas on {named}: no answer in 120 s") from None
    if proc.returncode != 0:
        named, why = blame((proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1], clusters)
        if "TimeoutException" in why:
            raise ClusterUnreachable(f"quota sync: {verb} client quotas on {named}: {why}")
        raise QuotaCallFailed(f"quota sync: {verb} client quotas on {named}: {why}")
    return proc.stdout


def blame(why: str, clusters: Sequence[str]) -> tuple[str, str]:
    """The cluster(s) the helper's last error line is about, and what it says of them."""
    index, tab, said = why.partition("\t")
    if tab and index.isdigit() and int(index) < len(clusters):
        return repr(clusters[int(index)]), said
    return ", ".join(repr(c) for c in clusters), why


def describe_each(
    cfg: DrConfig, clusters: Sequence[str], resolve: SecretResolver | None = None
) -> dict[str, dict[Quota, float]]:
    """Every client quota of each cluster, ``{cluster: {(entity, key): value}}``, asked of all
    of them at once by one helper run."""
    out: dict[str, dict[Quota, float]] = {c: {} for c in clusters}
    for line in _run(cfg, clusters, "describe", (), resolve).splitlines():
        index, entity, key, value = line.split("\t")
        out[clusters[int(index)]][(from_wire(entity), key)] = float(value)
    return out


def describe_quotas(cfg: DrConfig, cluster: str, resolve: SecretResolver | None = None) -> dict[Quota, float]:
    """Every client quota of the cluster: ``{(entity, key): value}``."""
    return describe_each(cfg, [cluster], resolve)[cluster]


def alter_quotas(
    cfg: DrConfig,
    cluster: str,
    set_values: Mapping[Quota, float],
    delete: Iterable[Quota],
    resolve: SecretResolver | None = None,
) -> None:
    """Set and delete quotas in one request; raises :class:`QuotaCallFailed` when refused."""
    lines = [f"SET\t{to_wire(e)}\t{k}\t{v!r}" for (e, k), v in sorted(set_values.items(), key=repr)]
    lines += [f"DELETE\t{to_wire(e)}\t{k}" for e, k in sorted(delete, key=repr)]
    if lines:
        _run(cfg, [cluster], "alter", lines, resolve)

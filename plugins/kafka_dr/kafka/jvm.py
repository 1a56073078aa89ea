"""Java and Kafka's jars from Maven Central, fetched into a cache once.

``mvn dependency:copy-dependencies`` on a pom copies its runtime classpath into
``$KAFKA_DR_CACHE/<name>-<version>/`` (default ``~/.cache/kafka-dr``). A marker file says the
copy finished, so an interrupted download is redone rather than half-used. The lab fetches the
broker, tools and MirrorMaker 2 this way; the client-quota helper only Kafka's client jar.
"""

from __future__ import annotations

import fcntl
import re
import shutil
import subprocess
from pathlib import Path

from kafka_dr.cache import cache_root

KAFKA_VERSION = "4.3.1"
CLIENTS_POM = Path(__file__).with_name("java") / "clients-pom.xml"


class JavaPrerequisiteMissing(RuntimeError):
    """Java 17+ or Maven is missing, or Maven could not fetch the jars."""


def java_major_version(java: str = "java") -> int:
    path = shutil.which(java)
    if path is None:
        raise JavaPrerequisiteMissing(
            "java was not found on PATH: kafka-dr needs Java 17 or newer (e.g. apt-get install openjdk-17-jre-headless)"
        )
    out = subprocess.run([path, "-version"], capture_output=True, text=True, check=False)
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        raise JavaPrerequisiteMissing(
            f"could not read the Java version from `{path} -version`: {out.stderr.strip()[:200]}"
        )
    major = int(m.group(1))
    return int(m.group(2)) if major == 1 and m.group(2) else major


def fetch(pom: Path, name: str, version: str, expect: str) -> Path:
    """The folder holding ``pom``'s runtime jars at ``version``, downloading them if needed;
    ``expect`` is a glob that must match once they are there."""
    major = java_major_version()
    if major < 17:
        raise JavaPrerequisiteMissing(f"Java {major} found; Apache Kafka 4 needs Java 17 or newer")
    dest = cache_root() / f"{name}-{version}"
    marker = dest / ".complete"
    if marker.exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    # processes on one host (parallel tasks, test workers) fetch one at a time: the first
    # fills the folder, the others find it complete
    with open(dest.parent / f"{name}-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return dest
        return _download(pom, dest, version, expect)


def _download(pom: Path, dest: Path, version: str, expect: str) -> Path:
    marker = dest / ".complete"
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JavaPrerequisiteMissing(
            "mvn was not found on PATH: Kafka's jars come from Maven Central through Maven (apt-get install maven)"
        )
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    cmd = [
        mvn,
        "-q",
        "-B",
        "-f",
        str(pom),
        "dependency:copy-dependencies",
        f"-Dkafka.version={version}",
        f"-DoutputDirectory={dest}",
        "-DincludeScope=runtime",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
        raise JavaPrerequisiteMissing(
            f"Maven could not fetch Kafka {version} jars (exit {proc.returncode}):\n" + "\n".join(tail)
        )
    if not any(dest.glob(expect)):
        raise JavaPrerequisiteMissing(f"Maven finished but no {expect} is in {dest}")
    marker.write_text(version + "\n")
    return dest


def client_jars(version: str = KAFKA_VERSION) -> list[Path]:
    """Kafka's client jar and its logging API, for the small JVM helpers."""
    d = fetch(CLIENTS_POM, "kafka-clients", version, "kafka-clients-*.jar")
    return sorted([*d.glob("kafka-clients-*.jar"), *d.glob("slf4j-api-*.jar")])

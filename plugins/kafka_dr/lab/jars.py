"""Fetch the Apache Kafka jars from Maven Central into a cache, once.

The pom next to this file names the broker, the tools and MirrorMaker 2;
``mvn dependency:copy-dependencies`` copies their runtime classpath into
``$KAFKA_DR_CACHE/kafka-<version>/`` (default ``~/.cache/kafka-dr``). A marker file says the
copy finished, so an interrupted download is redone rather than half-used.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

DEFAULT_KAFKA_VERSION = "4.3.1"
POM = Path(__file__).with_name("pom.xml")


class LabPrerequisiteMissing(RuntimeError):
    """Java 17+ or Maven is missing, or Maven could not fetch the jars."""


def cache_root() -> Path:
    return Path(os.environ.get("KAFKA_DR_CACHE", Path.home() / ".cache" / "kafka-dr"))


def java_major_version(java: str = "java") -> int:
    path = shutil.which(java)
    if path is None:
        raise LabPrerequisiteMissing(
            "java was not found on PATH: the lab needs Java 17 or newer (e.g. apt-get install openjdk-17-jre-headless)"
        )
    out = subprocess.run([path, "-version"], capture_output=True, text=True, check=False)
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        raise LabPrerequisiteMissing(
            f"could not read the Java version from `{path} -version`: {out.stderr.strip()[:200]}"
        )
    major = int(m.group(1))
    return int(m.group(2)) if major == 1 and m.group(2) else major


def ensure_jars(version: str = DEFAULT_KAFKA_VERSION) -> Path:
    """Return the folder holding Kafka ``version``'s jars, downloading them if needed."""
    major = java_major_version()
    if major < 17:
        raise LabPrerequisiteMissing(f"Java {major} found; Apache Kafka 4 needs Java 17 or newer")
    dest = cache_root() / f"kafka-{version}"
    marker = dest / ".complete"
    if marker.exists():
        return dest
    mvn = shutil.which("mvn")
    if mvn is None:
        raise LabPrerequisiteMissing(
            "mvn was not found on PATH: the lab fetches Kafka from Maven Central with Maven (apt-get install maven)"
        )
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    cmd = [
        mvn,
        "-q",
        "-B",
        "-f",
        str(POM),
        "dependency:copy-dependencies",
        f"-Dkafka.version={version}",
        f"-DoutputDirectory={dest}",
        "-DincludeScope=runtime",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
        raise LabPrerequisiteMissing(
            f"Maven could not fetch Kafka {version} jars (exit {proc.returncode}):\n" + "\n".join(tail)
        )
    if not any(dest.glob("kafka_2.13-*.jar")):
        raise LabPrerequisiteMissing(f"Maven finished but no kafka_2.13 jar is in {dest}")
    marker.write_text(version + "\n")
    return dest

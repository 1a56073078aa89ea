"""A class-data archive of the Spark driver JVM's classes: a driver started with it maps the
classes it loads at start-up instead of reading and verifying each from the jars.

A Spark driver reads, verifies and links its classes from pyspark's jars before its first
micro-batch, and on a busy host that is a large part of a restarted job's start-up
(docs/benchmarks.md, "Settings"). The JVM's dynamic class-data sharing (JDK 13+) writes the
classes a run loaded to an archive when it exits (``-XX:ArchiveClassesAtExit``); later JVMs
with the same classpath map it (``-XX:SharedArchiveFile``). :func:`ensure_archive` makes one by
running a short local job (``make setup`` does); :func:`with_class_archive` adds it to a job's
driver options when it exists. A JVM that cannot use it (another JDK, another classpath)
warns and starts without it.

The archive belongs to this host's pyspark install and JDK: it lives in
``$KAFKA_DR_CACHE/spark-<pyspark version>-<install path hash>-<jars hash>-classes.jsa`` (default
``~/.cache/kafka-dr``), the jars hash covering each jar's name, size and modification time, which a
JVM checks before it maps an archive.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping
from importlib.metadata import version
from importlib.util import find_spec
from pathlib import Path

from kafka_dr.cache import cache_root
from kafka_dr.spark.driver_options import LOCAL_DRIVER_JAVA_OPTIONS, spark_submit_env

DRIVER_OPTIONS = "spark.driver.extraJavaOptions"
#: options after which the driver's class sharing is the operator's own
OPERATOR_SHARING = ("-Xshare", "-XX:SharedArchiveFile", "-XX:ArchiveClassesAtExit")
#: the short job that loads what a replication driver loads: a session, a batch, a streaming query
WARM_UP = Path(__file__).with_name("class_archive_job.py")


def archive_file(pyspark_dir: Path | None = None) -> Path:
    """One archive per pyspark install: a JVM maps an archive only with the jars it was made
    with, the same paths, sizes and modification times. Two virtualenvs on one host have their
    jars in different places, and a virtualenv made again at the same path has new jars."""
    where = (pyspark_dir or Path(find_spec("pyspark").origin).parent).resolve()  # found, not imported
    return cache_root() / f"{_install_prefix(where)}-{_jars_tag(where)}-classes.jsa"


def _install_prefix(pyspark_dir: Path) -> str:
    return f"spark-{version('pyspark')}-{hashlib.sha1(str(pyspark_dir).encode()).hexdigest()[:8]}"


def _jars_tag(pyspark_dir: Path) -> str:
    """A short hash of each jar's name, size and modification time."""
    digest = hashlib.sha1()
    for jar in sorted((pyspark_dir / "jars").glob("*.jar")):
        stat = jar.stat()
        digest.update(f"{jar.name} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:8]


def with_class_archive(conf: Mapping[str, str], archive: Path | None = None) -> dict[str, str]:
    """``conf`` with the archive added to the driver's JVM options, when the archive exists and
    the options leave class sharing alone."""
    archive = archive or archive_file()
    options = conf.get(DRIVER_OPTIONS, "")
    if not archive.is_file() or any(o in options for o in OPERATOR_SHARING):
        return dict(conf)
    return {**conf, DRIVER_OPTIONS: f"{options} -XX:SharedArchiveFile={archive}".strip()}


def ensure_archive(java_options: str = LOCAL_DRIVER_JAVA_OPTIONS) -> Path:
    """The archive, made once by a local warm-up job (about 40 s here). Raises RuntimeError
    with the job's last lines when it fails."""
    target = archive_file()
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    env = {**os.environ, **spark_submit_env()}
    options = f"{java_options} -XX:ArchiveClassesAtExit={partial} -Xlog:cds=off -Xlog:cds+dynamic=off"
    command = ["spark-submit", "--master", "local[1]", "--conf", f"{DRIVER_OPTIONS}={options}", str(WARM_UP)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
        raise RuntimeError(f"spark class archive: the warm-up job failed (exit {done.returncode}):\n{tail}")
    partial.replace(target)  # atomic: a JVM never maps a half-written archive
    _remove_stale(target)
    return target


def _remove_stale(kept: Path) -> None:
    """This install's archives made with other jars: no JVM can map them any more."""
    prefix = kept.name.rsplit("-", 2)[0]  # spark-<version>-<install path hash>
    for old in kept.parent.glob(f"{prefix}-*-classes.jsa"):
        if old != kept:
            old.unlink(missing_ok=True)


if __name__ == "__main__":
    print(f"spark class archive: {ensure_archive()}")

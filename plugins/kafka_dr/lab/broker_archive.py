"""A class-data archive of a lab broker's classes: a broker started with it maps the classes it
loads instead of reading, verifying and linking each from Kafka's jars.

A lab broker spends most of its start-up CPU loading classes (docs/testing.md, "Where the time
goes"), and the lab starts brokers often: every cluster, every restart of a fault drill. The
JVM's dynamic class-data sharing (JDK 13+) writes the classes a run loaded when it exits
(``-XX:ArchiveClassesAtExit``); later JVMs with the same classpath map them
(``-XX:SharedArchiveFile``). :func:`ensure_archive` makes one from a one-broker lab that creates
a topic and commits a transaction (``make setup`` does); :func:`broker.jvm_options` adds it when
it exists. A JVM that cannot use it (another JDK, other jars) warns on its console and starts
without it.

The archive belongs to this host's JDK and Kafka jars:
``$KAFKA_DR_CACHE/kafka-broker-<jars hash>-classes.jsa`` (default ``~/.cache/kafka-dr``).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from kafka_dr.cache import cache_root
from kafka_dr.lab.jars import ensure_jars

#: the warm-up lab's ports: clear of users' labs (19092+) and of the test suite's
WARM_UP_PORT = 18092


def archive_file(jars: Path) -> Path:
    return cache_root() / f"kafka-broker-{_jars_tag(jars)}-classes.jsa"


def _jars_tag(jars: Path) -> str:
    """A short hash of the JDK and of each jar's path, size and modification time: what a JVM
    checks before it maps an archive."""
    digest = hashlib.sha1(os.path.realpath(_java()).encode())
    for jar in sorted(jars.glob("*.jar")):
        stat = jar.stat()
        digest.update(f"{jar.resolve()} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:10]


def _java() -> str:
    from shutil import which

    return which("java") or "java"


def ensure_archive() -> Path:
    """The archive, made once (about 15 s). Raises RuntimeError when the warm-up fails."""
    from kafka_dr.lab.broker import JVM_OPTS_ENV

    jars = ensure_jars()
    target = archive_file(jars)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    saved = os.environ.get(JVM_OPTS_ENV)
    os.environ[JVM_OPTS_ENV] = f"{saved or ''} -XX:ArchiveClassesAtExit={partial} -Xlog:cds=off".strip()
    try:
        with tempfile.TemporaryDirectory(prefix="kafka-dr-broker-archive-") as folder:
            _warm_up(Path(folder))
        _check(jars, partial)
    except Exception:
        partial.unlink(missing_ok=True)
        raise
    finally:
        if saved is None:
            os.environ.pop(JVM_OPTS_ENV, None)
        else:
            os.environ[JVM_OPTS_ENV] = saved
    partial.replace(target)  # atomic: a broker never maps a half-written archive
    for old in target.parent.glob("kafka-broker-*-classes.jsa"):
        if old != target:
            old.unlink(missing_ok=True)
    return target


def _warm_up(folder: Path) -> None:
    """A one-broker lab that creates a topic, commits a transaction and reads it, then stops
    cleanly (the archive is written as the JVM exits)."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafka_dr.lab.lab import Lab

    lab = Lab(folder)
    lab.up(count=1, base_port=WARM_UP_PORT)
    try:
        quiet = {"bootstrap.servers": lab.clusters()[0].direct, "log_level": 0}
        admin = AdminClient(quiet)
        for fut in admin.create_topics([NewTopic("warm-up", 1, 1)]).values():
            fut.result(30)
        producer = Producer({**quiet, "transactional.id": "warm-up"})
        producer.init_transactions(60)
        producer.begin_transaction()
        producer.produce("warm-up", b"v", b"k", headers=[("h", b"1")])
        producer.commit_transaction(30)
        consumer = Consumer({**quiet, "group.id": "warm-up", "isolation.level": "read_committed"})
        consumer.assign([TopicPartition("warm-up", 0, 0)])
        read = consumer.consume(1, timeout=30)
        consumer.close()
        del producer  # its threads end before the broker does
        if not read or read[0].error():
            raise RuntimeError("broker class archive: the warm-up read nothing back")
    finally:
        lab.down(wipe=True)


def _check(jars: Path, archive: Path) -> None:
    """A JVM maps it (``-Xshare:on`` fails when it cannot)."""
    command = [
        _java(),
        "-Xshare:on",
        f"-XX:SharedArchiveFile={archive}",
        "-cp",
        f"{jars}/*",
        "kafka.Kafka",
        "--version",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        raise RuntimeError(f"broker class archive: a JVM cannot map it:\n{tail}")


if __name__ == "__main__":
    print(f"kafka broker class archive: {ensure_archive()}")

"""The client-quota helper is compiled once into the cache and run from there; a JDK without
``javac`` runs it from source. Either way it sets and reads quotas on the lab's brokers.

Each case runs kafka-dr in a process of its own, with its cache (``$KAFKA_DR_CACHE``) in a
fresh folder that links the host cache's jar folders (nothing is downloaded again) and, for
the second, a ``PATH`` whose ``java`` has no ``javac`` beside it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from kafka_dr.cache import cache_root

#: sets a producer quota on east, reads it back, deletes it, reads again; prints what it read
SCRIPT = """
import json, sys
from kafka_dr.core.config_load import load_config
from kafka_dr.kafka import client_quotas
cfg = load_config(sys.argv[1])
quota = ((("client-id", sys.argv[2]),), "producer_byte_rate")
client_quotas.alter_quotas(cfg, "east", {quota: 1024.0}, ())
set_to = client_quotas.describe_quotas(cfg, "east").get(quota)
client_quotas.alter_quotas(cfg, "east", {}, [quota])
print(json.dumps({"set": set_to, "after_delete": quota in client_quotas.describe_quotas(cfg, "east")}))
"""


def _cache_with_the_jars(tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    cache.mkdir()
    for entry in cache_root().iterdir():
        if entry.is_dir() and not entry.name.startswith("client-quotas-"):
            (cache / entry.name).symlink_to(entry)
    return cache


def _set_read_delete(lab_config, client_id: str, env: dict) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(lab_config.source_path), client_id],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"set": 1024.0, "after_delete": False}


def test_the_helper_is_compiled_once_and_answers_from_the_cache(lab_config, tmp_path):
    cache = _cache_with_the_jars(tmp_path)
    env = {**os.environ, "KAFKA_DR_CACHE": str(cache)}
    _set_read_delete(lab_config, "compiled-helper", env)
    (folder,) = cache.glob("client-quotas-*")
    built = (folder / "ClientQuotas.class").stat().st_mtime_ns
    assert not [p for p in cache.iterdir() if p.name.startswith(folder.name + ".")]  # no work folder left
    _set_read_delete(lab_config, "compiled-helper-again", env)
    assert list(cache.glob("client-quotas-*")) == [folder]
    assert (folder / "ClientQuotas.class").stat().st_mtime_ns == built  # not compiled again


def test_a_jdk_without_javac_runs_the_helper_from_source(lab_config, tmp_path):
    cache = _cache_with_the_jars(tmp_path)
    only_java = tmp_path / "jre"
    only_java.mkdir()
    java = only_java / "java"
    java.write_text(f'#!/bin/sh\nexec {shutil.which("java")} "$@"\n')
    java.chmod(0o755)
    env = {**os.environ, "KAFKA_DR_CACHE": str(cache), "PATH": f"{only_java}:/usr/bin:/bin"}
    _set_read_delete(lab_config, "helper-from-source", env)
    assert not list(cache.glob("client-quotas-*"))  # nothing compiled


def test_one_helper_run_reads_each_clusters_own_quotas(lab_config, topic_name):
    from kafka_dr.kafka import client_quotas

    quota = ((("client-id", topic_name),), "producer_byte_rate")
    client_quotas.alter_quotas(lab_config, "east", {quota: 1024.0}, ())
    client_quotas.alter_quotas(lab_config, "west", {quota: 2048.0}, ())
    try:
        each = client_quotas.describe_each(lab_config, ["west", "east"])
    finally:
        for cluster in ("east", "west"):
            client_quotas.alter_quotas(lab_config, cluster, {}, [quota])
    assert (each["east"][quota], each["west"][quota]) == (1024.0, 2048.0)

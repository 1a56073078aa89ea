"""The client-quota helper is compiled once into the cache and run from there; a JDK without
``javac`` runs it from source. Either way it sets and reads quotas on the lab's brokers."""

from __future__ import annotations

import shutil

from kafka_dr.kafka import client_quotas
from kafka_dr.kafka.jvm import client_jars


def _set_read_delete(cfg, client_id: str) -> None:
    quota = ((("client-id", client_id),), "producer_byte_rate")
    client_quotas.alter_quotas(cfg, "east", {quota: 1024.0}, ())
    assert client_quotas.describe_quotas(cfg, "east").get(quota) == 1024.0
    client_quotas.alter_quotas(cfg, "east", {}, [quota])
    assert quota not in client_quotas.describe_quotas(cfg, "east")


def test_the_helper_is_compiled_once_and_answers_from_the_cache(lab_config, tmp_path, monkeypatch):
    monkeypatch.setattr(client_quotas, "cache_root", lambda: tmp_path / "cache")  # the jars stay where they are
    java, jars = shutil.which("java"), [str(j) for j in client_jars()]
    folder = client_quotas._compiled(java, jars)
    assert folder is not None and (folder / "ClientQuotas.class").is_file()
    built = (folder / "ClientQuotas.class").stat().st_mtime_ns
    assert client_quotas._compiled(java, jars) == folder
    assert (folder / "ClientQuotas.class").stat().st_mtime_ns == built  # not compiled again
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no work folder left behind
    _set_read_delete(lab_config, "compiled-helper")


def test_a_jdk_without_javac_runs_the_helper_from_source(lab_config, tmp_path, monkeypatch):
    monkeypatch.setattr(client_quotas, "cache_root", lambda: tmp_path / "cache")
    only_java = tmp_path / "jre"
    only_java.mkdir()
    java = only_java / "java"
    java.write_text(f'#!/bin/sh\nexec {shutil.which("java")} "$@"\n')
    java.chmod(0o755)
    assert client_quotas._compiled(str(java), [str(j) for j in client_jars()]) is None
    monkeypatch.setenv("PATH", f"{only_java}:/usr/bin:/bin")
    _set_read_delete(lab_config, "helper-from-source")
    assert not (tmp_path / "cache").exists()  # nothing compiled

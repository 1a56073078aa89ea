"""The driver's class archive is added to a job's JVM options only when it exists and the
options leave class sharing alone."""

from __future__ import annotations

import os

from kafka_dr.spark import class_archive
from kafka_dr.spark.class_archive import DRIVER_OPTIONS, archive_file, with_class_archive


def test_an_existing_archive_is_added_after_the_drivers_own_options(tmp_path):
    archive = tmp_path / "spark.jsa"
    archive.write_bytes(b"jsa")
    conf = {DRIVER_OPTIONS: "-XX:+UseSerialGC", "spark.master": "local[2]"}
    out = with_class_archive(conf, archive)
    assert out == {DRIVER_OPTIONS: f"-XX:+UseSerialGC -XX:SharedArchiveFile={archive}", "spark.master": "local[2]"}
    assert conf[DRIVER_OPTIONS] == "-XX:+UseSerialGC"  # the caller's settings are not changed
    assert with_class_archive({}, archive) == {DRIVER_OPTIONS: f"-XX:SharedArchiveFile={archive}"}


def test_no_archive_leaves_the_options_as_they_are(tmp_path):
    conf = {DRIVER_OPTIONS: "-XX:+UseSerialGC"}
    assert with_class_archive(conf, tmp_path / "missing.jsa") == conf
    assert with_class_archive({}, tmp_path / "missing.jsa") == {}


def test_options_that_set_class_sharing_themselves_are_the_operators(tmp_path):
    archive = tmp_path / "spark.jsa"
    archive.write_bytes(b"jsa")
    for own in ("-Xshare:off", "-XX:SharedArchiveFile=/opt/mine.jsa", "-XX:ArchiveClassesAtExit=/tmp/x.jsa"):
        conf = {DRIVER_OPTIONS: f"-Xmx2g {own}"}
        assert with_class_archive(conf, archive) == conf


def test_each_pyspark_install_has_an_archive_of_its_own(tmp_path, monkeypatch):
    """A JVM maps an archive only with the classpath it was made with: a second virtualenv's
    pyspark must not find the first one's archive."""
    monkeypatch.setenv("KAFKA_DR_CACHE", str(tmp_path))
    one, two = archive_file(tmp_path / "a" / "pyspark"), archive_file(tmp_path / "b" / "pyspark")
    assert one != two and one.parent == two.parent == tmp_path
    assert archive_file() == archive_file()  # this install's, found without importing pyspark


def test_a_virtualenv_made_again_at_the_same_path_gets_a_new_archive(tmp_path, monkeypatch):
    """A JVM refuses an archive whose jars changed size or modification time ("A jar file is
    not the one used while building the shared archive file"): a reinstall must not find it."""
    monkeypatch.setenv("KAFKA_DR_CACHE", str(tmp_path / "cache"))
    jars = tmp_path / "pyspark" / "jars"
    jars.mkdir(parents=True)
    (jars / "slf4j-api.jar").write_bytes(b"one")
    first = archive_file(jars.parent)
    assert archive_file(jars.parent) == first
    os.utime(jars / "slf4j-api.jar", ns=(1, 1))
    reinstalled = archive_file(jars.parent)
    assert reinstalled != first and reinstalled.parent == first.parent


def test_an_install_keeps_only_the_archive_of_its_current_jars(tmp_path):
    made = [tmp_path / f"spark-4.0.1-aaaa1111-{tag}-classes.jsa" for tag in ("00000000", "11111111")]
    other_install = tmp_path / "spark-4.0.1-bbbb2222-00000000-classes.jsa"
    for archive in (*made, other_install):
        archive.write_bytes(b"jsa")
    class_archive._remove_stale(made[1])
    assert sorted(tmp_path.iterdir()) == sorted([made[1], other_install])

"""The wheelhouse of sdist-only dependencies: which pins it reads, and that a pinned wheel already
there is taken without running pip."""

from __future__ import annotations

import pytest

from kafka_dr.lab import wheelhouse


def test_pinned_reads_only_the_sdist_only_pins(tmp_path):
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("# pins\napache-airflow==3.3.0\npyspark==4.2.0\npyspark-client==4.2.0\npysparkling==0.6.2\n")
    assert wheelhouse.pinned(constraints) == ["pyspark==4.2.0", "pyspark-client==4.2.0"]


def test_present_matches_a_wheel_of_the_pinned_version_by_its_normalised_name(tmp_path):
    (tmp_path / "pyspark_client-4.2.0-py2.py3-none-any.whl").write_bytes(b"")
    assert wheelhouse._present(tmp_path, "pyspark-client==4.2.0")
    assert not wheelhouse._present(tmp_path, "pyspark-client==4.2.1")
    assert not wheelhouse._present(tmp_path, "pyspark==4.2.0")


def test_a_range_is_never_taken_as_present(tmp_path):
    (tmp_path / "pyspark-4.2.1-py2.py3-none-any.whl").write_bytes(b"")
    assert not wheelhouse._present(tmp_path, "pyspark>=4.2,<4.3")


def test_ensure_runs_no_pip_when_every_pinned_wheel_is_there(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_DR_CACHE", str(tmp_path))
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "pyspark-4.2.0-py2.py3-none-any.whl").write_bytes(b"")
    # a Python that cannot run: any pip call would fail the test
    assert wheelhouse.ensure(["pyspark==4.2.0"], python=str(tmp_path / "no-python")) == tmp_path / "wheels"


def test_a_failed_build_names_the_requirement(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_DR_CACHE", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"^pip wheel pyspark==0\.0\.0\.dev0 failed"):
        wheelhouse.ensure(["pyspark==0.0.0.dev0"], python="/bin/false")
    assert not list((tmp_path / "wheels").glob("*.whl"))


def test_the_command_ends_with_one_line_naming_a_missing_constraints_file(tmp_path, capsys):
    assert wheelhouse.main([str(tmp_path / "nope.txt")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("wheelhouse: ") and "nope.txt" in err[-1]

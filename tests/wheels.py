"""Wheels of kafka-dr for the tests that install it: this checkout's, and a release's from the
git history, each built the way a release is (``python -m build``) from a copy of its tree, and
virtualenvs that hold one."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
from functools import cache
from pathlib import Path

from packaging.requirements import Requirement

from kafka_dr.lab import wheelhouse

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def copy_checkout(dest: Path) -> Path:
    """This checkout's tree without the lab, the venv and build leftovers: a build writes into
    its source tree (build/), and the suite's other tests read this checkout meanwhile."""
    shutil.copytree(
        REPO,
        dest,
        symlinks=True,
        ignore=shutil.ignore_patterns(".venv", ".lab*", ".git", "__pycache__", "*.egg-info", "build", "dist"),
    )
    return dest


def release_commit(version: str) -> str:
    """The last commit whose pyproject.toml says ``version = "<version>"`` (a release's tree
    before the next version's first change)."""
    line = f'version = "{version}"'
    shallow = subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"], cwd=REPO, capture_output=True, text=True, check=True
    )
    if shallow.stdout.strip() == "true":  # a CI checkout of one commit: the releases are in its origin's history
        subprocess.run(["git", "fetch", "--quiet", "--unshallow"], cwd=REPO, check=True, timeout=300)
    changed = subprocess.run(
        ["git", "log", "-1", "--format=%H", f"-S{line}", "--", "pyproject.toml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert changed, f"no commit in this clone's history sets {line} (a shallow clone?)"
    for commit in (changed, f"{changed}^"):
        text = subprocess.run(
            ["git", "show", f"{commit}:pyproject.toml"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout
        if line in text.splitlines():
            return commit
    raise AssertionError(f"{changed} neither sets nor removes {line}")


def release_tree(version: str, dest: Path) -> Path:
    """Release ``version``'s tree from the git history, unpacked in ``dest``."""
    archive = subprocess.run(["git", "archive", release_commit(version)], cwd=REPO, capture_output=True, check=True)
    dest.mkdir(parents=True)
    tarfile.open(fileobj=io.BytesIO(archive.stdout)).extractall(dest, filter="data")
    return dest


def build(source: Path, out: Path, *kinds: str) -> None:
    """``python -m build`` of ``source`` into ``out`` (``--wheel``, ``--sdist`` or both)."""
    proc = subprocess.run(
        [str(BIN / "python"), "-m", "build", "--no-isolation", *kinds, "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


@cache
def sdist_wheels() -> Path:
    """The host's wheelhouse (kafka_dr/lab/wheelhouse.py) holding pyspark's wheels at the
    versions constraints.txt pins and at the newest in pyproject.toml's ranges: an install with
    other pins than the lab's resolves the latter."""
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    ranges = [d for d in declared if Requirement(d).name in wheelhouse.SDIST_ONLY]
    return wheelhouse.ensure(wheelhouse.pinned(REPO / "constraints.txt") + ranges, python=str(BIN / "python"))


def uv_install(venv: Path) -> list[str]:
    """``uv pip install`` into ``venv`` (no pip needed in it), taking pyspark's wheels from the
    host's wheelhouse rather than building them from their sdists."""
    python, wheels = str(venv / "bin" / "python"), str(sdist_wheels())
    return [str(BIN / "uv"), "pip", "install", "-q", "--python", python, "--find-links", wheels]


def install(venv: Path, *requirements: str, timeout: float = 900) -> None:
    """``uv pip install`` into ``venv`` with the lab's constraints."""
    proc = subprocess.run(
        uv_install(venv) + [*requirements, "-c", str(REPO / "constraints.txt")],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def python_for(minor: str) -> str:
    """An interpreter of Python ``minor`` on this machine: ``python<minor>`` on PATH, else
    pyenv's (its shims are on PATH but answer only for the versions it has active)."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates = [shutil.which(f"python{minor}"), *sorted(map(str, root.glob(f"versions/{minor}.*/bin/python{minor}")))]
    for c in filter(None, candidates):
        if subprocess.run([c, "-c", "pass"], capture_output=True, timeout=60).returncode == 0:
            return c
    raise AssertionError(f"no Python {minor} on this machine (python{minor} on PATH or under {root}/versions)")

"""Wheels of the lab's sdist-only dependencies, built once per host: ``$KAFKA_DR_CACHE/wheels``
(default ``~/.cache/kafka-dr/wheels``).

pyspark and pyspark-client are published as sdists only. uv keeps a built wheel only as long as
its cached download of the sdist is fresh, and a package index that answers every revalidation
"modified" makes it download and build pyspark again on every install into a new virtualenv
(about 25 s of CPU and 2 GB of uv's cache each). An install given ``--find-links`` to this folder
takes the wheel of the same version instead. ``make setup`` fills it with the versions
constraints.txt pins; tests that resolve the newest versions in pyproject.toml's ranges add
those (:func:`ensure`).

Run as ``python -m kafka_dr.lab.wheelhouse <constraints file>`` it needs no installed package
(``make setup`` runs it before the virtualenv holds kafka-dr) and prints the folder.
"""

from __future__ import annotations

import fcntl
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from kafka_dr.cache import cache_root

#: the dependencies published without a wheel
SDIST_ONLY = ("pyspark", "pyspark-client")


def wheelhouse() -> Path:
    return cache_root() / "wheels"


def pinned(constraints: Path) -> list[str]:
    """The ``name==version`` lines of a constraints file for :data:`SDIST_ONLY`."""
    names = "|".join(map(re.escape, SDIST_ONLY))
    return [
        line.strip()
        for line in constraints.read_text().splitlines()
        if re.fullmatch(rf"(?:{names})==[\w.]+", line.strip())
    ]


def ensure(requirements: list[str], python: str = sys.executable) -> Path:
    """The wheelhouse, holding a wheel for each requirement (``pyspark==4.2.0`` or a range such as
    ``pyspark>=4.2,<4.3``, which pip resolves to its newest version). ``pip wheel`` takes a wheel
    already there and builds only what is missing; processes on one host build one at a time."""
    house = wheelhouse()
    house.mkdir(parents=True, exist_ok=True)
    missing = [r for r in requirements if not _present(house, r)]
    if not missing:
        return house
    with open(house / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for requirement in missing:  # one at a time: pip would merge two of one name into one
            _build(requirement, house, python)
    return house


def _build(requirement: str, house: Path, python: str) -> None:
    # built beside the wheelhouse and moved in whole: a concurrent install never sees half a wheel
    with tempfile.TemporaryDirectory(dir=house.parent) as out:
        proc = subprocess.run(
            [python, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-cache-dir", "--no-deps"]
            + ["--find-links", str(house), "--wheel-dir", out, requirement],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if proc.returncode != 0:
            why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            raise RuntimeError(f"pip wheel {requirement} failed: {why}")
        for wheel in Path(out).glob("*.whl"):
            if not (house / wheel.name).exists():
                wheel.replace(house / wheel.name)


def _present(house: Path, requirement: str) -> bool:
    """Whether a pinned requirement's wheel is already there (a range always asks pip)."""
    name, sep, version = requirement.partition("==")
    return bool(sep) and any(house.glob(f"{name.replace('-', '_')}-{version}-*.whl"))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m kafka_dr.lab.wheelhouse <constraints file>", file=sys.stderr)
        return 2
    try:
        print(ensure(pinned(Path(argv[0]))))
    except (OSError, RuntimeError) as e:
        print(f"wheelhouse: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

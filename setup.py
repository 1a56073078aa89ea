"""The wheel ships, inside the package (``kafka_dr/_shipped/``), the top-level folders a
deployment needs beside the library: setuptools' package data only takes files that live
inside a package, and the repository keeps them at the top (``kafka_dr/shipped.py`` names
them and finds them in either place)."""

import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "plugins"))
from kafka_dr.shipped import FOLDERS  # noqa: E402 - the list lives with the code that reads it


class BuildWithShippedFolders(build_py):
    def run(self) -> None:
        super().run()
        for name in FOLDERS:
            shutil.copytree(
                ROOT / name,
                Path(self.build_lib) / "kafka_dr" / "_shipped" / name,
                dirs_exist_ok=True,
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
            )


# setuptools writes its metadata beside the package by default (plugins/), which is on
# sys.path in the lab: Airflow would find kafka-dr's entry points twice. build/ instead.
Path("build").mkdir(exist_ok=True)  # relative, as egg_base is: where the build runs
setup(cmdclass={"build_py": BuildWithShippedFolders}, options={"egg_info": {"egg_base": "build"}})

"""The files a deployment needs beside the library: the DAG files, the Spark jobs' entry
scripts, the GX suites, the example configs and the monitoring files (Prometheus alert rules,
the Grafana dashboard).

In a checkout they are the repository's top-level folders (``dags/``, ``spark_jobs/``,
``expectations/``, ``examples/``, ``monitoring/``); the wheel's build copies them into the package
(``kafka_dr/_shipped/``), so an installed kafka-dr finds them there. One place decides.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
#: the folders the build ships inside the package (setup.py reads this list)
FOLDERS = ("dags", "spark_jobs", "expectations", "examples", "monitoring")


def folder(name: str) -> Path:
    """Where ``name`` (one of :data:`FOLDERS`) is: inside the installed package, else the checkout's."""
    if name not in FOLDERS:
        raise ValueError(f"not a shipped folder: {name!r} (one of {', '.join(FOLDERS)})")
    inside = PACKAGE / "_shipped" / name
    return inside if inside.is_dir() else PACKAGE.parents[1] / name


def spark_job(name: str) -> Path:
    """A Spark job's entry script (``replicate.py``, ``data_quality.py``) for spark-submit."""
    return folder("spark_jobs") / name

"""The driver JVM's options for the replication job in local mode, for the job's own session
(``kafka-dr replicate``, the bench) and the DAG's spark-submit alike.

Kept apart from :mod:`kafka_dr.spark.job` so the DAG files import nothing heavy.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

#: The replication job's driver JVM options when Spark runs in local mode (the driver is then
#: the executor too) and ``spark.conf`` sets none of its own. The JVM's work in this job is
#: small (planning, Python worker I/O); the copy is Python and librdkafka, so the JVM's C2
#: compiler and concurrent collector threads only take cores from it (docs/benchmarks.md).
LOCAL_DRIVER_JAVA_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"


def driver_java_options(master: str | None, conf: Mapping[str, str]) -> dict[str, str]:
    """``{"spark.driver.extraJavaOptions": LOCAL_DRIVER_JAVA_OPTIONS}`` for a local master
    unless ``conf`` sets the key; else nothing (a cluster's driver JVM is the operator's, and
    with no master given spark-submit has started the JVM already)."""
    local = master is not None and (master == "local" or master.startswith("local["))
    return (
        {"spark.driver.extraJavaOptions": LOCAL_DRIVER_JAVA_OPTIONS}
        if local and "spark.driver.extraJavaOptions" not in conf
        else {}
    )


def bin_first_path(path: str | None) -> str:
    """``path`` with this interpreter's folder first (once: a PATH that starts with it is kept)."""
    bin_dir = str(Path(sys.executable).parent)
    path = path or "/usr/bin:/bin"
    return path if path.split(":", 1)[0] == bin_dir else f"{bin_dir}:{path}"


def spark_submit_env() -> dict[str, str]:
    """What a spark-submit child needs from this interpreter: Spark's Python workers must be it
    (it has the package installed), and ``spark-submit`` must be found beside it (the pyspark
    package next to it is its SPARK_HOME)."""
    return {"PYSPARK_PYTHON": sys.executable, "PATH": bin_first_path(os.environ.get("PATH"))}

"""What a job's executors need from its driver when they are JVMs of their own (a cluster
master), as Spark settings for :func:`kafka_dr.spark.job.spark_session`.

- **Secrets.** Executors do not inherit the driver's environment, so the variables the
  clusters' secret references resolve from (``${env:NAME}``, and ``KAFKA_DR_SECRET_*`` for
  ``${airflow:...}``, which the Airflow operator hands to spark-submit) are passed on as
  ``spark.executorEnv.<NAME>``, and their names join Spark's redaction pattern so its UI and
  event log show them masked. In local mode the same settings change nothing.
- **One attempt per task.** Speculative execution would run a second attempt of a streaming
  task beside the first: two copiers of one transactional id, fencing each other for the
  whole task. It stays off whatever the cluster's defaults say.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kafka_dr.core.config import DrConfig
from kafka_dr.core.secret_refs import config_refs, ref_env_name

#: Spark's own default for ``spark.redaction.regex``, extended by the secrets' names
SPARK_REDACTION = r"(?i)secret|password|token|access[.]?key"

#: settings a job always runs with, after the config's own (see the module docstring)
FIXED = {"spark.speculation": "false"}


def secret_env_names(cfg: DrConfig) -> list[str]:
    """The environment variables the clusters' client settings resolve secrets from, in order."""
    names = []
    for cluster in cfg.clusters.values():
        for ref in config_refs(cluster.client):
            name = ref.name if ref.source == "env" else ref_env_name(ref)
            if name not in names:
                names.append(name)
    return names


def executor_secrets(cfg: DrConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """``spark.executorEnv.<NAME>`` for each of :func:`secret_env_names` set in ``environ``, and
    the redaction pattern that masks them; nothing when the config refers to no secret. A
    variable that is not set stays unset: the executor's resolver then names it."""
    names = [n for n in secret_env_names(cfg) if n in environ]
    if not names:
        return {}
    return {
        **{f"spark.executorEnv.{n}": environ[n] for n in names},
        "spark.redaction.regex": "|".join([SPARK_REDACTION, *(re.escape(n) for n in names)]),
    }

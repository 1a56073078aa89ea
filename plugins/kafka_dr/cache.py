"""Where kafka-dr keeps what it fetches or builds once per host: ``$KAFKA_DR_CACHE``, default
``~/.cache/kafka-dr`` (Kafka's jars, the Spark driver's class archive)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("KAFKA_DR_CACHE", Path.home() / ".cache" / "kafka-dr"))

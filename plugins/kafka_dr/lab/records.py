"""The lab services' JSON records (pids, start times, ports): read as empty when missing or
torn, replaced atomically so a reader never sees half a record."""

from __future__ import annotations

import json
from pathlib import Path


def read_record(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def write_record(path: Path, doc: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=2))
    tmp.replace(path)

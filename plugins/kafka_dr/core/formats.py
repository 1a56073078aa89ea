"""The format version of kafka-dr's internal records (pure).

Every JSON record kafka-dr writes to its internal topics and commit metadata carries
``"fmt": FORMAT``. A record without it was written before formats were versioned: format 1,
read as before. A record of a newer format was written by a newer kafka-dr (a deployment
upgraded on some hosts only): a reader does not guess at it, it stops with one line naming what
it read and both versions. A format changes only with a change a reader of the previous one
would misread; added fields a reader ignores are no new format.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FORMAT = 1
FIELD = "fmt"


class NewerFormat(RuntimeError):
    """A record written in a format this kafka-dr does not read (exit 1: upgrade it)."""


def stamped(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` with this version's format."""
    return {**record, FIELD: FORMAT}


def readable(record: Mapping[str, Any], what: str) -> Mapping[str, Any]:
    """``record`` when this version reads its format; raises :class:`NewerFormat` naming
    ``what`` (the topic, or the group whose commit it is) otherwise."""
    fmt = record.get(FIELD, 1)
    if isinstance(fmt, int) and not isinstance(fmt, bool) and 1 <= fmt <= FORMAT:
        return record
    from kafka_dr import __version__

    raise NewerFormat(
        f"{what}: a record in format {fmt!r}, written by another kafka-dr; this one ({__version__}) reads "
        f"format {FORMAT} and older: run the same kafka-dr version on every host"
    )

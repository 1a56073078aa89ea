"""Which topic configs travel with a replicated topic.

The default exclusions follow MirrorMaker 2's ``DefaultConfigPropertyFilter``: settings that
describe the *cluster* a topic lives on (replica placement, throttles, in-sync replica
requirements) or that would rewrite records (``message.timestamp.*``: a target set to
LogAppendTime would overwrite the preserved timestamps) stay local. Users extend the list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

DEFAULT_EXCLUDES = (
    r"follower\.replication\.throttled\.replicas",
    r"leader\.replication\.throttled\.replicas",
    r"message\.timestamp\..*",
    r"min\.insync\.replicas",
    r"unclean\.leader\.election\.enable",
    r"confluent\..*",
)


def replicable_configs(configs: Mapping[str, str], extra_excludes: Iterable[str] = ()) -> dict[str, str]:
    """The subset of a source topic's explicitly set configs that the target should carry."""
    patterns = [re.compile(p) for p in (*DEFAULT_EXCLUDES, *extra_excludes)]
    return {k: v for k, v in configs.items() if not any(p.fullmatch(k) for p in patterns)}

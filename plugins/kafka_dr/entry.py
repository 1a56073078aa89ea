"""How every entry point ends: one clear line, last, and the exit code.

0 ok; 1 the operation failed (a refused record, a cluster that does not answer, a failed
check); 2 bad usage or an invalid config (nothing was changed). A Python traceback only with
``--debug``: the line names what failed and where, which is what an operator acts on.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable

USAGE = 2
FAILED = 1


def exit_code(error: BaseException) -> int:
    from kafka_dr.core.config_load import ConfigError
    from kafka_dr.core.inputs import InvalidInput

    return USAGE if isinstance(error, (ConfigError, InvalidInput)) else FAILED


def error_lines(prog: str, error: BaseException) -> list[str]:
    """What the user reads, the line that matters last. A config with several problems lists
    them first; errors of this package carry their own context, others get their type."""
    from kafka_dr.core.config_load import ConfigError

    if isinstance(error, ConfigError):
        if len(error.problems) == 1:
            return [f"{prog}: invalid config{f' {error.source}' if error.source else ''}: {error.problems[0]}"]
        return [f"  - {p}" for p in error.problems] + [
            f"{prog}: invalid config{f' {error.source}' if error.source else ''}: "
            f"{len(error.problems)} problems (listed above)"
        ]
    text = " ".join(str(error).split()) or type(error).__name__
    if not type(error).__module__.startswith("kafka_dr") and not isinstance(
        error, (RuntimeError, ValueError, OSError, TimeoutError)
    ):
        text = f"{type(error).__name__}: {text}"
    return [f"{prog}: {text}"]


def run_entry(prog: str, body: Callable[[], int], debug: bool = False) -> int:
    """Run ``body``; on an error print its lines to stderr (the traceback first with ``debug``)
    and return its exit code."""
    try:
        return body()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - the entry point's job is the one line
        if debug:
            traceback.print_exc()
        sys.stdout.flush()
        for line in error_lines(prog, e):
            print(line, file=sys.stderr)
        sys.stderr.flush()
        return exit_code(e)

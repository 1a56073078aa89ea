"""The game day's report: one row per fault, then one JSON line with every figure (pure)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field


@dataclass
class FaultRow:
    fault: str
    started_s: float  #: seconds after the traffic started
    healed_s: float | None = None  #: when the fault ended (a killed process restarted, the network back)
    detected_by: str = "-"  #: the alert that reported it, or "healed alone" when none was due
    alert_after_s: float | None = None
    flowing_again_after_s: float | None = None  #: from the fault's end to the first record copied after it
    lost: int = 0
    duplicated: int = 0
    notes: list[str] = field(default_factory=list)


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def table(rows: list[FaultRow]) -> str:
    head = f"{'fault':<30}{'at s':>6}  {'detected by':<24}{'alert after s':>14}{'flowing again after s':>23}"
    head += f"{'lost':>6}{'duplicated':>12}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.fault:<30}{r.started_s:>6.0f}  {r.detected_by:<24}{_s(r.alert_after_s):>14}"
            f"{_s(r.flowing_again_after_s):>23}{r.lost:>6}{r.duplicated:>12}"
        )
    return "\n".join(lines)


def json_line(rows: list[FaultRow], figures: dict) -> str:
    """The last line of the run: every figure, machine-readable."""
    return json.dumps({**figures, "faults": [asdict(r) for r in rows]}, sort_keys=True, default=str)

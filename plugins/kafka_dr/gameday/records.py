"""What the game day's apps did, kept in its folder for a check that trusts none of the game
day's own verdicts: ``produced.jsonl`` (every record the apps produced, its fate, and where the
cluster acknowledged it), ``reads.jsonl`` (every record the apps' consumer groups were handed)
and ``moves.json`` (when each group left one cluster for another). The clusters' data folders
stay beside them (:meth:`kafka_dr.gameday.deploy.Deployment.down` keeps them), so whoever
checks can start the lab again and read what both clusters hold."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from kafka_dr.gameday.model import LedgerView, Move, Read

PRODUCED, READS, MOVES = "produced.jsonl", "reads.jsonl", "moves.json"


def write_app_records(folder: Path, view: LedgerView, reads: Iterable[Read], moves: Iterable[Move]) -> None:
    with open(folder / PRODUCED, "w") as f:
        for fate in (view.acked, view.aborted, view.uncertain):
            for p in fate.values():
                f.write(json.dumps({k: v for k, v in p._asdict().items() if k != "error"}) + "\n")
    with open(folder / READS, "w") as f:
        for r in reads:
            f.write(json.dumps(r._asdict()) + "\n")
    (folder / MOVES).write_text(json.dumps([m._asdict() for m in moves], indent=1) + "\n")

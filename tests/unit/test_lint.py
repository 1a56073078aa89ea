"""The code base passes ruff (lint and format, configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUFF = [sys.executable, "-m", "ruff"]
PATHS = ["plugins", "spark_jobs", "dags", "tests"]


def test_ruff_lint_passes():
    proc = subprocess.run([*RUFF, "check", "--no-cache", *PATHS], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_ruff_format_leaves_every_file_unchanged():
    proc = subprocess.run([*RUFF, "format", "--no-cache", "--check", *PATHS], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]

"""A script run in a fresh interpreter: how the tests see what happens before anything is
imported (spaCy loaded by two threads at once, what rendering a summary imports)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_fresh(script: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`script` run by this Python in a new process, from the project root, with the project
    importable; its output captured as text (the exit status is the caller's to check)."""
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=timeout)

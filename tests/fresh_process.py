"""Run a check in a fresh interpreter: what a module imports, or leaves
unimported, is only seen in a process that has not imported it already."""
from __future__ import annotations

import os
import subprocess
import sys


def assert_passes_fresh(code: str) -> None:
    """Run ``code`` with ``python -c`` on this process's import path; it must
    exit 0 (its own asserts state what it checks)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]

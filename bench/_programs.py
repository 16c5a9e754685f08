"""Helpers shared by the bench scripts: where the golden programs live."""
from __future__ import annotations

import json
from pathlib import Path

PROGRAMS = Path(__file__).resolve().parents[1] / "tests" / "data" / "programs"


def largest_program() -> tuple[Path, str, dict]:
    """(source path, selector, dims) of the largest valid golden program by lines."""
    manifest = json.loads((PROGRAMS / "expected" / "manifest.json").read_text())
    entries = manifest["valid"]
    entry = max(entries, key=lambda e: len((PROGRAMS / e["source"]).read_text().splitlines()))
    return PROGRAMS / entry["source"], entry["selector"], entry["dims"]


_WARMED: list = []  # non-empty once the bytecode caches are written


def whole_process(args: list[str], repeat: int, cwd=None) -> tuple[float, int, str | None]:
    """(best wall seconds, exit code, last stderr line of a failing run) of
    `python -m tilefoundry ARGS` run ``repeat`` times; a failing run is not
    repeated."""
    import subprocess
    import sys
    import time

    best = float("inf")
    env = _installed_env()
    _warm(env)
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "tilefoundry", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, check=False)
        best = min(best, time.perf_counter() - start)
        if done.returncode != 0:
            return best, done.returncode, (done.stderr.strip().splitlines() or ["(no stderr)"])[-1]
    return best, 0, None


def instructions(args: list[str], cwd=None) -> tuple[int | None, str | None]:
    """(instructions executed, None) by `python -m tilefoundry ARGS` under
    valgrind's callgrind, or (None, why not). Unlike wall time the count is the
    same run after run (within 0.01%), whatever else the machine is doing: the
    figure to compare two versions by on a shared machine (~60x slower)."""
    import re
    import shutil
    import subprocess
    import sys
    import tempfile

    if shutil.which("valgrind") is None:
        return None, "valgrind is not installed (apt-get install valgrind)"
    env = _installed_env()
    _warm(env)  # the count must not include compiling the bytecode
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={folder}/out",
             sys.executable, "-m", "tilefoundry", *args],
            cwd=cwd, env=env, capture_output=True, text=True, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        return None, (done.stderr.strip().splitlines() or ["(no stderr)"])[-1]
    return int(found.group(1)), None


def _warm(env: dict) -> None:
    """Write the bytecode caches, once per bench run, before anything is measured."""
    import subprocess
    import sys

    if not _WARMED:
        subprocess.run([sys.executable, "-m", "tilefoundry", "--help"], env=env,
                       capture_output=True, check=False)
        _WARMED.append(True)


def _installed_env() -> dict:
    """The environment of an installed package: bytecode caches allowed (pip
    byte-compiles what it installs), kept in a folder of their own so the
    checkout stays clean. A PYTHONDONTWRITEBYTECODE=1 shell would otherwise
    time the compilation of every module on every run."""
    import os
    import tempfile

    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "tilefoundry-bench-pycache")
    return env


def manifest() -> dict:
    """The golden manifest: every command, binding and family the reference ran."""
    return json.loads((PROGRAMS / "expected" / "manifest.json").read_text())


def machine_note() -> str:
    """One line for a bench's output: the load average and how long a fixed
    pure-Python loop takes now, so figures taken on a shared or throttled
    machine can be compared with one another (scale by the loop's time)."""
    import os
    import time

    start = time.perf_counter()
    sum(i * i for i in range(3_000_000))
    return (f"machine: load average {os.getloadavg()[0]:.1f}; reference loop "
            f"{time.perf_counter() - start:.2f} s")

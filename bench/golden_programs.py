"""Benchmark: the whole-process time of every golden run, as the reference's
commands were written (programs/README "Command for every expected file"):
`tilefoundry analyze <families the reference ran> [--dim ...] file:Selector`,
run from tests/data/programs, best of N. Issue 9 asks for every golden program
at least 20x faster than the reference, whole process.

    python bench/golden_programs.py [--repeat N] [STEM-PREFIX ...]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _programs import PROGRAMS, machine_note, manifest, whole_process  # noqa: E402


def command(entry: dict) -> list[str]:
    dims = [arg for name, value in entry["dims"].items() for arg in ("--dim", f"{name}={value}")]
    families = [f"--{family}" for family in entry["families_ran"]]
    return ["analyze", *families, *dims, f"{entry['source']}:{entry['selector']}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("stems", nargs="*", help="only runs whose stem starts with one of these")
    opts = parser.parse_args()
    print(f"{'run':60s} {'families':>8s} {'exit':>4s} {'seconds':>8s}")
    total = 0.0
    for entry in manifest()["valid"]:
        if opts.stems and not entry["stem"].startswith(tuple(opts.stems)):
            continue
        seconds, code, _ = whole_process(command(entry), opts.repeat, cwd=PROGRAMS)
        total += seconds
        print(f"{entry['stem']:60s} {len(entry['families_ran']):8d} {code:4d} {seconds:8.3f}")
    print(f"total {total:.2f} s (best of {opts.repeat} each; load average {os.getloadavg()[0]:.1f})")
    print(machine_note())
    return 0


if __name__ == "__main__":
    sys.exit(main())

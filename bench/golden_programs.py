"""Benchmark: the whole-process time of every golden run, as the reference's
commands were written (programs/README "Command for every expected file"):
`tilefoundry analyze <families the reference ran> [--dim ...] file:Selector`,
run from tests/data/programs, best of N. Issue 9 asks for every golden program
at least 20x faster than the reference, whole process.

    python bench/golden_programs.py [--repeat N] [--baseline FILE] [STEM-PREFIX ...]

``--baseline FILE`` reads an earlier run's output (this script's own text,
saved with ``> FILE``) and adds a column: the earlier seconds over this run's,
per program and in total (above 1: faster now). Both runs' reference-loop
figures are printed, since a shared machine's speed moves between runs.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _programs import PROGRAMS, machine_note, manifest, whole_process  # noqa: E402


def command(entry: dict) -> list[str]:
    dims = [arg for name, value in entry["dims"].items() for arg in ("--dim", f"{name}={value}")]
    families = [f"--{family}" for family in entry["families_ran"]]
    return ["analyze", *families, *dims, f"{entry['source']}:{entry['selector']}"]


ROW = re.compile(r"^(\S+)\s+\d+\s+-?\d+\s+(\d+\.\d+)(\s|$)")


def read_baseline(path: str) -> tuple[dict[str, float], str | None]:
    """(stem -> seconds, its machine line) of an earlier run's printed output."""
    seconds, machine = {}, None
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        row = ROW.match(line)
        if row:
            seconds[row.group(1)] = float(row.group(2))
        elif line.startswith("machine:"):
            machine = line
    return seconds, machine


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", metavar="FILE", help="an earlier run's output: add a ratio column")
    parser.add_argument("stems", nargs="*", help="only runs whose stem starts with one of these")
    opts = parser.parse_args()
    baseline, baseline_machine = read_baseline(opts.baseline) if opts.baseline else ({}, None)
    ratio_head = f" {'x base':>7s}" if opts.baseline else ""
    print(f"{'run':60s} {'families':>8s} {'exit':>4s} {'seconds':>8s}{ratio_head}")
    total = total_before = total_now = 0.0
    for entry in manifest()["valid"]:
        if opts.stems and not entry["stem"].startswith(tuple(opts.stems)):
            continue
        seconds, code, _ = whole_process(command(entry), opts.repeat, cwd=PROGRAMS)
        total += seconds
        ratio = ""
        if opts.baseline:
            before = baseline.get(entry["stem"])
            ratio = f" {before / seconds:7.2f}" if before else f" {'-':>7s}"
            if before:
                total_before, total_now = total_before + before, total_now + seconds
        print(f"{entry['stem']:60s} {len(entry['families_ran']):8d} {code:4d} {seconds:8.3f}{ratio}")
    print(f"total {total:.2f} s (best of {opts.repeat} each; load average {os.getloadavg()[0]:.1f})")
    note = machine_note()
    if total_now:
        print(f"baseline total {total_before:.2f} s over {total_now:.2f} s now: x{total_before / total_now:.2f}")
        print(f"baseline {baseline_machine or 'machine: (no machine line)'}")
        loops = [_loop_seconds(baseline_machine), _loop_seconds(note)]
        if all(loops):  # each run's seconds in its own machine's reference loops
            print(f"scaled by the reference loops: x{(total_before / loops[0]) / (total_now / loops[1]):.2f}")
    print(note)
    return 0


def _loop_seconds(machine_line: str | None) -> float | None:
    found = re.search(r"reference loop (\d+\.\d+) s", machine_line or "")
    return float(found.group(1)) if found and float(found.group(1)) > 0 else None


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: a 16-point `--dim` sweep of a zoo decoder layer, whole process (issue 12).

Runs
    tilefoundry analyze --compute-cost --memory --roofline --performance
        --dim ctx_len=V1,...,V16 --csv SOURCE:Llama3_8B.layer0
and the same command with the first extent alone, each as a subprocess, best of
3 (default). Every point is its own analyze (no records carried between points),
while loading and parsing happen once, so the time per point after the first is
(sweep - one point) / 15. Goal: <= 0.1 s per point after the first.

Run: python bench/sweep.py [--repeat N]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _programs import machine_note, whole_process  # noqa: E402

GOAL_S = 0.1
POINTS = 16
MODEL = "llama3-8b"  # its decoder layer tiles ctx_len in [128, 8193) by 128
STEP = 256  # ctx_len = 256, 512, ..., 4096
FAMILIES = ["--compute-cost", "--memory", "--roofline", "--performance"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    from tilefoundry.models import model_named

    model = model_named(MODEL)
    selection = next(s for s in model.selections if s.selector == f"{model.root}.layer0")
    source = model.source_arg(selection)
    dim = selection.dim_args()[1].split("=")[0]
    extents = [STEP * k for k in range(1, POINTS + 1)]
    sweep = ["analyze", *FAMILIES, "--csv", "--dim", f"{dim}=" + ",".join(map(str, extents)), source]
    single = ["analyze", *FAMILIES, "--dim", f"{dim}={extents[0]}", source]
    one, _, error_one = whole_process(single, args.repeat)
    many, _, error_many = whole_process(sweep, args.repeat)
    if error_one or error_many:
        print(f"error: {error_one or error_many}")
        return 1
    per_point = (many - one) / (len(extents) - 1)
    print(f"model {model.name} selection {selection.selector} {dim}={extents[0]}..{extents[-1]} "
          f"({len(extents)} points), families all four")
    print(f"one point (whole process)     {one:.3f} s")
    print(f"{len(extents)} points (whole process)    {many:.3f} s")
    print(f"per point after the first     {per_point:.3f} s  (goal <= {GOAL_S} s: "
          f"{'ok' if per_point <= GOAL_S else 'slow'})")
    print(machine_note())
    return 0


if __name__ == "__main__":
    sys.exit(main())

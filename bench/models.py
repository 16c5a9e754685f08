"""Benchmark: whole-process time of analysing each zoo model's layer0 (issue 9 item 11).

For every model of `tilefoundry models`, runs
    tilefoundry analyze --compute-cost --memory --roofline --performance [--dim ...] SOURCE:Root.layer0
as a subprocess, best of 5 (default) taken round-robin over the models, and
prints a table: model, selection, dims,
best wall time, whether it meets the 0.5 s goal. A failing run prints its error line.

Run: python bench/models.py [--repeat N] [--all]   (--all: every registered selection)
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _programs import machine_note, whole_process  # noqa: E402

GOAL_S = 0.5
FAMILIES = ["--compute-cost", "--memory", "--roofline", "--performance"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--all", action="store_true", help="every selection, not only layer0")
    args = parser.parse_args(argv)

    from tilefoundry.models import MODELS

    runs = [(model, selection) for model in MODELS for selection in model.selections
            if args.all or selection.selector == f"{model.root}.layer0"]
    best = [float("inf")] * len(runs)
    errors: list = [None] * len(runs)
    # round-robin rather than each run's repeats back to back: this machine's
    # speed drifts over seconds, and a slow spell should not fall on one model
    for _ in range(args.repeat):
        for k, (model, selection) in enumerate(runs):
            args_ = ["analyze", *FAMILIES, *selection.dim_args(), model.source_arg(selection)]
            seconds, _, error = whole_process(args_, 1)
            best[k] = min(best[k], seconds)
            errors[k] = errors[k] or error
    rows = []
    for (model, selection), seconds, error in zip(runs, best, errors):
        verdict = "error" if error else ("ok" if seconds <= GOAL_S else "slow")
        rows.append((model.name, selection.selector, " ".join(selection.dim_args()),
                     f"{seconds:.3f}", verdict, error or ""))
    header = ("model", "selection", "dims", "best_s", f"<= {GOAL_S}s", "")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(5)]
    for row in [header] + rows:
        print("  ".join(c.ljust(widths[i]) if i < 5 else c for i, c in enumerate(row)).rstrip())
    print(machine_note())
    return 1 if any(r[4] == "error" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Issue 23 speed target: the whole-model decode step of Llama-3-8B placed on
the H200 (32 layers, the embedding and the head: ~6,700 statements inlined),
analysed with all four families at ctx_len 4096, takes <= 1 s whole process.

    python bench/zoo_decode_step.py [--repeat N] [--all] [--instructions]

--all also times every other zoo model's placed decode steps (no goal; the
figures show how the cost grows with the layer count). --instructions also
counts each run's instructions under valgrind (callgrind): the same figure
run after run, to compare two versions on a noisy machine. Prints; never
asserts.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _programs import instructions, machine_note, whole_process  # noqa: E402

FAMILIES = ["--compute-cost", "--memory", "--roofline", "--performance"]
GOAL = ("llama3-8b", "Llama3_8B_H200.decode_step")
GOAL_S = 1.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--all", action="store_true", help="every model's placed decode steps")
    parser.add_argument("--instructions", action="store_true",
                        help="also count each run's instructions under callgrind (~60x slower)")
    opts = parser.parse_args(argv)

    from tilefoundry.models import MODELS

    runs = [(model, selection) for model in MODELS for selection in model.selections
            if selection.kind == "decode-step"
            and (opts.all or (model.name, selection.selector) == GOAL)]
    print(f"{'selection':45s} {'layers':>6s} {'seconds':>8s}  goal")
    failed = False
    for model, selection in runs:
        args = ["analyze", *FAMILIES, *selection.dim_args(), model.source_arg(selection)]
        seconds, code, error = whole_process(args, opts.repeat)
        goal = ""
        if (model.name, selection.selector) == GOAL:
            goal = f"<= {GOAL_S} s: {'met' if seconds <= GOAL_S else 'NOT met'}"
        line = f"{model.name}:{selection.selector:32s} {model.layers:6d} {seconds:8.3f}  {goal}"
        print(line if code == 0 else f"{line}  error: {error}")
        failed |= code != 0
        if opts.instructions and code == 0:
            count, why = instructions(args)
            print(f"{'':45s} {'':6s} {count:,} instructions (callgrind)" if count is not None
                  else f"{'':45s} instructions not counted: {why}")
    print(f"best of {opts.repeat} each; {machine_note()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

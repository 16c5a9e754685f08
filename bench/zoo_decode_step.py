"""Issue 23 speed target: the whole-model decode step of Llama-3-8B placed on
the H200 (32 layers, the embedding and the head: ~6,700 statements inlined),
analysed with all four families at ctx_len 4096, takes <= 1 s whole process.
Issue 37 item 8: the same step under `analyze --all` (every family, the
collectives and the estimate included) takes <= 1.5 s of CPU time whole process
(user + system of the child, which a shared machine's load does not inflate as
it does wall time); printed after the table, with each family's own CPU time.

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
#: issue 37 item 8: `analyze --all` on the GOAL step, CPU seconds whole process
ALL_GOAL_CPU_S = 1.5
#: each family alone (what --all costs, family by family, process start included)
EACH = ["--compute-cost", "--memory", "--roofline", "--performance", "--collectives",
        "--estimate"]


def whole_process_cpu(args: list[str], repeat: int) -> tuple[float, float, int, str | None]:
    """(best CPU seconds, best wall seconds, exit code, last stderr line of a
    failing run) of `python -m tilefoundry ARGS` run ``repeat`` times; CPU is the
    child's user + system time."""
    import resource
    import subprocess
    import time

    from _programs import _installed_env, _warm

    env = _installed_env()
    _warm(env)
    best_cpu = best_wall = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "tilefoundry", *args], env=env,
                              capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best_cpu, best_wall = min(best_cpu, cpu), min(best_wall, wall)
        if done.returncode != 0:
            return best_cpu, best_wall, done.returncode, (
                done.stderr.strip().splitlines() or ["(no stderr)"])[-1]
    return best_cpu, best_wall, 0, None


def all_families(model, selection, repeat: int) -> bool:
    """Print the GOAL step's `analyze --all` CPU time against its goal, then each
    family's alone; True when a run failed."""
    where = [*selection.dim_args(), model.source_arg(selection)]
    print(f"\n{'analyze ' + model.name + ':' + selection.selector:45s} {'cpu s':>8s} "
          f"{'wall s':>8s}  goal")
    failed = False
    for flag in ["--all", *EACH]:
        cpu, wall, code, error = whole_process_cpu(["analyze", flag, *where], repeat)
        goal = ""
        if flag == "--all":
            goal = f"<= {ALL_GOAL_CPU_S} s cpu: {'met' if cpu <= ALL_GOAL_CPU_S else 'NOT met'}"
        line = f"  {flag:43s} {cpu:8.3f} {wall:8.3f}  {goal}"
        print(line if code == 0 else f"{line}  error: {error}")
        failed |= code != 0
    return failed


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
    goal = [(m, s) for m, s in runs if (m.name, s.selector) == GOAL]
    if goal:
        failed |= all_families(*goal[0], opts.repeat)
    print(f"best of {opts.repeat} each; {machine_note()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

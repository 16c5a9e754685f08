"""Issue 20 item 6: `check --placed` of every zoo selection, the large ones the
suite skips included (each in its own process: time and peak RSS). Prints;
never asserts. Needs about 6 GB for the 128k-vocabulary heads.

Run: python bench/zoo_placed.py
"""
from __future__ import annotations

import os
import subprocess
import sys

_CHILD = r'''
import resource, sys, time
from tilefoundry.execution import prepare
from tilefoundry.execute import check_placed
source, dims = sys.argv[1], eval(sys.argv[2])
start = time.perf_counter()
p = prepare(source, dims=dims)
report = check_placed(p.function, p.arguments)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
verdict = "PASS" if report.passed else "FAIL " + report.mismatch.line()
print(f"{verdict}  {time.perf_counter() - start:6.1f} s  {peak:6d} MiB  compared={report.compared}")
'''


def main() -> None:
    from tilefoundry.models import MODELS

    env = dict(os.environ, TILEFOUNDRY_MAX_EVAL_ELEMENTS=str(4 * 10**9))
    passed = total = 0
    for model in MODELS:
        for selection in model.selections:
            args = [a for a in selection.dim_args() if "=" in a]
            small_ctx = max(128, selection.min_ctx)  # a placed attention walks windows of 1024 rows
            dims = {a.split("=")[0]: small_ctx if a.startswith("ctx_len") else int(a.split("=")[1])
                    for a in args} or None
            source = f"{model.source}:{selection.selector}"
            out = subprocess.run([sys.executable, "-c", _CHILD, source, repr(dims)], env=env,
                                 capture_output=True, text=True)
            line = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else \
                "ERROR " + (out.stderr.strip().splitlines() or ["?"])[-1]
            total += 1
            passed += line.startswith("PASS")
            print(f"{model.name}:{selection.selector} {dims or ''}: {line}")
    print(f"{passed}/{total} zoo selections pass check --placed")


if __name__ == "__main__":
    main()

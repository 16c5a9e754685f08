"""Issue 22 item 4: a 20,000-statement function and 1,000 nested Modules
analyse, with every family, in linear time. Prints, per size, the seconds of
one whole `analyze --all` (load, inline, four families, report; best of 3) and the
seconds per statement (or per Module); the goal is a flat column: the per-unit
time at the largest size within 1.5x of the smallest's."""
from __future__ import annotations

import contextlib
import gc
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.robustness.large_programs

from tests.robustness.large_programs import call_chain, module_chain, statement_chain  # noqa: E402
from tilefoundry.cli.main import main  # noqa: E402

SERIES = (
    ("statements", statement_chain, (2_500, 5_000, 10_000, 20_000), ""),
    ("nested Modules", module_chain, (125, 250, 500, 1_000), ":M{n}"),
    ("chained calls", call_chain, (125, 250, 500, 1_000), ""),
)


def seconds(text: str, suffix: str, folder: Path, repeats: int = 3) -> float:
    """The best of ``repeats`` runs (a shared machine adds noise, never speed)."""
    path = folder / "program.py"
    path.write_text(text)
    best = float("inf")
    for _ in range(repeats):
        gc.collect()  # the garbage of the run before is not this run's cost
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["analyze", f"{path}{suffix}", "--all"])
        best = min(best, time.perf_counter() - start)
        assert code == 0, f"analyze exited {code}"
    return best


def main_bench() -> int:
    worst = 0.0
    with tempfile.TemporaryDirectory() as folder:
        for unit, build, sizes, suffix in SERIES:
            print(f"{unit}:")
            per_unit = []
            for n in sizes:
                took = seconds(build(n), suffix.format(n=n), Path(folder))
                per_unit.append(took / n)
                print(f"  {n:>7,}  {took:7.2f} s  {1e3 * took / n:6.3f} ms per {unit[:-1]}")
            growth = per_unit[-1] / per_unit[0]
            worst = max(worst, growth)
            print(f"  per-unit time, largest / smallest: {growth:.2f}x (goal <= 1.5x: "
                  f"{'met' if growth <= 1.5 else 'NOT met'})")
    return 0 if worst <= 1.5 else 1


if __name__ == "__main__":
    raise SystemExit(main_bench())

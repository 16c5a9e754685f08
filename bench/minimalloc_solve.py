"""Benchmark: the memory family's packing solve (analysis §1.2.2 allocation)
on the minimalloc cases in bench/data/minimalloc/*.csv.

Each file holds buffers ``id,lower,upper,size`` (live over [lower, upper));
its capacity is the number in the file name (``A.1048576.csv``). Prints, per
case: buffers, peak live bytes, solve time, status, and whether the packing
found lies within capacity (checked independently of the solver).

    python bench/minimalloc_solve.py [--time-limit S] [CASE ...]
"""
from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tilefoundry.analysis.allocation import Buffer, peak_live, solve_packing  # noqa: E402

CASES = ROOT / "bench" / "data" / "minimalloc"


def load(path: Path):
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    return [Buffer(int(r["lower"]), int(r["upper"]), int(r["size"])) for r in rows]


def verify(buffers, offsets, capacity) -> bool:
    if len(offsets) != len(buffers):
        return False
    for b, o in zip(buffers, offsets):
        if o < 0 or o + b.size > capacity:
            return False
    for i, (a, oa) in enumerate(zip(buffers, offsets)):
        for b, ob in zip(buffers[i + 1:], offsets[i + 1:]):
            if a.start < b.end and b.start < a.end and oa < ob + b.size and ob < oa + a.size:
                return False
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("cases", nargs="*")
    args = parser.parse_args(argv)
    paths = sorted(CASES.glob("*.csv"))
    if args.cases:
        paths = [p for p in paths if p.name.split(".")[0] in args.cases]
    print(f"{'case':<6} {'buffers':>7} {'peak':>9} {'capacity':>9} {'seconds':>8}  status      packed")
    for path in paths:
        capacity = int(path.name.split(".")[1])
        buffers = load(path)
        start = time.perf_counter()
        result = solve_packing(buffers, capacity, time_limit_s=args.time_limit)
        elapsed = time.perf_counter() - start
        packed = verify(buffers, result.offsets, capacity) if result.offsets else False
        print(f"{path.name.split('.')[0]:<6} {len(buffers):>7} {peak_live(buffers):>9} {capacity:>9} "
              f"{elapsed:>8.2f}  {result.status:<10}  {'yes' if packed else 'no'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

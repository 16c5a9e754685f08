"""Benchmark: the packer (analysis.packing.pack, the memory family's capacity
decision, analysis §1.2.2) on the MiniMalloc cases in bench/data/minimalloc/.

Each file holds buffers ``id,lower,upper,size`` (live over [lower, upper));
its capacity is the number in the file name (``A.1048576.csv``). Prints, per
case: buffers, live-bytes peak, status, what settled it, search nodes,
whether the packing passed the independent validator, and seconds; then the
total and how many cases settled (a packing found, or proof that none exists)
and validated.

    python bench/minimalloc_solve.py [--time-limit S] [CASE ...]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tilefoundry.packing import pack, packing_faults, peak_live  # noqa: E402
from tilefoundry.packing.csv_format import read_buffers_csv  # noqa: E402

CASES = ROOT / "bench" / "data" / "minimalloc"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("cases", nargs="*")
    args = parser.parse_args(argv)
    paths = sorted(p for p in CASES.glob("*.csv") if p.name.count(".") == 2)
    if args.cases:
        paths = [p for p in paths if p.name.split(".")[0] in args.cases]
    print(f"{'case':<5} {'buffers':>7} {'live-peak':>9} {'capacity':>9}  {'status':<10} "
          f"{'settled-by':<11} {'nodes':>7}  validated {'seconds':>8}")
    total_s, settled = 0.0, 0
    for path in paths:
        capacity = int(path.name.split(".")[1])
        buffers = [row.buffer for row in read_buffers_csv(str(path))]
        start = time.perf_counter()
        result = pack(buffers, capacity, time_limit_s=args.time_limit)
        elapsed = time.perf_counter() - start
        total_s += elapsed
        validated = bool(result.offsets) and not packing_faults(buffers, result.offsets, capacity)
        if validated or result.status == "infeasible":
            settled += 1
        print(f"{path.name.split('.')[0]:<5} {len(buffers):>7} {peak_live(buffers):>9} {capacity:>9}  "
              f"{result.status:<10} {result.method:<11} {result.nodes:>7}  "
              f"{'yes' if validated else 'no':<9} {elapsed:>8.2f}", flush=True)
    print(f"total {total_s:.2f} s; settled and validated {settled} of {len(paths)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

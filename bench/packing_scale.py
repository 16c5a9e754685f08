"""Benchmark: the packer on large random inputs with room to spare.

Buffers live over random stretches of a timeline (start uniform over
``--horizon`` steps, length 1-100 steps, 1-4096 bytes); the capacity is
``--slack`` times the live-bytes peak. Prints, per size: buffers, live peak,
capacity, status, what settled it, whether the packing passed the validator,
and seconds. Such inputs should settle in a pass, without a search.

    python bench/packing_scale.py [--slack X] [--horizon T] [N ...]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tilefoundry.packing import Buffer, pack, packing_faults, peak_live  # noqa: E402


def random_buffers(n: int, horizon: int, seed: int) -> list[Buffer]:
    rng = random.Random(seed)
    buffers = []
    for _ in range(n):
        start = rng.randrange(horizon)
        buffers.append(Buffer(start, start + rng.randint(1, 100), rng.randint(1, 4096)))
    return buffers


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slack", type=float, default=10.0)
    parser.add_argument("--horizon", type=int, default=1000)
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("sizes", nargs="*", type=int, default=[3000, 20000])
    args = parser.parse_args(argv)
    print(f"{'buffers':>7} {'live-peak':>10} {'capacity':>10}  {'status':<10} {'settled-by':<11} "
          f"validated {'seconds':>8}")
    for n in args.sizes:
        buffers = random_buffers(n, args.horizon, seed=n)
        live = peak_live(buffers)
        capacity = int(live * args.slack)
        started = time.perf_counter()
        result = pack(buffers, capacity, time_limit_s=args.time_limit)
        elapsed = time.perf_counter() - started
        validated = bool(result.offsets) and not packing_faults(buffers, result.offsets, capacity)
        print(f"{n:>7} {live:>10} {capacity:>10}  {result.status:<10} {result.method:<11} "
              f"{'yes' if validated else 'no':<9} {elapsed:>8.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

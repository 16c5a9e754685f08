"""Classify every two-axis division pair up to 32 cores (target: <= 1 s total)."""
from __future__ import annotations

import time

from tilefoundry.intertile.classify import axis_row, classify_divisions
from tilefoundry.intertile.regions import two_axis_divisions


def main() -> None:
    divs = two_axis_divisions(32)
    pairs = [({"a": s[0], "b": s[1]}, {"a": d[0], "b": d[1]}) for s in divs for d in divs]
    axis_row.cache_clear()
    start = time.perf_counter()
    verdicts: dict[str, int] = {}
    for src, dst in pairs:
        d = classify_divisions(src, dst, 32)
        key = d.row if d.verdict == "op" else d.verdict
        verdicts[key] = verdicts.get(key, 0) + 1
    elapsed = time.perf_counter() - start
    print(f"classified {len(pairs)} division pairs in {elapsed:.3f} s "
          f"({1e6 * elapsed / len(pairs):.1f} us each; target <= 1 s total)")
    print("by outcome:", dict(sorted(verdicts.items())))


if __name__ == "__main__":
    main()

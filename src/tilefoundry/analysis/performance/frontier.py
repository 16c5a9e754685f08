"""When each position of a level is next free, kept as runs of positions.

A timeline asks, per occurrence, the latest free time over the positions it
runs on, then marks them busy until it ends. Positions are stated as runs
(a mesh laid out row-major is one run: ``participants`` gives a range), so a
mesh of 2**25 CTAs costs a few runs, not 2**25 entries.
"""
from __future__ import annotations

from bisect import bisect_right

__all__ = ["Frontier", "runs_of"]


def runs_of(positions) -> list[tuple[int, int]]:
    """[start, stop) runs covering ``positions`` (a range or a set), in order."""
    if isinstance(positions, range) and positions.step == 1:
        return [(positions.start, positions.stop)] if positions.stop > positions.start else []
    runs: list[list[int]] = []
    for p in sorted(positions):
        if runs and runs[-1][1] == p:
            runs[-1][1] = p + 1
        else:
            runs.append([p, p + 1])
    return [(a, b) for a, b in runs]


class Frontier:
    """Disjoint runs [start, stop) with the time each is next free (0 elsewhere)."""

    def __init__(self):
        self.starts: list[int] = []
        self.runs: list[tuple[int, int, int]] = []  # (start, stop, free at), sorted

    def latest(self, runs) -> int:
        found = 0
        for start, stop in runs:
            i = max(bisect_right(self.starts, start) - 1, 0)
            while i < len(self.runs) and self.runs[i][0] < stop:
                a, b, t = self.runs[i]
                if b > start:
                    found = max(found, t)
                i += 1
        return found

    def occupy(self, runs, until: int) -> None:
        for start, stop in runs:
            kept = []
            for a, b, t in self.runs:
                if b <= start or a >= stop:
                    kept.append((a, b, t))
                    continue
                if a < start:
                    kept.append((a, start, t))
                if b > stop:
                    kept.append((stop, b, t))
            kept.append((start, stop, until))
            kept.sort()
            self.runs = kept
            self.starts = [a for a, _, _ in kept]

"""Brute-force region enumeration: the oracle the per-axis table is checked against.

Deliberately shares nothing with classify.py's scans: regions are boxes with
integer bounds on an lcm grid, overlaps are tested box against box, and
components come from a union-find over the overlap graph.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from math import lcm

import numpy as np


@dataclass(frozen=True)
class Enumerated:
    fanin: tuple[int, ...]    # per destination region
    fanout: tuple[int, ...]   # per source region
    components: int

    @property
    def uniform(self) -> bool:
        return len(set(self.fanin)) == 1 and len(set(self.fanout)) == 1


def boxes(cuts: tuple[int, ...], extents: tuple[int, ...]) -> np.ndarray:
    """(regions, axes, 2) array of [start, stop) for an equal cut of each axis."""
    per_axis = [[(k * e // n, (k + 1) * e // n) for k in range(n)]
                for n, e in zip(cuts, extents)]
    return np.array([list(combo) for combo in product(*per_axis)], dtype=np.int64)


def enumerate_pair(src: tuple[int, ...], dst: tuple[int, ...]) -> Enumerated:
    extents = tuple(lcm(a, b) for a, b in zip(src, dst))
    s, d = boxes(src, extents), boxes(dst, extents)
    lo = np.maximum(s[:, None, :, 0], d[None, :, :, 0])
    hi = np.minimum(s[:, None, :, 1], d[None, :, :, 1])
    overlap = (lo < hi).all(axis=2)  # (src, dst)
    parent = list(range(len(s) + len(d)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for i, j in zip(*np.nonzero(overlap)):
        a, b = find(int(i)), find(len(s) + int(j))
        if a != b:
            parent[a] = b
    comps = len({find(x) for x in range(len(parent))})
    return Enumerated(tuple(int(v) for v in overlap.sum(axis=0)),
                      tuple(int(v) for v in overlap.sum(axis=1)), comps)


def two_axis_divisions(limit: int = 32) -> list[tuple[int, int]]:
    """Every (n0, n1) with n0 * n1 <= limit: 119 of them for 32."""
    return [(a, b) for a in range(1, limit + 1) for b in range(1, limit // a + 1)]

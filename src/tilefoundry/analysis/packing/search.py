"""Branch and bound over canonical packings (Moffitt, MiniMalloc, ASPLOS 2023).

Any packing can be let fall: every buffer drops until it rests at 0 or on the
top of a buffer live at the same time. Such a packing is canonical when its
buffers, taken in order of (offset, preorder rank), each sit at the lowest
offset the ones before them leave (``min_off``). The search builds canonical
packings only, one buffer at a time in that order, so every node places some
unplaced buffer at its ``min_off`` and never below the (offset, rank) of the
previous placement. Pruning, each keeping at least one canonical packing when
one exists:

- dominance: a buffer whose ``min_off`` is at or above the lowest top any
  unplaced buffer could reach would leave a gap that buffer fills, so it is
  not placed next;
- spatial inference per section: the unplaced buffers of a section must stack
  above its floor (the lowest ``min_off`` among them, and never below the
  current offset since offsets only rise), so floor + their sizes must fit;
- hatless: a buffer with no unplaced buffer live beside it blocks nothing, so
  when the rest fails with it at its lowest offset, no other choice here helps;
- decomposition: once every buffer spanning a section boundary is placed, the
  two sides are independent problems, solved one after the other.

A failed subtree is exhaustive, so a search that ends without a packing and
without running out of nodes or time has proved that none exists.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from tilefoundry.analysis.packing.sweep import Sweep

__all__ = ["Search", "FOUND", "EXHAUSTED", "ABORTED", "DEADLINE", "PREORDERINGS"]

FOUND, EXHAUSTED, ABORTED, DEADLINE = "found", "exhausted", "aborted", "deadline"

# Static preorderings tried in turn (each a tie-break of the dynamic order by
# offset): larger first by the keys named; ``length`` is the lifetime. ``total`` is the largest sum of
# sizes over a buffer's sections: buffers in the tightest sections go first.
PREORDERINGS = (("length", "area", "total"), ("total", "area", "length"),
                ("total", "length", "area"))


class _Limit(Exception):
    """Unwinds the search when its node budget or deadline is spent."""

    def __init__(self, why: str):
        self.why = why


class Search:
    """One packing problem's search state; ``run`` tries one preordering."""

    def __init__(self, buffers, capacity: int, layout: Sweep, deadline: float, progress=None):
        self.size = [b.size for b in buffers]
        self.capacity = capacity
        self.layout = layout
        self.deadline = deadline
        self.progress = progress
        self.started = time.perf_counter()
        self.nodes = 0
        n = len(buffers)
        self.member = np.zeros((layout.sections, n), dtype=bool)  # member[s, k]: k live over s
        for k in range(n):
            self.member[layout.lo[k]:layout.hi[k], k] = True
        self.neighbours = [np.array(js, dtype=np.int64) for js in layout.overlaps]
        self._reset()
        self._keys = self._preorder_keys(buffers)

    def _reset(self):
        """A fresh root: nothing placed (a spent budget unwinds without undoing)."""
        n, layout = len(self.size), self.layout
        self.min_off = np.zeros(n, dtype=np.int64)
        self.offset = [-1] * n
        self.unplaced = np.ones(n, dtype=bool)
        self.total = np.zeros(layout.sections, dtype=np.int64)  # unplaced bytes per section
        for k in range(n):
            self.total[layout.lo[k]:layout.hi[k]] += self.size[k]
        self.cuts = list(layout.cuts)
        self.solution = [-1] * n

    def _preorder_keys(self, buffers):
        lay = self.layout
        area = [b.size * (b.end - b.start) for b in buffers]
        total = [int(self.total[lay.lo[k]:lay.hi[k]].max()) for k in range(len(buffers))]
        length = [b.end - b.start for b in buffers]
        return {"size": self.size, "area": area, "total": total, "length": length}

    def run(self, preordering, node_budget: int) -> str:
        """FOUND (``solution`` filled), EXHAUSTED, ABORTED or DEADLINE."""
        self._reset()
        self.budget = self.nodes + node_budget
        n = len(self.size)
        keys = [self._keys[name] for name in preordering]
        ranked = sorted(range(n), key=lambda k: tuple(-key[k] for key in keys) + (k,))
        self.rank = [0] * n
        for r, k in enumerate(ranked):
            self.rank[k] = r
        self._by_rank = ranked
        self.shift = max(n, 1).bit_length()
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 4 * n + 1000))
        try:
            return self._solve_part(ranked, 0, self.layout.sections)
        except _Limit as stop:
            return stop.why
        finally:
            sys.setrecursionlimit(limit)

    # -- one independent part of the timeline ---------------------------------

    def _solve_part(self, part, sec_lo, sec_hi) -> str:
        """Every buffer of ``part`` (ranked order) placed, or why not."""
        return self._node(part, sec_lo, sec_hi, 0)

    def _node(self, part, sec_lo, sec_hi, last_key) -> str:
        self.nodes += 1
        if self.nodes >= self.budget:
            raise _Limit(ABORTED)
        if not self.nodes & 255:
            self._tick()
        offset, size, rank, shift = self.offset, self.size, self.rank, self.shift
        min_off = self.min_off.tolist()
        unplaced = [k for k in part if offset[k] < 0]
        if not unplaced:
            return FOUND
        lowest_top = min(min_off[k] + size[k] for k in unplaced)
        order = sorted((min_off[k] << shift) | rank[k] for k in unplaced)
        mask = (1 << shift) - 1
        outside = self._outside_max(sec_lo, sec_hi)
        lo, hi, capacity = self.layout.lo, self.layout.hi, self.capacity
        for key in order:
            at = key >> shift
            if at >= lowest_top:
                break  # dominance: the buffer reaching lowest_top fills the gap below
            if key < last_key:
                continue  # canonical order: not below the previous placement
            k = self._by_rank[key & mask]
            if at + outside(lo[k], hi[k]) > capacity:
                continue  # a section k does not cover already holds too much above ``at``
            outcome, hatless = self._place(k, at, part, sec_lo, sec_hi, key)
            if outcome != EXHAUSTED:
                return outcome
            if hatless:
                break
        return EXHAUSTED

    def _tick(self):
        now = time.perf_counter()
        if now > self.deadline:
            raise _Limit(DEADLINE)
        if self.progress is not None:
            self.progress(self.nodes, now - self.started)

    def _outside_max(self, sec_lo, sec_hi):
        """``outside(a, z)``: the most unplaced bytes of a section of this part
        outside sections [a, z) -- what placing a buffer there leaves standing."""
        totals = self.total[sec_lo:sec_hi]
        before = [0] + np.maximum.accumulate(totals).tolist()
        after = np.maximum.accumulate(totals[::-1]).tolist()[::-1] + [0]

        def outside(a, z):
            return max(before[a - sec_lo], after[z - sec_lo])
        return outside

    # -- placing one buffer -----------------------------------------------------

    def _place(self, k, at, part, sec_lo, sec_hi, key):
        """Place ``k`` at ``at``, search below, undo; (outcome, hatless)."""
        size, top = self.size[k], at + self.size[k]
        if top > self.capacity:
            return EXHAUSTED, False
        lo, hi = self.layout.lo[k], self.layout.hi[k]
        neighbours = self.neighbours[k]
        unplaced_neighbours = neighbours[self.unplaced[neighbours]]
        raised = unplaced_neighbours[self.min_off[unplaced_neighbours] < top]
        previous = self.min_off[raised]
        self.offset[k] = at
        self.unplaced[k] = False
        self.min_off[raised] = top
        self.total[lo:hi] -= size
        outcome = EXHAUSTED
        if self._fits(sec_lo, sec_hi, at):
            outcome = self._descend(k, part, sec_lo, sec_hi, key)
        if outcome == FOUND:
            self.solution[k] = at
        self.total[lo:hi] += size
        self.min_off[raised] = previous
        self.unplaced[k] = True
        self.offset[k] = -1
        return outcome, not unplaced_neighbours.size

    def _fits(self, sec_lo, sec_hi, at) -> bool:
        """Every section of this part can still hold its unplaced bytes above
        its floor: the lowest offset any of them can take, and never below
        ``at``, since later placements in this part only rise."""
        total = self.total[sec_lo:sec_hi]
        if int(total.max()) + at > self.capacity:
            return False
        live = self.member[sec_lo:sec_hi] & self.unplaced
        floors = np.where(live, self.min_off, self.capacity).min(axis=1)
        return not ((floors + total) > self.capacity).any()

    # -- decomposition ------------------------------------------------------------

    def _descend(self, k, part, sec_lo, sec_hi, key) -> str:
        lay, cuts = self.layout, self.cuts
        cutpoints = []
        for s in range(lay.lo[k], lay.hi[k] - 1):
            cuts[s] -= 1
            if cuts[s] == 0:
                cutpoints.append(s + 1)
        try:
            if not cutpoints:
                return self._node(part, sec_lo, sec_hi, key)
            return self._split(part, [sec_lo] + cutpoints + [sec_hi])
        finally:
            for s in range(lay.lo[k], lay.hi[k] - 1):
                cuts[s] += 1

    def _split(self, part, bounds) -> str:
        lay, offset = self.layout, self.offset
        for a, z in zip(bounds, bounds[1:]):
            inside = [j for j in part if offset[j] < 0 and lay.lo[j] < z and a < lay.hi[j]]
            if not inside:
                continue
            outcome = self._node(inside, a, z, 0)
            if outcome != FOUND:
                return outcome  # each piece found keeps its offsets in ``solution``
        return FOUND

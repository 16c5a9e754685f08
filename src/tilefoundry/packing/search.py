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
- decomposition: where no buffer spans a section boundary (from the start, or
  once every buffer spanning it is placed), the two sides are independent
  problems, solved one after the other.

A failed subtree is exhaustive, so a search that ends without a packing has
proved that none exists. The search is a generator that pauses every
``slice_nodes`` nodes, so several preorderings can share the time without
any of them starting over (``solve.py`` interleaves them).
"""
from __future__ import annotations

import sys

import numpy as np

from tilefoundry.packing.nogoods import FailedStates
from tilefoundry.packing.pieces import PieceSplitting
from tilefoundry.packing.problem import ABORTED, DEADLINE, EXHAUSTED, FOUND  # noqa: F401
from tilefoundry.packing.sections import Sweep

__all__ = ["Search", "Tables", "FOUND", "EXHAUSTED", "ABORTED", "DEADLINE", "PREORDERINGS"]


# Static preorderings (each the tie-break of the dynamic order by offset),
# larger first by the keys named: ``length`` is the lifetime, ``area`` size x
# lifetime, ``total`` the largest sum of sizes over a buffer's sections (the
# buffers of the tightest sections first), ``sections`` the kept sections a
# buffer spans, ``section_area`` size x sections.
# Measured on the MiniMalloc cases A-K (bench/minimalloc_solve.py), each search
# alone: the first settles A, F, G, J, K soonest among the canonical ones; the
# second, which breaks ties in lifetime by sections spanned instead of area,
# settles E's first piece in 535 nodes, where no other ordering tried (twelve,
# canonical and lowest-point-first) settles it within 2 s: that piece's search
# under the others thrashes between loosely coupled stretches of the timeline,
# proving one wrong early placement infeasible once for every combination of
# choices elsewhere. It took the place of (total, area, length), which settled
# no case or piece first once the lowest-point-first searches ran beside it
# (each ordering costs every case a share of the time).
PREORDERINGS = (("total", "length", "area"), ("total", "length", "sections"))


class Tables:
    """What every search of one piece reads and none writes, built once and
    shared by the whole portfolio: each of its tables is buffers x sections
    (or a neighbour list per buffer), the bulk of a search's memory."""

    def __init__(self, layout: Sweep, capacity: int, n: int):
        self.member = np.zeros((layout.sections, n), dtype=bool)  # member[s, k]: k live over s
        for k in range(n):
            self.member[layout.lo[k]:layout.hi[k], k] = True
        # apart[s, k]: 0 when k is live over s, else the capacity, so that the
        # row minimum of apart + min_off is section s's floor (placed buffers
        # hold min_off = capacity): the lowest offset an unplaced one can take
        self.apart = np.where(self.member, 0, capacity).astype(np.int64)
        self.lo = np.array(layout.lo, dtype=np.int64)
        self.hi = np.array(layout.hi, dtype=np.int64)
        self.neighbours = [np.asarray(js, dtype=np.int64) for js in layout.overlaps]


class Search(PieceSplitting):
    """One packing problem searched under one preordering."""

    def __init__(self, buffers, capacity: int, layout: Sweep, preordering=PREORDERINGS[0],
                 tables: Tables | None = None):
        n = len(buffers)
        self.size = [b.size for b in buffers]
        self.size_array = np.array(self.size, dtype=np.int64)
        self.capacity = capacity
        self.layout = layout
        self.nodes = 0
        self.tables = tables if tables is not None else Tables(layout, capacity, n)
        self.member, self.apart = self.tables.member, self.tables.apart
        self.lo, self.hi = self.tables.lo, self.tables.hi
        self.neighbours = self.tables.neighbours
        self.min_off = np.zeros(n, dtype=np.int64)
        self.offset = [-1] * n
        self.unplaced = np.ones(n, dtype=bool)
        self.total = np.zeros(layout.sections, dtype=np.int64)  # unplaced bytes per section
        for k in range(n):
            self.total[layout.lo[k]:layout.hi[k]] += self.size[k]
        self.cuts = list(layout.cuts)
        self.solution = [-1] * n
        self.failed = FailedStates(n, capacity)
        self._rank(buffers, preordering)

    def _rank(self, buffers, preordering):
        lay, n = self.layout, len(buffers)
        keys = {
            "size": self.size,
            "length": [b.end - b.start for b in buffers],
            "area": [b.size * (b.end - b.start) for b in buffers],
            "total": [int(self.total[lay.lo[k]:lay.hi[k]].max()) for k in range(n)],
            "sections": [lay.hi[k] - lay.lo[k] for k in range(n)],
            "section_area": [b.size * (lay.hi[k] - lay.lo[k]) for k, b in enumerate(buffers)],
        }
        chosen = [keys[name] for name in preordering]
        self.ranked = sorted(range(n), key=lambda k: tuple(-key[k] for key in chosen) + (k,))
        self.rank = [0] * n
        for r, k in enumerate(self.ranked):
            self.rank[k] = r
        self.shift = max(n, 1).bit_length()  # a dynamic key is (min_off << shift) | rank
        self.rank_array = np.array(self.rank, dtype=np.int64)

    def steps(self, slice_nodes: int = 64):
        """Generator: yields every ``slice_nodes`` nodes; returns FOUND
        (``solution`` filled) or EXHAUSTED (no packing exists)."""
        self.slice_nodes = slice_nodes
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 4 * len(self.size) + 1000))
        try:
            everything = np.array(self.ranked, dtype=np.int64)
            return (yield from self._split(everything, self._pieces()))
        finally:
            sys.setrecursionlimit(limit)

    # -- one node: which buffer goes next ---------------------------------------

    def _node(self, part, sec_lo, sec_hi, last_key):
        left = part[self.unplaced[part]]
        if not left.size:
            return FOUND
        state = self.failed.key(left, self.min_off)
        if self.failed.failed(state, last_key):
            self.nodes += 1
            return EXHAUSTED  # this very state failed before (nogoods.py)
        outcome = yield from self._expand(left, part, sec_lo, sec_hi, last_key)
        if outcome == EXHAUSTED:
            self.failed.add(state, last_key)
        return outcome

    def _expand(self, left, part, sec_lo, sec_hi, last_key):
        self.nodes += 1
        if not self.nodes % self.slice_nodes:
            yield
        min_off = self.min_off[left]
        lowest_top = (min_off + self.size_array[left]).min()
        keys = (min_off << self.shift) | self.rank_array[left]
        order = np.argsort(keys, kind="stable")
        keys, chosen, at = keys[order], left[order], min_off[order]
        # dominance: at or above lowest_top the buffer reaching it fills the gap
        # below; canonical order: not below the previous placement
        viable = (at < lowest_top) & (keys >= last_key)
        viable &= at + self._fullest_left(chosen, sec_lo, sec_hi) <= self.capacity
        for i in np.flatnonzero(viable).tolist():
            outcome, hatless = yield from self._place(int(chosen[i]), int(at[i]), part, sec_lo,
                                                      sec_hi, int(keys[i]))
            if outcome != EXHAUSTED:
                return outcome
            if hatless:
                break  # nothing overhead: this buffer sits here in every packing of this node
        return EXHAUSTED

    def _fullest_left(self, chosen, sec_lo, sec_hi):
        """Per candidate: the most unplaced bytes a section of this part still
        holds once that candidate is placed (monotonic floor: all of them must
        lie above the offset it is placed at). Outside the candidate's sections
        that is their maximum; inside, their maximum less its size."""
        totals = self.total[sec_lo:sec_hi]
        before = np.concatenate(([0], np.maximum.accumulate(totals)))
        after = np.concatenate((np.maximum.accumulate(totals[::-1])[::-1], [0]))
        first, last = self.lo[chosen] - sec_lo, self.hi[chosen] - sec_lo
        outside = np.maximum(before[first], after[last])
        bounds = np.empty(2 * chosen.size, dtype=np.int64)
        bounds[0::2], bounds[1::2] = first, last
        inside = np.maximum.reduceat(np.append(totals, 0), bounds)[0::2]
        return np.maximum(outside, inside - self.size_array[chosen])

    # -- placing one buffer ---------------------------------------------------------

    def _place(self, k, at, part, sec_lo, sec_hi, key):
        """Place ``k`` at ``at``, search below, undo; (outcome, hatless)."""
        size, top = self.size[k], at + self.size[k]
        if top > self.capacity:
            return EXHAUSTED, False
        lo, hi = self.layout.lo[k], self.layout.hi[k]
        neighbours = self.neighbours[k]
        beside = self.min_off[neighbours]  # placed ones hold the capacity
        lifted = beside < top
        raised, previous = neighbours[lifted], beside[lifted]
        # hatless: nothing unplaced beside k (an unplaced one already lifted to
        # the capacity can never be placed, so this node fails either way)
        hatless = not (beside < self.capacity).any()
        self.offset[k] = at
        self.unplaced[k] = False
        self.min_off[k] = self.capacity  # placed: no floor of its sections any more
        self.min_off[raised] = top
        self.total[lo:hi] -= size
        outcome = EXHAUSTED
        try:
            if self._fits(k, raised):
                outcome = yield from self._descend(k, part, sec_lo, sec_hi, key)
            if outcome == FOUND:
                self.solution[k] = at
        finally:
            self.total[lo:hi] += size
            self.min_off[raised] = previous
            self.min_off[k] = at
            self.unplaced[k] = True
            self.offset[k] = -1
        return outcome, hatless

    def _fits(self, k, raised) -> bool:
        """The sections whose floor this placement moved (those of ``k`` and of
        every buffer it raised, one run of sections) can still hold their
        unplaced bytes above their floor, the lowest offset any of those can
        take. The others are as their parent node checked them."""
        lo, hi = self.lo, self.hi
        first = min(lo[k], int(lo[raised].min())) if raised.size else lo[k]
        last = max(hi[k], int(hi[raised].max())) if raised.size else hi[k]
        floors = (self.apart[first:last] + self.min_off).min(axis=1)
        return not ((floors + self.total[first:last]) > self.capacity).any()

    # -- decomposition ----------------------------------------------------------------

    PIECE_ARGS = (0,)  # a fresh piece's node starts at rank key 0

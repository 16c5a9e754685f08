"""Branch and bound that fills the lowest point of the timeline first.

A packing can be let fall: every buffer drops until it rests on the top of a
buffer live at the same time or on its own lower bound ``min_off`` (the search
state: the highest top of a placed buffer beside it, raised further by the
waste branches below). Each section's floor is the lowest ``min_off`` among its
unplaced buffers: no unplaced byte of that section can lie below it.

Each node takes the section ``a`` with the lowest floor ``h`` (the least slack
among ties) and splits on the byte at height ``h`` over ``a``. Since ``h`` is
the lowest floor, every unplaced buffer beside a buffer placed at ``h`` lies
above it, so placing one lifts those to its top:

- some unplaced buffer of ``a`` starts there: one branch per buffer of ``a``
  whose ``min_off`` is ``h`` (a buffer whose ``min_off`` is higher cannot
  start at ``h``);
- nothing starts there (waste): then in a let-fall packing nothing covers
  ``a`` from ``h`` up to ``H``, the lower of the next ``min_off`` among the
  other buffers of ``a`` and the least ``min_off + size`` of an unplaced
  buffer beside a candidate but outside ``a``. (The lowest buffer X over
  ``a`` within [h, H) starts above h: at its lower bound, impossible below
  H, or on the top of a buffer Y beside it; Y is unplaced (placed tops lie at
  or below h) and does not cover ``a``, else Y would be the lower one, so its
  top is at least min_off(Y) + size(Y) >= H.) Every candidate's ``min_off``
  rises to ``H``. A section without slack takes no waste branch: every byte
  of it above its floor must be used.

The branches split the let-fall packings of a node without overlap, so a
failed subtree is exhaustive and a search that ends without a packing has
proved that none exists. Pruning, each keeping some packing when one exists:

- spatial inference: every section's floor plus its unplaced bytes must fit;
- spanning: a candidate that meets every other unplaced buffer of its part
  goes lowest with no other branch (in any packing, move it down to ``h``
  and lift every buffer that lay below it by its size);
- hatless: a candidate with no unplaced buffer beside it that fails at ``h``
  fails everywhere (moving it down to ``h`` keeps any packing valid);
- twins: a candidate identical to one tried before it at the node (same
  lifetime, same size) is skipped, since swapping the two maps its packings
  onto the other's.

Decomposition as in ``search.py``: the timeline is cut where no buffer spans
a section boundary, at the start and whenever a placement opens such a cut,
and the pieces are searched one after the other.
"""
from __future__ import annotations

import sys

import numpy as np

from tilefoundry.packing.nogoods import FailedStates
from tilefoundry.packing.search import EXHAUSTED, FOUND
from tilefoundry.packing.pieces import PieceSplitting
from tilefoundry.packing.sections import Sweep

__all__ = ["FillSearch", "FILL_PREORDERINGS"]

# The lowest-point-first searches' preorderings (keys as in
# ``search.PREORDERINGS``). Measured on the MiniMalloc cases, each search
# alone: the first settles A and H soonest, the second B, C and I (I under no
# other ordering within 2 s), the third, by sections spanned, D and the second
# piece of E (190 nodes; under none of the others within 2 s).
FILL_PREORDERINGS = (("total", "length", "area"), ("total", "area", "length"),
                     ("total", "section_area", "sections"))


class FillSearch(PieceSplitting):
    """One packing problem searched lowest point first; candidates at a point
    are tried in the order of one preordering (``FILL_PREORDERINGS``)."""

    def __init__(self, buffers, capacity: int, layout: Sweep, preordering, tables=None):
        from tilefoundry.packing.search import Search

        n = len(buffers)
        ranked = Search(buffers, capacity, layout, preordering, tables)  # for its ranks and tables
        self.rank_array = ranked.rank_array
        self.capacity = capacity
        self.layout = layout
        self.nodes = 0
        self.wastes = 0  # waste branches taken
        self.size = [b.size for b in buffers]
        self.size_array = np.array(self.size, dtype=np.int64)
        self.member = ranked.member
        self.apart = ranked.apart
        self.neighbours = ranked.neighbours
        self.min_off = np.zeros(n, dtype=np.int64)
        self.unplaced = np.ones(n, dtype=bool)
        self.lo, self.hi = ranked.lo, ranked.hi  # section bounds per buffer (numpy)
        self.total = ranked.total.copy()
        self.cuts = list(layout.cuts)
        self.solution = [-1] * n
        self.failed = FailedStates(n, capacity)
        twins: dict = {}
        self.twin = [twins.setdefault((b.start, b.end, b.size), k) for k, b in enumerate(buffers)]

    def steps(self, slice_nodes: int = 64):
        """Generator: yields every ``slice_nodes`` nodes; returns FOUND
        (``solution`` filled) or EXHAUSTED (no packing exists)."""
        self.slice_nodes = slice_nodes
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 100000))
        try:
            everything = np.arange(len(self.size), dtype=np.int64)
            return (yield from self._split(everything, self._pieces()))
        finally:
            sys.setrecursionlimit(limit)

    def _node(self, part, sec_lo, sec_hi):
        left = part[self.unplaced[part]]
        if not left.size:
            return FOUND
        state = self.failed.key(left, self.min_off)
        if self.failed.failed(state):
            self.nodes += 1
            return EXHAUSTED  # this very state failed before (nogoods.py)
        outcome = yield from self._expand(left, part, sec_lo, sec_hi)
        if outcome == EXHAUSTED:
            self.failed.add(state)
        return outcome

    def _expand(self, left, part, sec_lo, sec_hi):
        self.nodes += 1
        if not self.nodes % self.slice_nodes:
            yield
        cap = self.capacity
        totals = self.total[sec_lo:sec_hi]
        floors = (self.apart[sec_lo:sec_hi][:, left] + self.min_off[left]).min(axis=1)
        active = totals > 0
        heights = floors + totals
        if (heights[active] > cap).any():
            return EXHAUSTED
        floors = np.where(active, floors, cap + 1)
        lowest = int(floors.min())
        a, h, mem, offs, cands, reach = self._point(left, floors, heights, sec_lo, lowest)
        cands = cands[np.argsort(self.rank_array[cands], kind="stable")].tolist()
        for b in cands:
            if int(self.unplaced[self.neighbours[b]].sum()) == left.size - 1:
                # b meets every other unplaced buffer of the part: it goes lowest
                outcome, _ = yield from self._place(b, h, part, sec_lo, sec_hi)
                return outcome
        tried = set()
        for b in cands:
            if self.twin[b] in tried:
                continue
            tried.add(self.twin[b])
            outcome, hatless = yield from self._place(b, h, part, sec_lo, sec_hi)
            if outcome != EXHAUSTED:
                return outcome
            if hatless:
                return EXHAUSTED
        # waste: nothing starts at (a, h)
        if heights[a - sec_lo] >= cap:
            return EXHAUSTED  # no slack over a: every byte must be used
        higher = offs[offs > h]
        ceiling = int(higher.min()) if higher.size else cap
        if reach.size:
            ceiling = min(ceiling, int(reach.min()))
        raised = np.array(cands, dtype=np.int64)
        self.wastes += 1
        self.min_off[raised] = ceiling
        try:
            return (yield from self._node(part, sec_lo, sec_hi))
        finally:
            self.min_off[raised] = h

    def _point(self, left, floors, heights, sec_lo, lowest):
        """The point to split on, at the lowest floor (the least slack among
        ties): (section, floor, its unplaced buffers, their min_off,
        candidates, min_off + size of each unplaced buffer beside a candidate
        but outside the section)."""
        ties = np.flatnonzero(floors == lowest)
        a = int(ties[np.argmax(heights[ties])]) + sec_lo
        mem = left[self.member[a, left]]
        offs = self.min_off[mem]
        cands = mem[offs == lowest]
        beside = np.unique(np.concatenate([self.neighbours[b] for b in cands.tolist()]))
        beside = beside[self.unplaced[beside] & ~self.member[a, beside]]
        return a, lowest, mem, offs, cands, self.min_off[beside] + self.size_array[beside]

    def _place(self, k, at, part, sec_lo, sec_hi):
        """Place ``k`` at ``at``, search below, undo; (outcome, hatless)."""
        size, top = self.size[k], at + self.size[k]
        if top > self.capacity:
            return EXHAUSTED, False
        lo, hi = self.layout.lo[k], self.layout.hi[k]
        neighbours = self.neighbours[k]
        neighbours = neighbours[self.unplaced[neighbours]]
        hatless = not neighbours.size
        beside = self.min_off[neighbours]
        lifted = beside < top
        raised, previous = neighbours[lifted], beside[lifted]
        if raised.size and (top + self.size_array[raised] > self.capacity).any():
            return EXHAUSTED, hatless
        self.unplaced[k] = False
        self.min_off[raised] = top
        self.total[lo:hi] -= size
        outcome = EXHAUSTED
        try:
            outcome = yield from self._descend(k, part, sec_lo, sec_hi)
            if outcome == FOUND:
                self.solution[k] = at
        finally:
            self.total[lo:hi] += size
            self.min_off[raised] = previous
            self.unplaced[k] = True
        return outcome, hatless

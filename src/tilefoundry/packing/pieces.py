"""The timeline decomposition both searches share: where no unplaced buffer
spans a section boundary, the two sides are independent problems, searched
one after the other (a packing is one packing per piece)."""
from __future__ import annotations

from tilefoundry.packing.problem import ABORTED, DEADLINE, FOUND

__all__ = ["PieceSplitting", "run_to_end"]


def run_to_end(search, node_budget: int | None = None, deadline: float | None = None,
               slice_nodes: int = 64) -> str:
    """Either search's ``steps`` driven to its outcome, or ABORTED / DEADLINE
    when the node budget or the deadline (``time.perf_counter``) runs out,
    looked at every ``slice_nodes`` nodes."""
    import time

    steps = search.steps(slice_nodes)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        if node_budget is not None and search.nodes >= node_budget:
            steps.close()
            return ABORTED
        if deadline is not None and time.perf_counter() > deadline:
            steps.close()
            return DEADLINE


class PieceSplitting:
    """Mixed into a search that has ``layout`` (a Sweep), ``cuts`` (per
    section boundary, how many unplaced buffers span it), ``unplaced`` (a
    bool array), ``lo``/``hi`` (numpy section bounds per buffer) and a
    generator ``_node(part, sec_lo, sec_hi, *args)``; a fresh piece's node
    starts with ``PIECE_ARGS``. ``run`` drives the search's ``steps``."""

    PIECE_ARGS: tuple = ()

    def run(self, node_budget: int | None = None, deadline: float | None = None,
            slice_nodes: int = 64) -> str:
        """The search to its end, or ABORTED / DEADLINE when one runs out."""
        return run_to_end(self, node_budget, deadline, slice_nodes)

    def _descend(self, k, part, sec_lo, sec_hi, *node_args):
        """Search ``part`` once ``k`` is placed: whole, or split at the
        boundaries ``k`` was the last unplaced buffer to span."""
        lay, cuts = self.layout, self.cuts
        cutpoints = []
        for s in range(lay.lo[k], lay.hi[k] - 1):
            cuts[s] -= 1
            if cuts[s] == 0:
                cutpoints.append(s + 1)
        try:
            if not cutpoints:
                return (yield from self._node(part, sec_lo, sec_hi, *node_args))
            return (yield from self._split(part, [sec_lo] + cutpoints + [sec_hi]))
        finally:
            for s in range(lay.lo[k], lay.hi[k] - 1):
                cuts[s] += 1

    def _pieces(self):
        """Section bounds of the independent pieces before anything is placed:
        cut wherever no buffer spans a section boundary."""
        cuts = [s + 1 for s, count in enumerate(self.cuts) if count == 0]
        return [0] + cuts + [self.layout.sections]

    def _split(self, part, bounds):
        """Each independent piece in turn; the pieces found keep their offsets
        while the next is searched."""
        for a, z in zip(bounds, bounds[1:]):
            inside = part[self.unplaced[part] & (self.lo[part] < z) & (self.hi[part] > a)]
            if inside.size:
                outcome = yield from self._node(inside, a, z, *self.PIECE_ARGS)
                if outcome != FOUND:
                    return outcome
        return FOUND

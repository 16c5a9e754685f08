"""A choice the arithmetic cannot decide: top-k and argmax near ties (issue 42 item 2).

``topk`` and ``argmax`` return indices, and check holds an index exact. Where
the scores they choose between lie within their error bounds of each other
(the k-th and the (k+1)-th, or two neighbours of the top-k's order), the
program and its reference may both be right and still choose differently: a
MoE router then sends the token to another expert, and every value after it
differs by the values themselves. A failure on such a draw proves nothing.

check's rule (docs/execution.md "Near ties"): a bounded run notes the first
near tie it meets (``near_tie``). A draw that passes is the answer, near tie
or not: both sides chose alike there, and its indices were compared exactly
and every value after them at its full derived bound. A draw that fails with
no near tie is the answer too (refused). Only a draw that fails *and* met a
near tie is set aside: the random inputs are drawn again from the next seed of
a fixed sequence derived from the user's seed (``redraw_seeds``), up to
``DRAWS`` draws in all; if every one fails, the first draw's verdicts are the
answer, with the tie named. So a program that picks the (k+1)-th expert, or
uses another expert's weights, fails on every draw and is refused as before;
a right one is refused only if the reference chose otherwise at a tie on all
eight draws. What the rule gives up: a fault that shows on some draws and not
others may be tried on up to ``DRAWS`` draws where the first met a near tie
(each draw a full-strength comparison). Inputs that stay the same from draw to
draw (all given) are not drawn again. ``check --placed`` follows the same rule:
a lockstep mismatch on a draw whose logical run met a near tie (the placed run's
own order of sums may flip it) is drawn again.

Two scores i (chosen) and j (not chosen, or after i in the order) tie when
``x_i - d_i < x_j + d_j``, with d the bound on |program - reference| per score
when each side carries the program's bounds (``error_bounds.held_apart`` of the
program's own bounds with themselves: what the derived bound assumes of a
Python reference). A score whose bound is not a number (unbounded) is left
out: its index is held exact, as before this rule.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from tilefoundry.semantics.op_numerics import np

__all__ = ["NearTie", "near_tie", "redraw_seeds", "with_redraws", "DRAWS"]

#: draws in all (the user's seed, then DRAWS - 1 derived ones). A right program
#: fails a draw only where the reference's roundings order two tied scores
#: otherwise (tests/execute/test_check_near_ties.py's router, 4 tokens over 16
#: experts with bf16 scores: 12 draws in 200), so eight failing draws, each at a
#: tie, are no longer chance: the program is refused
DRAWS = 8


@dataclass(frozen=True)
class NearTie:
    """Where a bounded run met scores it cannot order: the site, the row and the two scores."""

    site: str
    what: str
    row: tuple
    chosen: float
    other: float
    bound: float

    def describe(self) -> str:
        return (f"{self.site}: {self.what}: at row {self.row} the scores {self.chosen!r} and "
                f"{self.other!r} lie within their error bounds of each other (together {self.bound:.3g}), "
                f"so which index is chosen is not decided by the arithmetic")

    def same_as(self, other: "NearTie") -> bool:
        return (self.site, self.row, self.chosen, self.other) == (other.site, other.row, other.chosen,
                                                                  other.other)


def near_tie(values, bound, chosen, axis: int, largest: bool):
    """(row, chosen score, other score, joint bound) of the first near tie of a
    choice of indices ``chosen`` (k per row along ``axis``, best first) among
    ``values`` whose per-element bound on |program - reference| is ``bound``;
    None when every choice and order is decided."""
    key = np.moveaxis(np.asarray(values, np.float64), axis, -1)
    d = np.moveaxis(np.broadcast_to(np.asarray(bound, np.float64), np.shape(values)), axis, -1)
    if not largest:
        key = -key
    index = np.moveaxis(np.asarray(chosen, np.int64), axis, -1)
    d = np.where(np.isfinite(d), d, np.nan)  # unbounded: compares false below, left out
    low = np.take_along_axis(key - d, index, axis=-1)   # each chosen score's lowest value
    high = np.take_along_axis(key + d, index, axis=-1)  # and its highest
    rest = np.ones(key.shape, bool)
    np.put_along_axis(rest, index, False, axis=-1)
    with np.errstate(invalid="ignore"):
        top_rest = np.max(np.where(rest & ~np.isnan(key + d), key + d, -np.inf), axis=-1)
        weakest = np.nanmin(np.where(np.isnan(low), np.inf, low), axis=-1)
        boundary = weakest < top_rest  # a chosen score may fall below one left out
        # the order: a score may rise above an earlier one (the lowest value before it)
        earlier = np.minimum.accumulate(np.where(np.isnan(low), np.inf, low), axis=-1)[..., :-1]
        order = (earlier < np.where(np.isnan(high), -np.inf, high)[..., 1:]) if index.shape[-1] > 1 else \
            np.zeros(index.shape[:-1] + (0,), bool)
    tied = boundary | np.any(order, axis=-1)
    if not np.any(tied):
        return None
    row = tuple(int(i) for i in np.argwhere(tied)[0])
    scores, bounds = key[row], d[row]
    picks = index[row]
    if boundary[row]:
        i = int(picks[np.nanargmin(np.where(np.isnan(low[row]), np.inf, low[row]))])
        outside = np.where(rest[row] & ~np.isnan(scores + bounds), scores + bounds, -np.inf)
        j = int(np.argmax(outside))
    else:
        m = int(np.argmax(order[row])) + 1
        i, j = int(picks[int(np.argmin(low[row][:m]))]), int(picks[m])
    sign = 1.0 if largest else -1.0
    return row, sign * float(scores[i]), sign * float(scores[j]), float(bounds[i] + bounds[j])


def redraw_seeds(seed: int) -> list[int]:
    """The seeds of the draws, the user's first: a fixed sequence (numpy's
    SeedSequence of (seed, draw)), so a check is the same on every run."""
    later = [int(np.random.SeedSequence([seed, draw]).generate_state(1)[0]) for draw in range(1, DRAWS)]
    return [seed] + later


def with_redraws(seed: int, attempt):
    """The answer of ``attempt(seed) -> (result, NearTie or None)`` under the rule of
    the module docstring: the first draw that passes, or fails with no near tie;
    else the first draw's result, its tie noted (``result.tie``)."""
    first = None
    why = f"each of {DRAWS} draws (seed {seed} and {DRAWS - 1} derived from it) failed at such a tie"
    for count in range(DRAWS):
        # the later seeds are derived only once the user's has been taken (and checked) by a draw
        result, tie = attempt(seed if count == 0 else redraw_seeds(seed)[count])
        if result.passed or tie is None:
            return result
        if first is not None and tie.same_as(first[1]):
            why = "the inputs are given (the same on every draw), so they were not drawn again"
            break  # drawing again decides nothing
        first = first or (result, tie)
    result, tie = first
    return replace(result, tie=f"{tie.describe()}; {why}")

"""Settling one capacity question: fits at once, cannot fit, or a search.

Order of work: a domain whose buffers fit side by side is settled without
searching; one holding more live bytes at some time than the capacity (or one
buffer larger than it) is refused without searching; a first-fit pass
(``greedy.py``) settles one with room to spare; anything else goes to the
canonical searches (``search.py``, one per ``PREORDERINGS``) and the
lowest-point-first searches (``fill.py``, one per ``FILL_PREORDERINGS``), all
taking turns. The cases are heavy-tailed: on the MiniMalloc cases each piece
settles within a few thousand nodes under one or two of these searches and
not within 2 s under most others, so the portfolio's worth is its spread.
When the search runs out of its share of the time, CP-SAT gets the rest to prove that no
packing exists (or to find one).
Every packing, whoever found it, passes ``validate.packing_faults`` before it
is returned.

Units never change an answer: before the search the question is restated
exactly in its smallest units. Only the order of lifetimes matters, so times
start from 0 (or become their ranks among all endpoints when their span is
itself too wide); sizes and the capacity are divided by
the sizes' greatest common divisor g (a packing's offsets rounded down to
multiples of g stay disjoint, so nothing is lost), and the offsets found are
multiplied back. What stays past ``MAX_UNITS`` after that is refused in one
line: the CP-SAT proof and the sweeps work in 64-bit integers.
"""
from __future__ import annotations

import time

from math import gcd

from tilefoundry.errors import PackingInputError
from tilefoundry.packing.problem import Buffer, PackingResult, checked_buffers, peak_live, whole
from tilefoundry.packing.proof import SEED, cp_sat_packing
from tilefoundry.packing.validate import packing_faults

# The searches (and numpy under them) are imported when a question needs a
# search: most programs' domains settle by a shortcut, and `analyze` should
# not pay numpy's import for them.

__all__ = ["pack", "SEARCH_SHARE", "MAX_UNITS", "restated"]

#: the largest capacity, in the question's smallest units, the searches and the
#: CP-SAT proof are exact for (their sums stay inside a signed 64-bit integer)
MAX_UNITS = 2**62

# The search's share of the time limit; CP-SAT keeps the rest for a proof.
SEARCH_SHARE = 0.7
# Nodes each preordering's search takes per turn.
SLICE_NODES = 64


def pack(buffers, capacity: int, *, time_limit_s: float = 10.0, seed: int = SEED,
         progress=None) -> PackingResult:
    """Place every buffer in [0, capacity) with no two live ones sharing a
    byte. ``progress(nodes, seconds)``, when given, is called now and then.
    A negative capacity or an empty lifetime is an ``invalid`` result; an
    argument of another kind is refused (tilefoundry.arguments)."""
    from tilefoundry.arguments import checked, number_at_least, optional, when, whole_at_least

    who = "tilefoundry.packing.pack"
    buffers = checked_buffers(buffers, who)
    capacity = checked(who, "capacity", capacity, when("a whole number of bytes (e.g. capacity=1024)", whole))
    time_limit_s = checked(who, "time_limit_s", time_limit_s, number_at_least(0, "time_limit_s=10.0",
                                                                              above=True))
    seed = checked(who, "seed", seed, whole_at_least(0, "seed=0"))
    checked(who, "progress", progress, optional(when("a callable progress(nodes, seconds)", callable)))
    if any(b.start >= b.end or b.size < 0 for b in buffers) or capacity < 0:
        return PackingResult("invalid", False, method="input")
    if sum(b.size for b in buffers) <= capacity:  # side by side: nothing to search
        return _checked(buffers, capacity, _side_by_side(buffers), "optimal", False, "fit-at-once")
    if any(b.size > capacity for b in buffers) or peak_live(buffers) > capacity:
        return PackingResult("infeasible", False, method="live-bytes")
    small, unit, small_capacity = restated(buffers, capacity)
    result = _searched(small, small_capacity, time_limit_s, seed, progress)
    if not result.offsets:  # no packing (infeasible, timeout, invalid): nothing to scale back
        return result
    return _checked(buffers, capacity, [o * unit for o in result.offsets], result.status,
                    result.searched, result.method, result.nodes)


def restated(buffers, capacity: int):
    """(buffers, unit, capacity) of the same question in its smallest units:
    times as ranks of the endpoints, sizes and capacity divided by the sizes'
    gcd (the capacity rounded down). Refuses what stays past ``MAX_UNITS``."""
    times = _time_map(buffers)
    unit = 0
    for b in buffers:
        unit = gcd(unit, b.size)
    unit = unit or 1
    small_capacity = capacity // unit
    if small_capacity >= MAX_UNITS:
        raise PackingInputError(
            f"the capacity {capacity} is {small_capacity} units of the sizes' common factor "
            f"{unit}, past the packer's exact range of 2^62 units; state sizes and capacity "
            "in coarser units (a common factor of every size)")
    small = [Buffer(times(b.start), times(b.end), b.size // unit) for b in buffers]
    return small, unit, small_capacity


def _time_map(buffers):
    """Times from 0: shifted by the first start (lifetimes keep their lengths,
    which the searches' preorderings read), or, when the span itself is past
    the exact range, their ranks among all endpoints (only order matters)."""
    first = min((b.start for b in buffers), default=0)
    last = max((b.end for b in buffers), default=0)
    if last - first < MAX_UNITS:
        return lambda t: t - first
    ranks = {t: i for i, t in enumerate(sorted({t for b in buffers for t in (b.start, b.end)}))}
    return ranks.__getitem__


def _searched(buffers, capacity, time_limit_s, seed, progress) -> PackingResult:
    started = time.perf_counter()
    deadline = started + time_limit_s * SEARCH_SHARE
    greedy = _first_fit(buffers, capacity, deadline)
    if greedy is not None:
        return greedy
    from tilefoundry.packing.search import EXHAUSTED, FOUND

    outcome, offsets, nodes = _search(buffers, capacity, deadline, progress)
    if outcome == FOUND:
        result = _checked(buffers, capacity, offsets, "optimal", True, "search", nodes)
        if result.status == "optimal":
            return result
    elif outcome == EXHAUSTED:
        return PackingResult("infeasible", True, method="search", nodes=nodes)
    remaining = time_limit_s - (time.perf_counter() - started)
    status, offsets = cp_sat_packing(buffers, capacity, remaining, seed)
    if status in ("optimal", "feasible"):
        return _checked(buffers, capacity, offsets, status, True, "cp-sat", nodes)
    return PackingResult(status, True, method="cp-sat", nodes=nodes)


def _first_fit(buffers, capacity, deadline):
    """The first-fit packing as a result when it fits (room to spare: no
    search needed) before the search's deadline, else None."""
    from tilefoundry.packing.greedy import first_fit

    offsets = first_fit(buffers, capacity, deadline)
    if offsets is None:
        return None
    # searched: past the spec's two shortcuts, the packer's own work began
    result = _checked(buffers, capacity, offsets, "optimal", True, "greedy")
    return result if result.status == "optimal" else None


def _side_by_side(buffers):
    offsets, at = [], 0
    for b in buffers:
        offsets.append(at)
        at += b.size
    return offsets


def _checked(buffers, capacity, offsets, status, searched, method, nodes=0) -> PackingResult:
    """The packing as a result once the validator accepts it; a packing it
    rejects is never recorded (status ``invalid``)."""
    if packing_faults(buffers, offsets, capacity):
        return PackingResult("invalid", searched, method=method, nodes=nodes)
    return PackingResult(status, searched, tuple(offsets), method, nodes)


def _search(buffers, capacity, deadline, progress):
    """(outcome, offsets, nodes): the timeline cut where no buffer spans a
    section boundary, each piece its own problem (a packing is one packing per
    piece), searched in turn by ``_search_piece``. Zero-byte buffers take no
    address (offset 0). A piece too large for the search's tables is refused
    before any piece is searched (``_check_tables``)."""
    from tilefoundry.packing.search import FOUND
    from tilefoundry.packing.sections import pieces

    sized = [k for k, b in enumerate(buffers) if b.size > 0]
    problem = [buffers[k] for k in sized]
    parts = pieces(problem)
    for piece in parts:
        _check_tables([problem[k] for k in piece])
    offsets, nodes, started = [0] * len(buffers), 0, time.perf_counter()
    for piece in parts:
        outcome, found, spent = _search_piece([problem[k] for k in piece], capacity, deadline,
                                              progress, nodes, started)
        nodes += spent
        if outcome != FOUND:
            return outcome, [], nodes
        for k, at in zip(piece, found):
            offsets[sized[k]] = at
    return FOUND, offsets, nodes


def _check_tables(piece) -> None:
    """Refuse a piece whose search tables (buffers x sections, and a neighbour
    entry per pair live at once) would pass TILEFOUNDRY_MAX_PACKING_CELLS:
    sized by sorting alone, before anything dense is built."""
    from tilefoundry import limits
    from tilefoundry.packing.sections import table_cells

    sections, cells = table_cells(piece)
    limits.check("PACKING_CELLS", cells,
                 f"the packing search of {len(piece):,} buffers over {sections:,} sections "
                 f"(one piece of the timeline) needs {cells:,} table cells")


def _search_piece(problem, capacity, deadline, progress, nodes_before, started):
    """(outcome, offsets, nodes): the canonical searches and the
    lowest-point-first searches, one per preordering of each, taking turns
    a slice of nodes at a time (none starts over), until one finds a packing
    or proves there is none (any one suffices: each is complete), or the
    deadline passes."""
    from tilefoundry.packing.fill import FILL_PREORDERINGS, FillSearch
    from tilefoundry.packing.search import DEADLINE, PREORDERINGS, Search, Tables
    from tilefoundry.packing.sections import sweep

    layout = sweep(problem)
    tables = Tables(layout, capacity, len(problem))  # one copy for the whole portfolio
    searches = [Search(problem, capacity, layout, p, tables) for p in PREORDERINGS]
    searches += [FillSearch(problem, capacity, layout, p, tables) for p in FILL_PREORDERINGS]
    turns = [search.steps(SLICE_NODES) for search in searches]
    while True:
        for search, turn in zip(searches, turns):
            try:
                next(turn)
            except StopIteration as done:
                for other in turns:
                    other.close()
                return done.value, search.solution, sum(s.nodes for s in searches)
        now = time.perf_counter()
        if progress is not None:
            progress(nodes_before + sum(s.nodes for s in searches), now - started)
        if now > deadline:
            for turn in turns:
                turn.close()
            return DEADLINE, [], sum(s.nodes for s in searches)

"""Whether the addressable buffers fit: a real packing solve (analysis §1.2.2).

Capacity is settled for ``gmem`` and ``smem`` only, once per capacity domain:
the whole target for a level owned target-wide, one per owning position
otherwise (every position holds the same projected buffers, so those domains
are one question, decided once). A level owned per unit of a topology level
other than the analysed one fails rather than being assumed.

Each buffer is a rectangle ``[defined_at, last_used_at + 1) x [offset, offset +
bytes)``; a packing places every offset so that no two rectangles overlap and
all lie within the capacity. A domain whose buffers fit side by side is settled
without searching; one whose simultaneously live bytes exceed the capacity is
refused without searching; anything else is solved with OR-tools CP-SAT
(``NoOverlap2D``, fixed seed, one worker, a time limit). ortools is imported
lazily, inside the solve. No address is reported: only that an arrangement
exists (``solver_status``).
"""
from __future__ import annotations

from dataclasses import dataclass

from tilefoundry.errors import AnalysisError
from tilefoundry.analysis.memory_records import AllocationMetadata

__all__ = ["ADDRESSABLE", "Buffer", "PackingResult", "solve_packing", "settle_allocation",
           "TIME_LIMIT_S", "SEED"]

ADDRESSABLE = ("gmem", "smem")
TIME_LIMIT_S = 10.0
SEED = 20240601


@dataclass(frozen=True)
class Buffer:
    """One buffer: live over [start, end) positions, ``size`` bytes."""

    start: int
    end: int
    size: int


@dataclass(frozen=True)
class PackingResult:
    """``status``: optimal | feasible | infeasible | invalid | timeout;
    ``searched``: whether the solver ran; ``offsets`` when a packing exists."""

    status: str
    searched: bool
    offsets: tuple = ()


def peak_live(buffers) -> int:
    events: dict = {}
    for b in buffers:
        events[b.start] = events.get(b.start, 0) + b.size
        events[b.end] = events.get(b.end, 0) - b.size
    live = peak = 0
    for at in sorted(events):
        live += events[at]
        peak = max(peak, live)
    return peak


def solve_packing(buffers, capacity: int, *, time_limit_s: float = TIME_LIMIT_S,
                  seed: int = SEED) -> PackingResult:
    """Place every buffer below ``capacity`` with no two live ones overlapping."""
    buffers = list(buffers)
    total = sum(b.size for b in buffers)
    if total <= capacity:  # side by side: fits at once, nothing to search
        offsets, at = [], 0
        for b in buffers:
            offsets.append(at)
            at += b.size
        return PackingResult("optimal", False, tuple(offsets))
    if any(b.size > capacity for b in buffers) or peak_live(buffers) > capacity:
        return PackingResult("infeasible", False)
    from ortools.sat.python import cp_model  # lazy: keep ``import tilefoundry`` light

    model = cp_model.CpModel()
    xs, ys, offsets = [], [], []
    for k, b in enumerate(buffers):
        x = model.NewFixedSizeIntervalVar(b.start, b.end - b.start, f"t{k}")
        y0 = model.NewIntVar(0, capacity - b.size, f"o{k}")
        y = model.NewFixedSizeIntervalVar(y0, b.size, f"s{k}")
        xs.append(x)
        ys.append(y)
        offsets.append(y0)
    model.AddNoOverlap2D(xs, ys)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit_s)
    solver.parameters.random_seed = int(seed)
    solver.parameters.num_workers = 1
    status = solver.Solve(model)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        word = "optimal" if status == cp_model.OPTIMAL else "feasible"
        return PackingResult(word, True, tuple(int(solver.Value(o)) for o in offsets))
    if status == cp_model.INFEASIBLE:
        return PackingResult("infeasible", True)
    if status == cp_model.MODEL_INVALID:
        return PackingResult("invalid", True)
    return PackingResult("timeout", True)


def settle_allocation(lifetimes, footprint, hierarchy, level, topologies, target_levels):
    """AllocationMetadata for the addressable levels, or AnalysisError saying
    which of cannot fit / cannot be expressed / did not settle happened."""
    if level is None:
        return None  # no level to project against: the question is not asked
    facts = {lvl.name: lvl for lvl in hierarchy.explicit_levels}
    statuses = []
    for name in ADDRESSABLE:
        mine = [lt for lt in lifetimes if lt.level == name]
        if not mine:
            continue
        fact = facts.get(name)
        if fact is None or fact.capacity_bytes is None:
            raise AnalysisError(
                f"the target states no usable capacity for '{name}', so no arrangement of its "
                "buffers can be shown to fit"
            )
        owner = fact.owner
        if owner != "target" and owner != level:
            raise AnalysisError(
                f"'{name}' is owned per '{owner}', but the analysed topology level is "
                f"'{level}'; its capacity domains cannot be assumed (analyse at --topology {owner})"
            )
        buffers = [Buffer(lt.defined_at, lt.last_used_at + 1, lt.bytes) for lt in mine]
        capacity = fact.capacity_bytes
        for lt in mine:
            if lt.bytes > capacity:
                raise AnalysisError(
                    f"a '{name}' buffer needs {lt.bytes} B ('{lt.binding}'), more than the "
                    f"{capacity} B the target states for that level"
                )
        peak = peak_live(buffers)
        if peak > capacity:
            raise AnalysisError(
                f"'{name}' holds {peak} B at one point of this program, more than the "
                f"{capacity} B the target states for that level"
            )
        result = solve_packing(buffers, capacity)
        if result.status == "infeasible":
            raise AnalysisError(
                f"no arrangement of this program's '{name}' buffers fits within the {capacity} B "
                "the target states for that level"
            )
        if result.status == "invalid":
            raise AnalysisError(f"the '{name}' placement cannot be expressed as a packing")
        if result.status == "timeout":
            raise AnalysisError(f"the '{name}' placement did not settle within its time limit")
        statuses.append(result.status)
    return AllocationMetadata("feasible" if "feasible" in statuses else "optimal")

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
refused without searching; anything else goes to the packer
(``analysis.packing``: a MiniMalloc-style canonical search, then CP-SAT within
the same time limit to prove that nothing fits), and every packing it returns
has passed the independent validator. A found packing settles the question
(``optimal``, as CP-SAT reports a satisfied model; its ``feasible`` is kept as
it says). No address is reported: only that an arrangement exists
(``solver_status``).
"""
from __future__ import annotations

from tilefoundry.errors import AnalysisError
from tilefoundry.analysis.memory.records import AllocationMetadata
from tilefoundry.packing import Buffer, PackingResult, pack, peak_live
from tilefoundry.packing.proof import SEED

__all__ = ["ADDRESSABLE", "Buffer", "PackingResult", "solve_packing", "settle_allocation",
           "TIME_LIMIT_S", "SEED"]

ADDRESSABLE = ("gmem", "smem")
TIME_LIMIT_S = 10.0


def solve_packing(buffers, capacity: int, *, time_limit_s: float = TIME_LIMIT_S,
                  seed: int = SEED) -> PackingResult:
    """Place every buffer below ``capacity`` with no two live ones overlapping
    (``packing.pack``: shortcuts, canonical search, CP-SAT proof, validator)."""
    return pack(buffers, capacity, time_limit_s=time_limit_s, seed=seed)


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

"""CP-SAT on the same question (NoOverlap2D): what proves, within a budget,
that no packing exists when the search could not finish. ortools is imported
lazily, so ``import tilefoundry`` stays light."""
from __future__ import annotations

__all__ = ["cp_sat_packing", "SEED"]

SEED = 20240601


def cp_sat_packing(buffers, capacity: int, time_limit_s: float, seed: int = SEED):
    """(status, offsets): status optimal | feasible | infeasible | invalid |
    timeout, as CP-SAT reports it (fixed seed, one worker)."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    xs, ys, offsets = [], [], []
    for k, b in enumerate(buffers):
        xs.append(model.NewFixedSizeIntervalVar(b.start, b.end - b.start, f"t{k}"))
        y0 = model.NewIntVar(0, capacity - b.size, f"o{k}")
        ys.append(model.NewFixedSizeIntervalVar(y0, b.size, f"s{k}"))
        offsets.append(y0)
    model.AddNoOverlap2D(xs, ys)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(float(time_limit_s), 0.01)
    solver.parameters.random_seed = int(seed)
    solver.parameters.num_workers = 1
    status = solver.Solve(model)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        word = "optimal" if status == cp_model.OPTIMAL else "feasible"
        return word, tuple(int(solver.Value(o)) for o in offsets)
    if status == cp_model.INFEASIBLE:
        return "infeasible", ()
    if status == cp_model.MODEL_INVALID:
        return "invalid", ()
    return "timeout", ()

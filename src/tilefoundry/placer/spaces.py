"""The search space of each kernel kind, and the order it is priced in.

- **matmul** (GEMM / GEMV) is a constraint problem: a CTA grid ``grid_m x grid_n
  x split_k`` and a K tile, each a divisor of its extent, under the level's unit
  count and the per-CTA capacities (both operand tiles and the f32 product in smem,
  the f32 accumulator in rmem). CP-SAT (OR-tools) states it exactly — divisor choices as
  element constraints, the products as multiplication equalities — and
  enumerates every feasible point, single-threaded with a fixed seed, so the
  space and its order are the same on every run.
- a **GEMV piece** of a sequence (placer/sequence.py) is a structured
  enumeration: its own CTA count as output-column CTAs times a split-K, each a
  divisor of its extent, and the largest K tiles that fit smem, ordered by the
  surrogate and cut to the best few (``GEMV_PIECE_POINTS``).
- **rows** is a structured enumeration: the divisors of the row count that fit
  the level, times the staging level (smem, rmem). It is small; no solver.

Points are priced in the order of an analytic surrogate (bytes moved and flops
over the units the grid occupies, plus a latency per K-loop trip): what a time
limit cuts is the tail the surrogate thinks least of. The surrogate only
orders; every answer is priced by the objective (objective.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from tilefoundry.errors import AnalysisError
from tilefoundry.placer.placed_program import MatmulChoice, RowsChoice

__all__ = ["Budget", "budget_of", "gemv_piece_points", "space_of"]

#: the smallest K tile a staged operand is cut into (one bf16 MMA k-step is 16
#: wide: NVIDIA PTX ISA, "Matrix shape" of mma.m16n8k16), unless K is shorter
MIN_TILE_K = 16
#: the largest K tile considered: past it a tile only adds staging bytes
MAX_TILE_K = 1024
#: the latency one K-loop trip is charged in the surrogate (ns): a dependent
#: global load per trip, of the order of the DRAM latency the targets state
TRIP_NS = 600.0
#: the most waves of CTAs a grid may take (a GEMM whose per-CTA tiles must fit the
#: register file needs more CTAs than the device has SMs: they run in waves)
MAX_WAVES = 4
_DTYPE_BYTES = {"f32": 4, "bf16": 2, "f16": 2, "fp8e4m3": 1, "fp8e5m2": 1, "i32": 4, "f64": 8}


@dataclass(frozen=True)
class Budget:
    """What one unit of the level may hold and how many units there are."""

    level: str
    units: int
    smem_bytes: int | None
    rmem_bytes: int | None
    bandwidth: float  # global memory, bytes per second
    peak_flops: dict  # dtype -> FLOP/s


def budget_of(target, level: str) -> Budget:
    """The level's unit count and the per-unit capacities, from the target's facts."""
    from tilefoundry.target import facts as F

    capacity = target.get_facts(F.ParallelCapacityFacts)
    if capacity.topology != level:
        raise AnalysisError(f"place: {target.identity} states its parallel units at level "
                         f"'{capacity.topology}', not '{level}'; place over --level {capacity.topology}")
    levels = {fact.name: fact for fact in target.get_facts(F.MemoryHierarchyFacts).explicit_levels}
    if "smem" not in levels:
        raise AnalysisError(f"place: {target.identity} has no smem level; place stages operands in smem "
                         "(a CUDA target: tilefoundry target list)")
    throughput = target.get_facts(F.ThroughputFacts)
    rmem = levels.get("rmem")
    return Budget(level, capacity.parallel_units, levels["smem"].capacity_bytes,
                  rmem.capacity_bytes if rmem is not None else None,
                  float(throughput.memory_bandwidth_bytes_per_second or 1),
                  dict(throughput.peak_flops_per_second))


def _bytes(dtype: str) -> int:
    return _DTYPE_BYTES.get(dtype, 4)


def _divisors(n: int) -> list[int]:
    """The divisors of ``n`` in increasing order, in O(sqrt n) steps (a hostile
    extent of 10^11 must not walk every integer below it)."""
    from math import isqrt

    low = [d for d in range(1, isqrt(n) + 1) if n % d == 0]
    return low + [n // d for d in reversed(low) if d * d != n]


def _matmul_space(kernel, budget: Budget, seed: int) -> list[MatmulChoice]:
    """Every feasible matmul placement (CP-SAT enumeration)."""
    from ortools.sat.python import cp_model

    m, k, n = kernel.dims["M"], kernel.dims["K"], kernel.dims["N"]
    a, b = kernel.params[:2]
    # each tile at its own dtype: it goes to the tensor cores as it is, no f32
    # copy (placed_program._matmul_body)
    staged = {"a": _bytes(a.dtype), "b": _bytes(b.dtype)}
    model = cp_model.CpModel()

    def divisor_var(name: str, extent: int, allowed=None):
        values = [d for d in _divisors(extent) if allowed is None or allowed(d)]
        return model.NewIntVarFromDomain(cp_model.Domain.FromValues(values), name)

    most = budget.units * MAX_WAVES
    batch = kernel.dims.get("B", 1)
    gb = divisor_var("grid_b", batch, lambda d: d <= most)
    gm = divisor_var("grid_m", m, lambda d: d <= most)
    gn = divisor_var("grid_n", n, lambda d: d <= most)
    # a batch is the parallelism a split-K adds: a batched matmul walks its whole K
    ks = divisor_var("split_k", k, lambda d: d <= budget.units and (batch == 1 or d == 1))
    tiles = [d for d in _divisors(k) if min(MIN_TILE_K, k) <= d <= MAX_TILE_K]
    tk = model.NewIntVarFromDomain(cp_model.Domain.FromValues(tiles), "tile_k")
    # the window tile_k * split_k divides K: K = window * trips
    window = model.NewIntVar(1, k, "window")
    model.AddMultiplicationEquality(window, [tk, ks])
    trips = model.NewIntVar(1, k, "trips")
    model.AddMultiplicationEquality(k, [window, trips])
    plane = model.NewIntVar(1, most, "grid_mn")
    model.AddMultiplicationEquality(plane, [gm, gn])
    grid = model.NewIntVar(1, most, "grid_bmn")
    model.AddMultiplicationEquality(grid, [gb, plane])
    ctas = model.NewIntVar(1, most, "ctas")
    model.AddMultiplicationEquality(ctas, [grid, ks])
    # per-CTA tiles: M/grid_m rows of A and N/grid_n columns of B, tile_k deep
    bm = model.NewIntVar(1, m, "tile_m")
    model.AddMultiplicationEquality(m, [bm, gm])
    bn = model.NewIntVar(1, n, "tile_n")
    model.AddMultiplicationEquality(n, [bn, gn])
    a_tile = model.NewIntVar(1, m * k, "a_tile")
    model.AddMultiplicationEquality(a_tile, [bm, tk])
    b_tile = model.NewIntVar(1, k * n, "b_tile")
    model.AddMultiplicationEquality(b_tile, [tk, bn])
    bb = model.NewIntVar(1, batch, "tile_b")  # the batch entries one CTA holds
    model.AddMultiplicationEquality(batch, [bb, gb])
    plane_acc = model.NewIntVar(1, m * n, "plane_acc")
    model.AddMultiplicationEquality(plane_acc, [bm, bn])
    acc = model.NewIntVar(1, batch * m * n, "acc")
    model.AddMultiplicationEquality(acc, [bb, plane_acc])
    whole_a = model.NewIntVar(1, batch * m * k, "a_tiles")
    model.AddMultiplicationEquality(whole_a, [bb, a_tile])
    whole_b = model.NewIntVar(1, batch * k * n, "b_tiles")
    model.AddMultiplicationEquality(whole_b, [bb, b_tile])
    if budget.smem_bytes is not None:  # both tiles, and the f32 product of smem operands
        model.Add(staged["a"] * whole_a + staged["b"] * whole_b + 4 * acc <= budget.smem_bytes)
    if budget.rmem_bytes is not None:  # the f32 accumulator
        model.Add(4 * acc <= budget.rmem_bytes)

    found: list[MatmulChoice] = []

    class Collect(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self):
            found.append(MatmulChoice(self.Value(gm), self.Value(gn), self.Value(ks), self.Value(tk),
                                      grid_b=self.Value(gb)))

    solver = cp_model.CpSolver()
    solver.parameters.enumerate_all_solutions = True
    solver.parameters.num_workers = 1  # one worker: the same points in the same order
    # CP-SAT's seed is a 31-bit field: any whole number maps onto it, one seed one answer
    solver.parameters.random_seed = seed % (1 << 31)
    solver.Solve(model, Collect())
    return sorted(set(found))


def _matmul_surrogate(kernel, choice: MatmulChoice, budget: Budget) -> float:
    """Roofline time over the units the grid occupies, plus a latency per trip (ns)."""
    m, k, n = kernel.dims["M"], kernel.dims["K"], kernel.dims["N"]
    a, b = kernel.params[:2]
    occupied = _occupancy(choice.ctas, budget.units)
    batch = kernel.dims.get("B", 1)
    moved = batch * (_bytes(a.dtype) * m * k * choice.grid_n + _bytes(b.dtype) * k * n * choice.grid_m
                     + _bytes(kernel.result[1]) * m * n + (4 * m * n * choice.split_k if choice.split_k > 1 else 0))
    peak = budget.peak_flops.get(a.dtype) or max(budget.peak_flops.values(), default=1.0)
    seconds = max(moved / budget.bandwidth, 2.0 * batch * m * n * k / peak) / occupied
    trips = k // (choice.tile_k * choice.split_k)
    return seconds * 1e9 + TRIP_NS * trips


def _occupancy(ctas: int, units: int) -> float:
    """The share of the units busy over the waves ``ctas`` CTAs take."""
    waves = -(-ctas // units)
    return ctas / (waves * units)


def _rows_space(kernel, budget: Budget) -> list[RowsChoice]:
    """Row splits times column writers (each computing its rows whole) times staging."""
    *lead, hidden = kernel.result[0]
    most = budget.units * MAX_WAVES
    # (B, S, H): a row split is B's share times S's; of equal grids, the most over S
    splits = {}
    for outer in (_divisors(lead[0]) if len(lead) == 2 else [1]):
        for inner in _divisors(lead[-1]):
            if outer * inner <= most:
                splits.setdefault(outer * inner, outer)
    return [RowsChoice(g, staging, c, outer) for g, outer in sorted(splits.items()) for c in _divisors(hidden)
            if g * c <= most for staging in ("smem", "rmem")]


def _rows_surrogate(kernel, choice: RowsChoice, budget: Budget) -> float:
    """Each CTA's share of the reads (its rows whole) and of the writes over the
    bandwidth of the units busy."""
    read = sum(_bytes(p.dtype) * _count(p.shape) for p in kernel.params)
    written = _bytes(kernel.result[1]) * _count(kernel.result[0])
    occupied = _occupancy(choice.ctas, budget.units)
    moved = read * choice.cols + written
    return moved / budget.bandwidth / occupied * 1e9 / max(1, choice.cols) + (0.0 if choice.staging == "rmem" else 1.0)


def _count(shape) -> int:
    total = 1
    for d in shape:
        total *= d
    return total


def space_of(kernel, budget: Budget, seed: int = 0) -> list:
    """Every point of the kernel's space, in the order it is priced."""
    if kernel.kind == "matmul":
        points = _matmul_space(kernel, budget, seed)
        return sorted(points, key=lambda c: (_matmul_surrogate(kernel, c, budget), c))
    points = _rows_space(kernel, budget)
    return sorted(points, key=lambda c: (_rows_surrogate(kernel, c, budget), c))


#: the points of one GEMV piece priced: the surrogate's best few. A sequence
#: prices every piece alone and a decoder layer holds ten of them, so each keeps
#: sixteen (a GEMV piece prices in 20-150 ms: a layer's search stays in seconds)
GEMV_PIECE_POINTS = 16
#: the K tiles kept per (column CTAs, split-K): the largest that fit smem (a
#: smaller one only adds loop trips, each a dependent load)
GEMV_PIECE_TILES = 3


def gemv_piece_native(piece) -> bool:
    """Whether a GEMV piece's row and weights share one narrow dtype: its tiles then
    go to the tensor cores as they are (f32 products), no f32 copy in smem."""
    dtypes = {dtype for name, _, dtype, _ in piece.inputs
              if name == piece.left or any(name == weight for _, weight, _, _ in piece.lines)}
    return len(dtypes) == 1 and dtypes != {"f32"}


def _gemv_piece_smem(piece, cols: int, tile: int) -> int:
    """The bytes a GEMV piece's CTA stages in smem: the row and the widest
    weight tile (one weight tile is live at a time), each with its f32 cast
    unless they go to the tensor cores as they are (``gemv_piece_native``)."""
    per = 2 if gemv_piece_native(piece) else 6
    return piece.m * piece.k * per + max(tile * (n // cols) * per for _, _, n, _ in piece.lines)


def _gemv_piece_surrogate(piece, ctas: int, split_k: int, tile: int, budget: Budget) -> float:
    """The weights and the row each column CTA reads, and the f32 partials a
    split-K writes and reads back, over the bandwidth of the units the CTAs keep
    busy, plus a latency per K-loop trip (ns)."""
    columns = sum(n for _, _, n, _ in piece.lines)
    moved = 2 * piece.k * columns + 2 * piece.m * piece.k * (ctas // split_k)
    if split_k > 1:
        moved += 2 * 4 * split_k * piece.m * columns
    # a split-K's partials are written, then read back to be summed: one dependent trip more
    trips = piece.k // (tile * split_k) + (1 if split_k > 1 else 0)
    return moved / budget.bandwidth / _occupancy(ctas, budget.units) * 1e9 + TRIP_NS * trips


def gemv_piece_points(piece, budget: Budget) -> list:
    """(CTA count, (split-K, K tile)) of a GEMV piece, best surrogate first:
    column CTAs dividing every matmul's output columns times a split-K dividing
    K (a GEMV of few columns still fills the units), at most ``MAX_WAVES``
    waves, the largest ``GEMV_PIECE_TILES`` tiles of ``K / split-K`` (16 ..
    1024) within smem. The best point of each split-K and tile size (largest,
    second, third) comes before any second (the surrogate knows the partials'
    bytes and trip and the loop's trips, not how the estimate prices their sum
    or a CTA's staged bytes), then by the surrogate; the first
    ``GEMV_PIECE_POINTS``."""
    import math

    columns = math.gcd(*[n for _, _, n, _ in piece.lines])
    most = budget.units * MAX_WAVES
    found = []
    for cols in (d for d in _divisors(columns) if d <= most):
        # each split at least one MMA k-step of K (``MIN_TILE_K`` rows), unless K is shorter
        for split_k in (d for d in _divisors(piece.k) if cols * d <= most and piece.k // d >= min(MIN_TILE_K, piece.k)):
            share = piece.k // split_k
            # a CTA's whole share of K in one tile where it fits (no loop trips:
            # a router's 2048 x 1 column per CTA), else tiles up to MAX_TILE_K
            tiles = [t for t in _divisors(share) if (min(MIN_TILE_K, share) <= t <= MAX_TILE_K or t == share)
                     and (budget.smem_bytes is None or _gemv_piece_smem(piece, cols, t) <= budget.smem_bytes)]
            for size, tile in enumerate(reversed(tiles[-GEMV_PIECE_TILES:])):
                ctas = cols * split_k
                found.append((_gemv_piece_surrogate(piece, ctas, split_k, tile, budget), -ctas, (split_k, size),
                              (ctas, (split_k, tile))))
    found.sort()
    seen: dict = {}
    ranked = []
    for item in found:
        rank = seen[item[2]] = seen.get(item[2], -1) + 1
        ranked.append((rank, *item))
    return [point for *_, point in sorted(ranked)[:GEMV_PIECE_POINTS]]

"""Bounds and verdicts: one output of the program held against its reference.

Two sides, always named so: the *program* (the selection checked) and the
*reference* (a twin, or for ``check --placed`` the placed run held against the
logical one). A bound is

- stated: ``--rtol/--atol``, ``|program - reference| <= atol + rtol·|reference|``;
- derived (``--tolerance dtype``, the default for a twin): per element, from
  the program's forward error bounds and the reference's (``error_bounds``):
  ``|program - reference| <= min(W_p + W_r, 8·sqrt(R_p^2 + R_r^2))``, W the
  worst-case bounds, R the root-sum-square ones;
- for ``check --placed`` (``placed_bound``): the placed run regroups the same
  arithmetic (boxes, Partial folds), so a value may differ from its logical one
  by the roundings on its path, counted per rounding at its own dtype's unit
  roundoff (``rounding_depths``) with two of margin, scaled by the value's
  largest magnitude.

``max_rel`` is stated over the elements whose magnitude reaches the output's
floor (``REL_FLOOR`` of its largest), so it is never infinite on a PASS.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from tilefoundry.ir.expr import Call, GridRegionExpr, Tuple, body_children, postorder
from tilefoundry.ir.tensor_type import TensorType, tensor_leaves
from tilefoundry.semantics.op_numerics import np
from tilefoundry.execute.error_bounds import unit_roundoff

__all__ = ["Bound", "unit_roundoff", "rounding_depths", "placed_bound", "derived_bound",
           "explicit_bound", "Verdict", "compare", "Path", "NO_PATH", "REL_FLOOR"]

#: max_rel counts the elements at least this fraction of the output's largest magnitude
REL_FLOOR = 1e-3

# data movement: no rounding on the path (reshard is not here: it folds a Partial's contributions)
_MOVES = {"reshape", "transpose", "concat", "stack", "split", "repeat_interleave", "slice",
          "insert_slice", "index_select", "index_copy", "cache_update", "where", "local",
          "tuple_get_item"}
# ops that sum many terms: the accumulated extent of one output element
_CONTRACTING = {"matmul", "reduce", "rms_norm", "layer_norm", "softmax", "conv2d",
                "mma_sm80_16x8x16", "wgmma_sm90_64x128x16"}


def _accumulated(call) -> int:
    name = call.op.name
    if name not in _CONTRACTING:
        return 0
    arg = call.args[0].type
    if not isinstance(arg, TensorType) or not arg.shape:
        return 0
    if name == "reduce":
        axes = call.op.axes if isinstance(call.op.axes, tuple) else (call.op.axes,)
        return prod(int(arg.shape[a]) for a in axes) if axes else prod(int(e) for e in arg.shape)
    if name == "conv2d":
        weight = call.args[1].type
        return prod(int(e) for e in weight.shape[1:])
    return int(arg.shape[-1])


@dataclass(frozen=True)
class Path:
    """The roundings on an output's longest path: how many (r), the sum of
    their unit roundoffs (each at its own result dtype), and the terms
    accumulated in f32 (A)."""

    roundings: int = 0
    roundoff: float = 0.0
    accumulated: int = 0

    def join(self, other: "Path") -> "Path":
        return Path(max(self.roundings, other.roundings), max(self.roundoff, other.roundoff),
                    max(self.accumulated, other.accumulated))

    def plus(self, other: "Path", times: int = 1) -> "Path":
        return Path(self.roundings + times * other.roundings,
                    self.roundoff + times * other.roundoff,
                    self.accumulated + times * other.accumulated)


NO_PATH = Path()


def _step(node, paths: dict, fallback: dict) -> Path:
    path = NO_PATH
    for child in body_children(node):
        path = path.join(paths.get(id(child), fallback.get(id(child), NO_PATH)))
    if isinstance(node, Call) and node.op.name not in _MOVES:  # moving an element never rounds it
        floats = [leaf.dtype for leaf in tensor_leaves(node.type) if leaf.dtype.is_float]
        if floats:
            path = path.plus(Path(1, max(unit_roundoff(d) for d in floats), _accumulated(node)))
    return path


def rounding_depths(function) -> dict:
    """id(node) -> the Path from the inputs to it; a loop's body counts once per trip."""
    paths: dict = {id(p): NO_PATH for p in function.params}
    for node in postorder(function.body, children=body_children):
        if id(node) in paths:
            continue
        paths[id(node)] = _loop_path(node, paths) if isinstance(node, GridRegionExpr) else \
            _step(node, paths, {})
    return paths


def _loop_path(loop, paths: dict) -> Path:
    # the loop's own count (len() of a range stops at sys.maxsize: 2**64 trips is a count)
    trips = loop.trips if all(isinstance(v, int) for v in (loop.start, loop.extent, loop.step)) else 1
    seed = NO_PATH
    for init in loop.inits:
        seed = seed.join(paths.get(id(init), NO_PATH))
    body = {id(loop.induction_var): NO_PATH, **{id(c): NO_PATH for c in loop.carried}}
    for node in postorder(Tuple(loop.yields, None), children=body_children):
        if id(node) in body:
            continue
        body[id(node)] = _step(node, body, paths)
        paths.setdefault(id(node), seed.plus(body[id(node)], trips))
    step = NO_PATH
    for y in loop.yields:
        step = step.join(body.get(id(y), NO_PATH))
    return seed.plus(step, trips)


@dataclass(frozen=True)
class Bound:
    """What one output is held to. ``rtol``/``atol``: the stated numbers (None
    for a derived bound); ``allowed``: the derived per-element bound
    (``error_bounds.held_apart``), or None; ``derivation``: the printed text."""

    rtol: float | None
    atol: float | None
    derivation: str
    allowed: object = None

    def at(self, reference):
        """The allowed |program - reference| per element."""
        if self.allowed is not None:
            return self.allowed
        wide = np.abs(np.where(np.isfinite(reference), reference, 0.0))
        return (self.atol or 0.0) + (self.rtol or 0.0) * wide


def explicit_bound(rtol: float, atol: float) -> Bound:
    return Bound(rtol, atol, f"stated: |program - reference| <= {atol:g} + {rtol:g}·|reference|")


def derived_bound(allowed, derivation: str) -> Bound:
    return Bound(None, None, derivation, np.asarray(allowed, dtype=np.float64))


def placed_bound(dtype, path: Path, logical, *, margin: int = 0) -> Bound:
    """``check --placed``'s bound (module docstring): the unit roundoffs on the
    value's path plus ``margin`` at its dtype, and its f32 accumulations, as a
    relative bound; atol scales it by the value's largest magnitude. An integer
    or bool value is exact."""
    if not dtype.is_float:
        return Bound(0.0, 0.0, f"{dtype.name}: exact (rtol = atol = 0)")
    u32 = 2.0 ** -24
    roundoff = path.roundoff + margin * unit_roundoff(dtype)
    rtol = roundoff + path.accumulated * u32
    array = np.asarray(logical)
    finite = array[np.isfinite(array.astype(np.float64))] if array.size else array
    scale = float(np.max(np.abs(finite.astype(np.float64)))) if finite.size else 0.0
    atol = rtol * scale
    text = (f"{dtype.name} value, placed against logical: {path.roundings + margin} roundings "
            f"(unit roundoffs summing to {roundoff:.3g}) and {path.accumulated} f32-accumulated "
            f"terms: rtol = {rtol:.3g}, atol = rtol·max|logical| = {atol:.3g}")
    return Bound(rtol, atol, text)


@dataclass(frozen=True)
class Verdict:
    """One output's comparison: the program's value against the reference's.

    ``max_rel`` is over the elements with |reference| >= ``rel_floor``;
    ``worst_index`` is the element furthest past (or nearest to) its bound, where
    the program holds ``program_value``, the reference ``reference_value`` and
    the bound allows ``allowed_value``."""

    name: str
    passed: bool
    bound: Bound
    max_abs: float
    max_rel: float
    rel_floor: float
    worst_index: tuple | None
    program_value: float | None
    reference_value: float | None
    allowed_value: float | None = None
    reason: str | None = None  # a shape difference: no element comparison


def compare(name: str, program, reference, bound: Bound) -> Verdict:
    program = np.asarray(program)
    reference = np.asarray(reference)
    if program.shape != reference.shape:
        return Verdict(name, False, bound, float("inf"), float("inf"), 0.0, None, None, None, None,
                       f"the reference has shape {reference.shape} where the program's is {program.shape}")
    p = program.astype(np.float64)
    r = reference.astype(np.float64)
    if p.size == 0:
        return Verdict(name, True, bound, 0.0, 0.0, 0.0, None, None, None)
    both_nan = np.isnan(p) & np.isnan(r)
    same_inf = np.isinf(p) & (p == r)
    diff = np.where(both_nan | same_inf, 0.0, np.abs(p - r))
    diff = np.where(np.isnan(diff), np.inf, diff)
    allowed = np.broadcast_to(bound.at(r), diff.shape)
    excess = diff - allowed
    worst = int(np.argmax(np.where(np.isnan(excess), np.inf, excess).reshape(-1)))
    index = tuple(int(i) for i in np.unravel_index(worst, p.shape)) if p.ndim else ()
    magnitude = np.abs(np.where(np.isfinite(r), r, 0.0))
    floor = REL_FLOOR * float(np.max(magnitude))
    counted = (magnitude >= floor) & (magnitude > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(counted, diff / np.where(counted, magnitude, 1.0), 0.0)
    passed = bool(np.all(excess <= 0))
    return Verdict(name, passed, bound, float(np.max(diff)), float(np.max(rel)), floor, index,
                   float(p.reshape(-1)[worst]), float(r.reshape(-1)[worst]),
                   float(allowed.reshape(-1)[worst]))

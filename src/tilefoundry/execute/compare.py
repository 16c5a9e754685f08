"""Comparison bounds and verdicts (``check``).

A bound is explicit: ``--rtol/--atol``, or derived from the output's dtype and
the number of serial roundings on its longest path (``--tolerance dtype``).
The derivation is the standard forward-error bound: each rounding to a dtype
of unit roundoff u contributes u, and an accumulation of n terms carried in
f32 contributes n·u_f32 (gamma_n ~ n·u). So for an output reached through r
roundings and accumulations of total length A::

    rtol = r·u(dtype) + A·u(f32)        atol = rtol · max|expected|

The atol term is what makes a bound meaningful near zero, where cancellation
leaves only absolute error: its scale is the output's own magnitude.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from tilefoundry.ir.expr import Call, GridRegionExpr, Tuple, body_children, postorder
from tilefoundry.ir.tensor_type import TensorType, tensor_leaves
from tilefoundry.semantics.evaluation import np

__all__ = ["Bound", "unit_roundoff", "rounding_depths", "derived_bound", "explicit_bound",
           "Verdict", "compare", "Path", "NO_PATH"]

# ops that sum many terms: the accumulated extent of one output element
_CONTRACTING = {"matmul", "reduce", "rms_norm", "layer_norm", "softmax", "conv2d",
                "mma_sm80_16x8x16", "wgmma_sm90_64x128x16"}


def unit_roundoff(dtype) -> float:
    """2**-(mantissa bits + 1) for a float dtype; 0 for exact types."""
    if not dtype.is_float:
        return 0.0
    return 2.0 ** -(dtype.mantissa_bits + 1)


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
    if isinstance(node, Call):
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
    rtol: float
    atol: float
    derivation: str


def explicit_bound(rtol: float, atol: float) -> Bound:
    return Bound(rtol, atol, f"stated: rtol={rtol:g}, atol={atol:g}")


def derived_bound(dtype, path: Path, expected, *, margin: int = 0) -> Bound:
    """The forward-error bound of the module docstring for one output: each
    rounding on the path counts its own dtype's unit roundoff; ``margin``
    more roundings at the output's. An integer or bool output is exact."""
    if not dtype.is_float:
        return Bound(0.0, 0.0, f"{dtype.name}: exact (rtol = atol = 0)")
    u32 = 2.0 ** -24
    roundoff = path.roundoff + margin * unit_roundoff(dtype)
    rtol = roundoff + path.accumulated * u32
    array = np.asarray(expected)
    finite = array[np.isfinite(array.astype(np.float64))] if array.size else array
    scale = float(np.max(np.abs(finite.astype(np.float64)))) if finite.size else 0.0
    atol = rtol * scale
    text = (f"{dtype.name} output; {path.roundings + margin} serial roundings whose unit roundoffs "
            f"(each at its result dtype: f32 2^-24, bf16 2^-8, ...) sum to {roundoff:.3g}, "
            f"{path.accumulated} terms accumulated in f32 (u32 = 2^-24): rtol = {roundoff:.3g} + "
            f"{path.accumulated}·u32 = {rtol:.3g}; atol = rtol·max|expected| = "
            f"{rtol:.3g}·{scale:.4g} = {atol:.3g}")
    return Bound(rtol, atol, text)


@dataclass(frozen=True)
class Verdict:
    """One output's comparison."""

    name: str
    passed: bool
    bound: Bound
    max_abs: float
    max_rel: float
    worst_index: tuple | None
    expected_value: float | None
    actual_value: float | None
    reason: str | None = None  # a shape or dtype difference: no element comparison


def compare(name: str, expected, actual, bound: Bound) -> Verdict:
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    if expected.shape != actual.shape:
        return Verdict(name, False, bound, float("inf"), float("inf"), None, None, None,
                       f"shape {actual.shape} where {expected.shape} is expected")
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    both_nan = np.isnan(e) & np.isnan(a)
    same_inf = np.isinf(e) & (e == a)
    diff = np.where(both_nan | same_inf, 0.0, np.abs(a - e))
    diff = np.where(np.isnan(diff), np.inf, diff)
    allowed = bound.atol + bound.rtol * np.abs(np.where(np.isfinite(e), e, 0.0))
    excess = diff - allowed
    if e.size == 0:
        return Verdict(name, True, bound, 0.0, 0.0, None, None, None)
    worst = int(np.argmax(excess.reshape(-1)))
    index = tuple(int(i) for i in np.unravel_index(worst, e.shape)) if e.ndim else ()
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(diff == 0, 0.0, diff / np.abs(e))
    passed = bool(np.all(excess <= 0))
    return Verdict(name, passed, bound, float(np.max(diff)), float(np.max(rel)), index,
                   float(e.reshape(-1)[worst]), float(a.reshape(-1)[worst]))

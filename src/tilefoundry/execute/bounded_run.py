"""The logical run with a forward error bound beside every value
(``check --against`` with ``--tolerance dtype``; the rules: ``error_bounds``
and ``bound_rules``)."""
from __future__ import annotations

from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.semantics.op_numerics import np
from tilefoundry.execute.blas_threads import one_blas_thread
from tilefoundry.execute.bound_rules import both_bounds
from tilefoundry.execute.error_bounds import (
    U32, Bounded, Derivation, bounds_of, held_apart, held_to, is_exact, unit_roundoff, values_of,
)
from tilefoundry.execute.interpreter import location_of, run_body
from tilefoundry.execute.near_ties import NearTie, near_tie
from tilefoundry.execute.logical import LogicalDomain, PerParticipant, has_per, output_leaves

__all__ = ["BoundDomain", "run_bounded"]


class BoundDomain:
    """The logical run with a bound beside every value (an interpreter Domain)."""

    def __init__(self):
        self.logical = LogicalDomain()
        self.derivation = Derivation()

    def elements(self, value) -> int:
        if isinstance(value, Bounded):
            bounds = int(np.size(value.e)) + (0 if value.s is value.e else int(np.size(value.s)))
            return self.logical.elements(value.x) + bounds
        return sum(self.elements(v) for v in value)

    def tuple(self, values: tuple):
        return tuple(values)

    def constant(self, node):
        x = self.logical.constant(node)
        try:  # the written number rounded once to the constant's dtype
            exact = np.asarray(node.value, dtype=np.float64)
            e = np.abs(x.astype(np.float64) - exact) if node.type.dtype.is_float else np.zeros(x.shape)
        except (TypeError, ValueError):
            e = np.zeros(np.shape(x))
        return Bounded(x, e)

    def index(self, var, value: int):
        x = self.logical.index(var, value)
        return Bounded(x, np.zeros(()))

    def apply(self, call, args: tuple):
        if call.op.name == "tuple_get_item":
            return args[0][call.op.index]
        xs = tuple(values_of(a) for a in args)
        x = self.logical.apply(call, xs)
        if has_per(xs) or has_per(x):
            e = self._per_participant(call, args, x)
        else:
            if call.op.name in ("topk", "argmax") and self.derivation.tie is None:
                self.derivation.tie = _undecided(call, args[0], x)
            e, s = both_bounds(call, xs, tuple(bounds_of(a) for a in args),
                               tuple(bounds_of(a, True) for a in args), x, self)
            return _pack(x, _clean(e, call.type, x), call.type, _clean(s, call.type, x))
        return _pack(x, _clean(e, call.type, x), call.type)

    def _per_participant(self, call, args, x):
        """A value that differs by participant (after ``local``): its bound is the
        largest any operand carries, spread over the result (every element of a
        participant's value is computed from the same operands); conservative,
        and rare (a program reading its mesh coordinate)."""
        worst = 0.0
        for a in args:
            for leaf in _leaves(bounds_of(a)):
                if np.size(leaf):
                    worst = max(worst, float(np.max(leaf)))
        # the op's own rounding, at most a few units of its dtype on the largest value
        return _spread(x, call.type, worst)

    def output(self, value, type_):
        if isinstance(type_, TupleType):
            return tuple(self.output(v, t) for v, t in zip(value, type_.fields))
        x = self.logical.output(value.x, type_)

        def whole(e):
            if np.shape(e) != np.shape(x):
                e = np.broadcast_to(np.max(e) if np.size(e) else 0.0, np.shape(x))
            return np.asarray(e, dtype=np.float64)

        return Bounded(x, whole(value.e), whole(value.s))


def _undecided(call, operand, x):
    """The ``NearTie`` where the indices ``topk``/``argmax`` chose are not decided by
    the arithmetic, else None (execute/near_ties.py: why, and what check does then)."""
    if not isinstance(operand, Bounded) or (is_exact(operand.e) and is_exact(operand.s)):
        return None  # exact scores: both sides order them alike
    values = np.asarray(operand.x)
    axis = call.op.axis % values.ndim
    chosen = x[1] if call.op.name == "topk" else np.expand_dims(np.asarray(x), axis)
    mine = (operand.e, operand.s)
    found = near_tie(values, held_apart(mine, mine), chosen, axis, getattr(call.op, "largest", True))
    if found is None:
        return None
    what = f"{call.op.name} (k={call.op.k})" if call.op.name == "topk" else call.op.name
    return NearTie(location_of(call) or call.op.name, what, *found)


def _leaves(value):
    if isinstance(value, tuple):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _spread(x, type_, worst: float):
    if isinstance(type_, TupleType):
        return tuple(_spread(v, t, worst) for v, t in zip(x, type_.fields))
    piece = next(iter(x.pieces.values())) if isinstance(x, PerParticipant) else x
    wide = np.abs(np.asarray(piece, dtype=np.float64)) if type_.dtype.is_float else 0.0
    rounding = 4 * (unit_roundoff(type_.dtype) + U32) * wide if type_.dtype.is_float else 0.0
    return np.full(np.shape(piece), worst) + rounding


def _clean(e, type_, x):
    """Integer and bool values are exact; a NaN bound (inf - inf) is unbounded."""
    if isinstance(type_, TupleType):
        return tuple(_clean(v, t, xv) for v, t, xv in zip(e, type_.fields, x))
    shape = np.shape(next(iter(x.pieces.values()))) if isinstance(x, PerParticipant) else np.shape(x)
    if not isinstance(type_, TensorType) or not type_.dtype.is_float or is_exact(e):
        return np.zeros(())  # exact, whatever its shape
    e = np.asarray(e, dtype=np.float64)
    if e.shape != shape:
        e = np.broadcast_to(e, shape)
    return np.where(np.isnan(e), np.inf, e)


def _pack(x, e, type_, s=None):
    if isinstance(type_, TupleType):
        s = e if s is None else s
        return tuple(_pack(xv, ev, t, sv) for xv, ev, t, sv in zip(x, e, type_.fields, s))
    return Bounded(x, e, s)


def run_bounded(function, arguments: dict, *, limit: int | None = None):
    """(outputs name -> array, bounds name -> array, the Derivation) of one logical run;
    each output's bound is min(worst-case, LAMBDA·rss) per element (``error_bounds.Model``)."""
    domain = BoundDomain()
    start = {p: Bounded(v, np.zeros(())) for p, v in arguments.items()}  # inputs are exact
    with one_blas_thread():  # execute/blas_threads.py: why
        value = run_body(function, start, domain, limit=limit)
    outputs, bounds = {}, {}
    for name, v, t in output_leaves(function.body.type, value):
        bounded = domain.output(v, t)
        outputs[name], bounds[name] = bounded.x, held_to(bounded.e, bounded.s)
        domain.derivation.parts[name] = (bounded.e, bounded.s)
    return outputs, bounds, domain.derivation



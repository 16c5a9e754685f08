"""The cost-evaluator contracts (visitor-registry §7, companions §5.1).

An evaluator is ``handler(call, ctx) -> Cost``, registered beside its op with
``@register_cost_evaluator(OpClass)`` (or ``@register_cost(A, B, ...)`` for one
rule shared by several ops). It reads the operand and result types from
``ctx.selected_types`` / ``ctx.selected_output_type`` -- the types as written
when ``ctx.level`` is None, else each type projected to what one unit of that
level holds, re-read in its LOGICAL axes (companions §2.7, analysis §1.2.1: "the
same evaluator over the projected types", so a unit's share never exceeds the
whole). Float work goes to ``flops`` by compute dtype, other work to ``service``
by kind (``integer``, ``predicate``, ``select``, ``special``), never both.
``traffic`` states DIRECTION only, one entry per operand in ``(*args, result)``
order; amounts come from the access relations (the memory family).
"""
from __future__ import annotations

from dataclasses import field

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.memo import memoised
from tilefoundry.ir.shard import flatten_shape
from tilefoundry.ir.tensor_type import TensorType, TupleType, numel, tensor_leaves
from tilefoundry.semantics.op_registry import register_cost_evaluator

__all__ = [
    "TrafficBytes", "Cost", "CostContext", "logical_local_type", "SERVICE_KINDS",
    "register_cost", "reads", "all_read_write", "no_traffic", "directions",
    "leaf_dtype", "leaf_shape", "product", "kind_name", "elementwise_flops", "data_movement",
    "no_work",
]

SERVICE_KINDS = ("integer", "predicate", "select", "special")


# =============================================================== contracts


@frozen_record
class TrafficBytes:
    """Bytes read and written (an evaluator states only which is non-zero)."""

    read: int = 0
    write: int = 0

    @property
    def total_bytes(self) -> int:
        return self.read + self.write


@frozen_record
class Cost:
    """What one occurrence asks of a machine: flops by dtype, service by kind,
    and per-operand traffic directions in ``(*args, result)`` order."""

    flops: dict = field(default_factory=dict)  # DType -> int
    traffic: tuple = ()  # TrafficBytes per operand, then the result
    service: dict = field(default_factory=dict)  # kind -> int

    @property
    def bytes(self) -> int:
        return sum(t.total_bytes for t in self.traffic)


_LOCAL_TYPES: dict = {}  # (type, level, topologies) -> what one unit holds


def logical_local_type(type_, level: str | None, topologies: tuple, cache: dict | None = None):
    """What one unit of ``level`` holds, in the value's LOGICAL axes.

    §2.7 projects to the layout-domain shape (factor positions kept); the
    evaluators read logical extents, so each logical axis takes the product of
    the projected extents of the layout positions holding it (canonical regroup,
    §2.6). Unsplit values are unchanged; with no level nothing divides.
    """
    if level is None:
        return type_
    if isinstance(type_, TupleType):
        return TupleType(tuple(logical_local_type(f, level, topologies, cache) for f in type_.fields))
    if not isinstance(type_, TensorType) or type_.shard is None:
        return type_
    key = (type_, level, topologies)
    if cache is None:  # a caller with no cache of its own shares the module's
        return memoised(_LOCAL_TYPES, key, lambda: _held_logical(type_, level, topologies),
                        limit=8192)
    return memoised(cache, key, lambda: _held_logical(type_, level, topologies))


def _held_logical(type_, level: str, topologies: tuple) -> TensorType:
    """``logical_local_type`` of one sharded tensor, derived (never memoised)."""
    from tilefoundry.semantics.canonical import (
        local_type_of, regroup, relinearised_local_extents, straddles,
    )

    local = local_type_of(type_, level, topologies)
    shard = type_.shard
    domain = tuple(flatten_shape(shard.layout.shape)) if not hasattr(shard.layout, "attrs") else tuple(local.shape)
    if len(domain) != len(local.shape):
        domain = tuple(local.shape)
    if tuple(local.shape) == domain:
        result = type_
    else:
        logical, held = tuple(type_.shape), tuple(local.shape)
        groups = regroup(logical, domain)
        if straddles(groups):
            shape = relinearised_local_extents(logical, domain, held)
        else:
            shape = _grouped_local_extents(logical, domain, held, groups)
        result = TensorType(shape, type_.dtype, type_.layout, type_.storage)
    return result


def _grouped_local_extents(logical: tuple, domain: tuple, held: tuple, groups: tuple) -> tuple:
    """Per logical axis, the extent one unit holds when each axis owns its own
    layout positions: the axis's extent scaled by its positions' held share."""
    shape = []
    for axis, positions in enumerate(groups):
        part = full = 1
        for p in positions:
            part *= held[p]
            full *= domain[p]
        shape.append(logical[axis] * part // full if full else part)
    return tuple(shape)


class CostContext:
    """What an evaluator reads. Unbound (``call=None``) it states the level and
    hierarchy a costing question is asked at; ``bind(call)`` gives the context
    of one call, whose ``selected_types`` / ``selected_output_type`` are the
    operand and result types as written (level None) or projected to one unit.
    """

    def __init__(self, level: str | None = None, topologies: tuple = (), call=None,
                 _projections: dict | None = None):
        self.level = level
        self.topologies = tuple(topologies)
        self.call = call
        self._types = None
        # projections memoised for the life of this context (one analyze call),
        # never across calls
        self._projections = {} if _projections is None else _projections

    def bind(self, call) -> "CostContext":
        return CostContext(self.level, self.topologies, call, self._projections)

    def local_type_of(self, expr_or_type):
        """§2.7 layout-domain projection of an expression's (or a) type."""
        type_ = getattr(expr_or_type, "type", expr_or_type)
        if self.level is None:
            return type_
        from tilefoundry.semantics.canonical import local_type_of

        return local_type_of(type_, self.level, self.topologies)

    def logical_type_of(self, expr_or_type):
        type_ = getattr(expr_or_type, "type", expr_or_type)
        return logical_local_type(type_, self.level, self.topologies, self._projections)

    @property
    def selected_types(self) -> tuple:
        if self._types is None:
            self._types = tuple(self.logical_type_of(a) for a in self.call.args)
        return self._types

    @property
    def selected_output_type(self):
        return self.logical_type_of(self.call)

    def evaluate(self, call) -> Cost:
        """Run ``call``'s registered evaluator under this context."""
        from tilefoundry.semantics.op_registry import COST_EVALUATORS

        handler = COST_EVALUATORS.get(type(call.op))
        if handler is None:
            raise LookupError(type(call.op).__name__)
        return handler(call, self.bind(call))


# =============================================================== helpers


def reads(n: int) -> tuple:
    """``n`` boundaries read."""
    return tuple(TrafficBytes(read=1) for _ in range(n))


def all_read_write(call) -> tuple:
    return reads(len(call.args)) + (TrafficBytes(write=1),)


def no_traffic(call) -> tuple:
    return tuple(TrafficBytes() for _ in range(len(call.args) + 1))


def directions(call, read_mask: tuple, write: bool) -> tuple:
    """``read_mask``: per argument, True when that boundary is read."""
    items = [TrafficBytes(read=1) if r else TrafficBytes() for r in read_mask]
    items += [TrafficBytes()] * (len(call.args) - len(items))
    return tuple(items) + (TrafficBytes(write=1) if write else TrafficBytes(),)


def leaf_dtype(type_) -> DType:
    leaves = tensor_leaves(type_)
    if not leaves:
        raise VerifyError("cost evaluator: operand has no tensor leaf")
    return leaves[0].dtype


def leaf_shape(type_) -> tuple:
    leaves = tensor_leaves(type_)
    return tuple(leaves[0].shape) if leaves else ()


def product(values) -> int:
    result = 1
    for v in values:
        result *= v
    return result


def kind_name(op) -> str:
    kind = getattr(op, "kind", None)
    return str(getattr(kind, "value", kind))


def register_cost(*op_classes):
    """Register one evaluator for several op classes."""
    def decorate(handler):
        for cls in op_classes:
            register_cost_evaluator(cls)(handler)
        return handler

    return decorate


def elementwise_flops(call, ctx) -> Cost:
    """One flop per output element under the result dtype (activations, Clamp,
    and Cast even to an integer dtype: companions §5.2)."""
    out = ctx.selected_output_type
    return Cost({leaf_dtype(out): numel(out)}, all_read_write(call), {})


def data_movement(call, ctx) -> Cost:
    """No work; every operand read, the result written."""
    return Cost({}, all_read_write(call), {})


def no_work(call, ctx) -> Cost:
    """No work and no movement (views, shape readers, tuple projections)."""
    return Cost({}, no_traffic(call), {})

"""Cost evaluators for every op (visitor-registry §7, companions §5).

The contracts first (``TrafficBytes``, ``Cost``, ``CostContext``), then one
section per op family, each evaluator registered with
``@register_cost_evaluator(OpClass)`` right beside the family it serves.

An evaluator is ``handler(call, ctx) -> Cost``. It reads the operand and result
types from ``ctx.selected_types`` / ``ctx.selected_output_type`` -- the types as
written when ``ctx.level`` is None, else each type projected to what one unit of
that level holds, re-read in its LOGICAL axes (companions §2.7, analysis §1.2.1:
"the same evaluator over the projected types", so a unit's share never exceeds
the whole). Float work goes to ``flops`` by compute dtype, other work to
``service`` by kind (``integer``, ``predicate``, ``select``, ``special``), never
both. ``traffic`` states DIRECTION only, one entry per operand in
``(*args, result)`` order; amounts come from the access relations (memory).

The op classes live in the other ``ops`` files and are imported from them. Dim
arithmetic (``DimAdd`` ...) deliberately has no evaluator:
left as a body call it fails compute-cost (companions §1.4).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dim import is_static
from tilefoundry.ir.dtype import DTYPES, DType
from tilefoundry.ir.shard import flatten_shape
from tilefoundry.ir.tensor_type import TensorType, TupleType, numel, tensor_leaves
from tilefoundry.ops.math import (
    Binary, Clamp, Gelu, ReLU, Sigmoid, Silu, Softplus, Tanh, Unary, Where,
)
from tilefoundry.ops.nn import (
    Conv2D, LayerNorm, MatMul, Mma_SM80_16x8x16, Quant, RMSNorm, RoPE, SoftMax,
    Wgmma_SM90_64x128x16,
)
from tilefoundry.ops.sharding import Local, Reshard
from tilefoundry.ops.tensor import (
    ArgMax, Arange, Cast, FullLike, Rank, Reduce, Reshape, ShapeOf, TopK, Transpose,
    TupleGetItem, Zeros,
)
from tilefoundry.ops.tensor_index import (
    CacheUpdate, Concat, IndexAdd, IndexCopy, IndexSelect, InsertSlice, RepeatInterleave,
    Slice, Split, Stack,
)
from tilefoundry.semantics.registry import register_cost_evaluator

__all__ = ["TrafficBytes", "Cost", "CostContext", "logical_local_type", "SERVICE_KINDS"]

SERVICE_KINDS = ("integer", "predicate", "select", "special")


# =============================================================== contracts


@dataclass(frozen=True)
class TrafficBytes:
    """Bytes read and written (an evaluator states only which is non-zero)."""

    read: int = 0
    write: int = 0

    @property
    def total_bytes(self) -> int:
        return self.read + self.write


@dataclass(frozen=True)
class Cost:
    """What one occurrence asks of a machine: flops by dtype, service by kind,
    and per-operand traffic directions in ``(*args, result)`` order."""

    flops: dict = field(default_factory=dict)  # DType -> int
    traffic: tuple = ()  # TrafficBytes per operand, then the result
    service: dict = field(default_factory=dict)  # kind -> int

    @property
    def bytes(self) -> int:
        return sum(t.total_bytes for t in self.traffic)


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
    cached = cache.get(key) if cache is not None else None
    if cached is not None:
        return cached
    from tilefoundry.semantics.canonical import local_type_of, regroup

    local = local_type_of(type_, level, topologies)
    shard = type_.shard
    domain = tuple(flatten_shape(shard.layout.shape)) if not hasattr(shard.layout, "attrs") else tuple(local.shape)
    if len(domain) != len(local.shape):
        domain = tuple(local.shape)
    if tuple(local.shape) == domain:
        result = type_
    else:
        groups = regroup(tuple(type_.shape), domain)
        shape = []
        for axis, positions in enumerate(groups):
            whole = type_.shape[axis]
            part = 1
            full = 1
            for p in positions:
                part *= local.shape[p]
                full *= domain[p]
            shape.append(whole * part // full if full else part)
        result = TensorType(tuple(shape), type_.dtype, type_.layout, type_.storage)
    if cache is not None:
        cache[key] = result
    return result



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
        from tilefoundry.semantics.registry import COST_EVALUATORS

        handler = COST_EVALUATORS.get(type(call.op))
        if handler is None:
            raise LookupError(type(call.op).__name__)
        return handler(call, self.bind(call))


# =============================================================== helpers


def _read(n: int) -> tuple:
    return tuple(TrafficBytes(read=1) for _ in range(n))


def _all_read_write(call) -> tuple:
    return _read(len(call.args)) + (TrafficBytes(write=1),)


def _nothing(call) -> tuple:
    return tuple(TrafficBytes() for _ in range(len(call.args) + 1))


def _directions(call, reads: tuple, write: bool) -> tuple:
    """``reads``: per argument, True when that boundary is read."""
    items = [TrafficBytes(read=1) if r else TrafficBytes() for r in reads]
    items += [TrafficBytes()] * (len(call.args) - len(items))
    return tuple(items) + (TrafficBytes(write=1) if write else TrafficBytes(),)


def _dtype(type_) -> DType:
    leaves = tensor_leaves(type_)
    if not leaves:
        raise VerifyError("cost evaluator: operand has no tensor leaf")
    return leaves[0].dtype


def _shape(type_) -> tuple:
    leaves = tensor_leaves(type_)
    return tuple(leaves[0].shape) if leaves else ()


def _prod(values) -> int:
    result = 1
    for v in values:
        result *= v
    return result


def _kind(op) -> str:
    kind = getattr(op, "kind", None)
    return str(getattr(kind, "value", kind))


def _flops(dtype, count: int) -> dict:
    return {dtype: count}


def cost(*op_classes):
    """Register one evaluator for several op classes."""
    def decorate(handler):
        for cls in op_classes:
            register_cost_evaluator(cls)(handler)
        return handler

    return decorate


# =============================================================== elementwise math
# Binary / Unary (§5.2), Clamp and activations, Cast, Where.

_PREDICATE_BINARY = {"eq", "ne", "lt", "le", "gt", "ge", "and", "or"}
_SPECIAL_UNARY = {"rsqrt", "exp", "log", "exp2", "log2"}


def _classified(call, ctx, kind: str, predicate: set, special: set) -> "Cost":
    out = ctx.selected_output_type
    count = numel(out)
    traffic = _all_read_write(call)
    if kind in predicate:
        return Cost({}, traffic, {"predicate": count})
    if kind in special:
        return Cost({}, traffic, {"special": count})
    dtype = _dtype(out)
    if dtype.is_int:
        return Cost({}, traffic, {"integer": count})
    return Cost(_flops(dtype, count), traffic, {})


@register_cost_evaluator(Binary)
def _binary_cost(call, ctx):
    return _classified(call, ctx, _kind(call.op), _PREDICATE_BINARY, set())


@register_cost_evaluator(Unary)
def _unary_cost(call, ctx):
    return _classified(call, ctx, _kind(call.op), {"not"}, _SPECIAL_UNARY)


@cost(Cast, Clamp, ReLU, Sigmoid, Tanh, Silu, Gelu, Softplus)
def _elementwise_flop_cost(call, ctx):
    """One flop per output element under the result dtype (Cast included,
    even to an integer dtype: reference §5.2)."""
    out = ctx.selected_output_type
    return Cost(_flops(_dtype(out), numel(out)), _all_read_write(call), {})


@register_cost_evaluator(Where)
def _where_cost(call, ctx):
    return Cost({}, _all_read_write(call), {"select": numel(ctx.selected_output_type)})


# =============================================================== neural network


@register_cost_evaluator(MatMul)
def _matmul_cost(call, ctx):
    """lhs dtype : 2 * batch * M * K * N over the logical (projected) operands."""
    lhs, rhs = ctx.selected_types[0], ctx.selected_types[1]
    out = ctx.selected_output_type
    m, k = _shape(lhs)[-2], _shape(lhs)[-1]
    n = _shape(rhs)[-1]
    batch = _prod(_shape(out)[:-2])
    return Cost(_flops(_dtype(lhs), 2 * batch * m * k * n), _all_read_write(call), {})


@cost(Mma_SM80_16x8x16, Wgmma_SM90_64x128x16)
def _mma_cost(call, ctx):
    a, b = ctx.selected_types[0], ctx.selected_types[1]
    m, k = _shape(a)[-2], _shape(a)[-1]
    n = _shape(b)[-1]
    return Cost(_flops(_dtype(a), 2 * m * n * k), _all_read_write(call), {})


@register_cost_evaluator(Conv2D)
def _conv_cost(call, ctx):
    x, w = ctx.selected_types[0], ctx.selected_types[1]
    wshape = _shape(w)
    count = 2 * numel(ctx.selected_output_type) * wshape[1] * wshape[2] * wshape[3]
    return Cost(_flops(_dtype(x), count), _all_read_write(call), {})


@cost(Reduce, TopK)
def _source_numel_cost(call, ctx):
    """Reduce (mean included) and TopK: source dtype : numel(source)."""
    source = ctx.selected_types[0]
    return Cost(_flops(_dtype(source), numel(source)), _all_read_write(call), {})


@cost(RMSNorm, LayerNorm)
def _norm_cost(call, ctx):
    return Cost(_flops(DTYPES["f32"], 8 * numel(ctx.selected_types[0])), _all_read_write(call), {})


@register_cost_evaluator(SoftMax)
def _softmax_cost(call, ctx):
    out = ctx.selected_output_type
    return Cost(_flops(_dtype(out), numel(out)), _all_read_write(call), {})


@register_cost_evaluator(RoPE)
def _rope_cost(call, ctx):
    """q dtype : 3 * numel(result) (q and k rotated)."""
    count = 3 * numel(ctx.selected_output_type)
    return Cost(_flops(_dtype(ctx.selected_types[0]), count), _all_read_write(call), {})


@register_cost_evaluator(Quant)
def _quant_cost(call, ctx):
    return Cost(_flops(DTYPES["f32"], 4 * numel(ctx.selected_types[0])), _all_read_write(call), {})


@register_cost_evaluator(IndexAdd)
def _index_add_cost(call, ctx):
    src = ctx.selected_types[2]
    return Cost(_flops(_dtype(src), numel(src)), _all_read_write(call), {})


# =============================================================== tensor structure


@cost(ArgMax, Concat, Stack, Split, RepeatInterleave, FullLike, Transpose, IndexSelect)
def _movement_cost(call, ctx):
    """No work; every operand read, the result written."""
    return Cost({}, _all_read_write(call), {})


@register_cost_evaluator(IndexCopy)
def _index_copy_cost(call, ctx):
    return Cost({}, _directions(call, (False, True, True), True), {})


@register_cost_evaluator(Slice)
def _slice_cost(call, ctx):
    """Source none; starts read; result none."""
    return Cost({}, _directions(call, (False, True), False), {})


@register_cost_evaluator(InsertSlice)
def _insert_slice_cost(call, ctx):
    return Cost({}, _directions(call, (False, True, True), True), {})


@register_cost_evaluator(CacheUpdate)
def _cache_update_cost(call, ctx):
    return Cost({}, _directions(call, (False, True, True, True), True), {})


@cost(Reshape, TupleGetItem, Rank, ShapeOf, Local, Arange)
def _no_cost(call, ctx):
    return Cost({}, _nothing(call), {})


@register_cost_evaluator(Zeros)
def _zeros_cost(call, ctx):
    return Cost({}, _directions(call, (), True), {})


# =============================================================== sharding


@register_cost_evaluator(Reshard)
def _reshard_cost(call, ctx):
    """Read and write when the storage level changes, else nothing."""
    source = call.args[0].type
    result = call.type
    changes = [s.storage != r.storage for s, r in zip(tensor_leaves(source), tensor_leaves(result))]
    if any(changes):
        return Cost({}, _all_read_write(call), {})
    return Cost({}, _nothing(call), {})


_ = is_static

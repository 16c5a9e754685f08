"""Value-creating ops: FullLike, Zeros, Arange, and the shape readers ShapeOf, Rank."""
from __future__ import annotations

from typing import ClassVar

from tilefoundry.ir.dim import is_dim
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Op
from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.tensor_type import TensorType, umat_scalar, umat_tensor
from tilefoundry.ops._common import (
    elementwise_relations,
)
from tilefoundry.semantics.cost import (
    Cost,
    data_movement,
    directions,
    no_work,
    register_cost,
)
from tilefoundry.semantics.op_numerics import np, numpy_dtype
from tilefoundry.semantics.op_registry import (
    register_access_relation,
    register_cost_evaluator,
    register_evaluator,
    register_op,
    register_typeinfer,
)
from tilefoundry.semantics.relations import FREE, DomainBuilder, identity_maps
from tilefoundry.semantics.shard_propagation import check_partials

# ---------------------------------------------------------------- FullLike / Zeros / Arange


@register_op
@frozen_record
class FullLike(Op):
    """A tensor of its operand's type filled with one scalar ``value``."""

    value: object

    name: ClassVar[str] = "full_like"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {"value": "float"}


@register_typeinfer(FullLike)
def _full_like_typeinfer(op: FullLike, ctx):
    x = ctx.tensor(0, "x")
    # a constant replicated as a Partial would be summed once per shard
    check_partials(ctx, lambda i, m, r: False, roles=("x",), what="full_like (a constant fill)")
    return x


@register_access_relation(FullLike)
def _full_like_relation(op, ctx):
    return elementwise_relations(ctx.arg_types)


register_cost(FullLike)(data_movement)


@register_evaluator(FullLike)
def _full_like_eval(op, args, ctx):
    """``value`` at every element of the result's (local) shape. A float result holds the written
    number in f64, so the runner rounds it once (nearest even) to the dtype; an int or bool result
    takes only a value it holds exactly (bool: 0 or 1), a fill is never silently wrapped."""
    dtype, value = ctx.result_type.dtype, op.value
    if dtype.is_float:
        return np.full(ctx.result_shape, float(value), dtype=np.float64)
    if isinstance(value, float) and not value.is_integer():  # NaN and inf too
        ctx.error(f"value {value!r} is not an integer; a {dtype} result cannot hold it")
    target = numpy_dtype(dtype)
    low, high = (0, 1) if dtype.is_bool else (int(np.iinfo(target).min), int(np.iinfo(target).max))
    if not low <= int(value) <= high:
        ctx.error(f"value {value!r} is outside [{low}, {high}], the range of a {dtype} result")
    return np.full(ctx.result_shape, int(value), dtype=target)


@register_op
@frozen_record
class Zeros(Op):
    """A zero-filled tensor of the stated ``type``."""

    type: TensorType

    name: ClassVar[str] = "zeros"
    inputs: ClassVar[tuple] = ()
    attr_kinds: ClassVar[dict] = {"type": "type"}


@register_typeinfer(Zeros)
def _zeros_typeinfer(op: Zeros, ctx):
    if not isinstance(op.type, TensorType):
        ctx.error(f"type must be a Tensor[...] type, got {op.type!r}")
    return op.type


def _generator_relation(op, ctx):
    shape = op.type.shape
    builder = DomainBuilder(shape)
    return builder.relations([], [builder.access(identity_maps(len(shape)))])


register_access_relation(Zeros)(_generator_relation)


@register_cost_evaluator(Zeros)
def _zeros_cost(call, ctx):
    """No work; the result is written."""
    return Cost({}, directions(call, (), True), {})


@register_evaluator(Zeros)
def _zeros_eval(op, args, ctx):
    """Zeros of the result type's dtype over its (local) shape: exact in every dtype."""
    return np.zeros(ctx.result_shape, dtype=numpy_dtype(ctx.result_type.dtype))


@register_op
@frozen_record
class Arange(Op):
    """A rank-1 tensor ``start, start + step, ...`` of the stated ``type``."""

    type: TensorType
    start: object = 0
    step: int = 1

    name: ClassVar[str] = "arange"
    inputs: ClassVar[tuple] = ()
    attr_kinds: ClassVar[dict] = {"type": "type", "start": "dim", "step": "int"}


@register_typeinfer(Arange)
def _arange_typeinfer(op: Arange, ctx):
    t = op.type
    if not isinstance(t, TensorType) or t.rank != 1 or t.dtype not in (DType.i32, DType.i64):
        ctx.error(f"type must be a rank-1 i32/i64 Tensor, got {t!r}")
    if isinstance(op.step, bool) or not isinstance(op.step, int) or op.step <= 0:
        ctx.error(f"step must be a positive int, got {op.step!r}")
    if isinstance(op.start, bool) or not is_dim(op.start):
        ctx.error(f"start must be an int or dim, got {op.start!r}")
    return t


register_access_relation(Arange)(_generator_relation)


@register_evaluator(Arange, on_boxes=False)
def _arange_eval(op, args, ctx):
    """``start + step * i`` for each global index i, exact in i64 (an i32 result wraps as the dtype
    does); global values, so never evaluated on a box."""
    n = ctx.result_shape[0]
    return np.int64(op.start) + np.int64(op.step) * np.arange(n, dtype=np.int64)


# ---------------------------------------------------------------- ShapeOf / Rank


@register_op
@frozen_record
class ShapeOf(Op):
    """The extents of its operand as a host-side shape value."""

    name: ClassVar[str] = "shape_of"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {}


@register_typeinfer(ShapeOf)
def _shape_of_typeinfer(op, ctx):
    x = ctx.tensor(0, "x")
    return umat_tensor((x.rank,), DType.i64)


@register_op
@frozen_record
class Rank(Op):
    """The rank of its operand as a host-side value."""

    name: ClassVar[str] = "rank"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {}


@register_typeinfer(Rank)
def _rank_typeinfer(op, ctx):
    ctx.tensor(0, "x")
    return umat_scalar(DType.i64)


def _empty_relation(op, ctx):
    builder = DomainBuilder(())
    rank = 1 if isinstance(op, ShapeOf) else 0
    return builder.relations([None], [builder.access((FREE,) * rank)])


register_access_relation(ShapeOf)(_empty_relation)
register_access_relation(Rank)(_empty_relation)


@register_evaluator(ShapeOf, on_boxes=False)
def _shape_of_eval(op, args, ctx):
    """The operand's logical extents as i64 (the whole value's, never a box's)."""
    return np.array(np.shape(args[0]), dtype=np.int64)


@register_evaluator(Rank, on_boxes=False)
def _rank_eval(op, args, ctx):
    """The operand's rank as a rank-0 i64."""
    return np.array(np.ndim(args[0]), dtype=np.int64)


register_cost(Arange, ShapeOf, Rank)(no_work)

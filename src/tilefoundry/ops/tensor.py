"""Tensor structure ops, part 1: Reshape, Transpose, Cast, Reduce, ArgMax, TopK,
TupleGetItem.

(Concat, Stack, Split, RepeatInterleave, Slice and InsertSlice live in
``tensor_index.py``; IndexSelect/IndexAdd/IndexCopy and CacheUpdate in
``indexing.py``; FullLike, Zeros, Arange, ShapeOf and Rank in ``creation.py``.)
"""
from __future__ import annotations

from enum import Enum
from typing import ClassVar

from tilefoundry.ir.dim import dim_mul, format_dim, is_dim, is_static
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Op
from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.shard import Layout, ShardLayout, Split
from tilefoundry.ir.storage import StorageKind
from tilefoundry.ir.tensor_type import TensorType, TupleType, numel
from tilefoundry.ops._common import (
    elementwise_relations,
    fmt_shape,
    norm_axes,
    norm_axis,
    propagate,
    replicated_layout_for,
    row_major_source_index,
)
from tilefoundry.semantics.canonical import c_order, c_order_unit_zero, local_box_strides, regroup
from tilefoundry.semantics.cost import (
    Cost,
    all_read_write,
    data_movement,
    elementwise_flops,
    leaf_dtype,
    no_work,
    register_cost,
)
from tilefoundry.semantics.op_numerics import f32, int_mean, np, numpy_dtype
from tilefoundry.semantics.op_registry import (
    register_access_relation,
    register_evaluator,
    register_op,
    register_typeinfer,
)
from tilefoundry.semantics.relations import (
    FREE,
    AxisMap,
    DomainBuilder,
    const,
    identity_maps,
    proj,
)
from tilefoundry.semantics.shard_propagation import check_partials


class ReduceKind(str, Enum):
    MEAN = "mean"
    SUM = "sum"
    ABS_MAX = "abs_max"
    MAX = "max"

    def __str__(self) -> str:
        return self.value


def _size(shape):
    total = 1
    for e in shape:
        total = dim_mul(total, e)
    return total


# ---------------------------------------------------------------- Reshape


@register_op
@frozen_record
class Reshape(Op):
    """The same elements under ``new_shape``, in row-major order."""

    new_shape: tuple

    name: ClassVar[str] = "reshape"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {"new_shape": "shape"}


def reshape_shard(shard: ShardLayout, new_shape: tuple):
    """Re-factor the flattened layout positions along ``new_shape`` (canonical
    regroup, spec §3.1). Returns the new ShardLayout or a reason string."""
    old = shard.layout.shape
    strides = shard.layout.strides
    split_of: dict[int, list[int]] = {}
    for m, attr in enumerate(shard.attrs):
        if isinstance(attr, Split):
            split_of.setdefault(attr.axis, []).append(m)
    # queue of (extent, stride, original position or None); an unsplit extent-1
    # position is no factor (companions §2.5) and is not carried: each extent-1
    # axis of the new shape gets exactly one position, no other axis gets one
    queue = [(old[p], strides[p] if strides is not None else None, p) for p in range(len(old))
             if old[p] != 1 or p in split_of]
    out: list = []  # (extent, stride, original position)
    for extent in new_shape:
        if extent == 1:
            if queue and queue[0][0] == 1:
                e, s, p = queue.pop(0)
                out.append((1, 0 if s is not None else None, p))
            else:
                out.append((1, 0 if strides is not None else None, None))
            continue
        product = 1
        taken = 0
        while product != extent:
            if not queue:
                return f"positions {fmt_shape(old)} run out before axis extent {format_dim(extent)}"
            e, s, p = queue[0]
            if e == 1 and taken:
                queue.pop(0)
                out.append((1, 0 if s is not None else None, p))
                continue
            if not is_static(extent) or not is_static(e) or not is_static(product):
                if product == 1 and e == extent:
                    queue.pop(0)
                    out.append((e, s, p))
                    product = extent
                    break
                return f"symbolic extents {format_dim(e)} / {format_dim(extent)} do not regroup"
            need = extent // product if extent % product == 0 else None
            if need is None:
                return f"axis extent {extent} does not regroup over positions {fmt_shape(old)}"
            if e <= need and need % e == 0:
                queue.pop(0)
                out.append((e, s, p))
                product *= e
                taken += 1
            elif e % need == 0:
                if p in split_of:
                    return (f"layout position {p} (extent {e}) is split over the mesh and would have to be "
                            f"factored as ({need}, {e // need})")
                queue.pop(0)
                inner = e // need
                out.append((need, None if s is None else s * inner, None))
                queue.insert(0, (inner, s, None))
                product *= need
                taken += 1
            else:
                return f"axis extent {extent} does not regroup over positions {fmt_shape(old)}"
    while queue and queue[0][0] == 1:
        e, s, p = queue.pop(0)
        out.append((1, 0 if s is not None else None, p))
    if queue:
        return f"positions {fmt_shape(old)} do not flatten onto {fmt_shape(new_shape)}"
    new_g = tuple(e for e, _, _ in out)
    new_strides = None
    if strides is not None:
        new_strides = tuple(0 if e == 1 else s for e, s, _ in out)
    where = {p: k for k, (_, _, p) in enumerate(out) if p is not None}
    attrs = []
    for attr in shard.attrs:
        if isinstance(attr, Split):
            attrs.append(Split(where[attr.axis]))
        else:
            attrs.append(attr)
    return ShardLayout(Layout(new_g, new_strides), tuple(attrs), shard.mesh)


@register_typeinfer(Reshape)
def _reshape_typeinfer(op: Reshape, ctx):
    x = ctx.tensor(0, "x")
    new_shape = tuple(op.new_shape)
    for e in new_shape:
        if isinstance(e, bool) or not is_dim(e):
            ctx.error(f"new_shape entry {e!r} is not an int or dim")
        if is_static(e) and e < 0:
            ctx.error(f"new_shape {new_shape} has a negative extent ({e}); -1 is not inferred")
    if all(is_static(e) for e in x.shape + new_shape) and _size(x.shape) != _size(new_shape):
        ctx.error(
            f"element count mismatch: {fmt_shape(x.shape)} has {_size(x.shape)} elements, "
            f"new_shape {fmt_shape(new_shape)} has {_size(new_shape)}"
        )
    layout = x.layout
    shard = x.shard
    if shard is not None:
        result = reshape_shard(shard, new_shape)
        if isinstance(result, str):
            ctx.error(f"the sharded layout is not expressible over {fmt_shape(new_shape)}: {result}; "
                      "reshard before reshaping")
        layout = result
    elif isinstance(layout, Layout):
        layout = Layout(new_shape, c_order(new_shape)) if all(is_static(e) for e in new_shape) else None
    else:
        layout = None
    return TensorType(new_shape, x.dtype, layout, x.storage)


@register_access_relation(Reshape)
def _reshape_relation(op, ctx):
    x = ctx.arg_types[0]
    new_shape = tuple(op.new_shape)
    builder = DomainBuilder(new_shape)
    concrete = all(is_static(e) and e != 0 for e in x.shape + new_shape)  # 0: no element, no stride
    if concrete:
        terms = [(stride, extent) for stride, extent in zip(c_order(new_shape), new_shape)]
        axes = [const(0) if e == 1 else AxisMap(expr=row_major_source_index(terms, s, e))
                for e, s in zip(x.shape, c_order(x.shape))]
    else:
        axes = [FREE] * x.rank
    return builder.relations([builder.access(tuple(axes))], [builder.access(identity_maps(len(new_shape)))])


register_cost(Reshape)(no_work)


@register_evaluator(Reshape)
def _reshape_eval(op, args, ctx):
    """Row-major elements under the result type's shape (a participant's box when placed: not new_shape)."""
    return np.reshape(args[0], ctx.result_shape)


# ---------------------------------------------------------------- Transpose


@register_op
@frozen_record
class Transpose(Op):
    """The axes of ``x`` permuted by ``perm``."""

    perm: tuple

    name: ClassVar[str] = "transpose"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {"perm": "axes"}


@register_typeinfer(Transpose)
def _transpose_typeinfer(op: Transpose, ctx):
    x = ctx.tensor(0, "x")
    perm = tuple(op.perm)
    if len(perm) != x.rank:
        ctx.error(f"perm {perm} has length {len(perm)} for a rank-{x.rank} value")
    perm = norm_axes(ctx, perm, x.rank, "perm")
    shape = tuple(x.shape[p] for p in perm)
    layout = x.layout
    shard = x.shard
    if shard is not None:
        groups = regroup(x.shape, shard.layout.shape)
        order = [p for a in perm for p in groups[a]]
        leftovers = [p for p in range(len(shard.layout.shape)) if p not in order]
        order.extend(leftovers)
        where = {p: k for k, p in enumerate(order)}
        g = tuple(shard.layout.shape[p] for p in order)
        st = shard.layout.strides
        strides = tuple(st[p] for p in order) if st is not None else None
        attrs = tuple(Split(where[a.axis]) if isinstance(a, Split) else a for a in shard.attrs)
        layout = ShardLayout(Layout(g, strides), attrs, shard.mesh)
        if strides is not None and _moves_unit_axes_only(x.shape, perm) \
                and strides == local_box_strides(layout):
            # the element order is the operand's, which was the canonical one:
            # the result is laid out canonically too, fresh (semantic-analysis
            # §3.2), not a permuted copy of its operand's strides
            layout = ShardLayout(Layout(g, None), attrs, shard.mesh)
    elif isinstance(layout, Layout):
        st = layout.strides
        layout = Layout(shape, tuple(st[p] for p in perm) if st is not None else None)
    return TensorType(shape, x.dtype, layout, x.storage)


def _moves_unit_axes_only(shape: tuple, perm: tuple) -> bool:
    """Whether ``perm`` keeps the order of every axis of extent other than 1:
    it only relabels where the unit axes sit."""
    moved = [p for p in perm if shape[p] != 1]
    return moved == sorted(moved)


@register_access_relation(Transpose)
def _transpose_relation(op, ctx):
    x = ctx.arg_types[0]
    builder = DomainBuilder(x.shape)
    perm = tuple(p % x.rank for p in op.perm) if x.rank else ()
    return builder.relations([builder.access(identity_maps(x.rank))],
                             [builder.access(tuple(proj(p) for p in perm))])


register_cost(Transpose)(data_movement)  # it materializes: read and write, no work


@register_evaluator(Transpose)
def _transpose_eval(op, args, ctx):
    """The axes permuted by ``perm`` (negative entries from the end, as numpy); values untouched."""
    return np.transpose(args[0], tuple(op.perm))


# ---------------------------------------------------------------- Cast


@register_op
@frozen_record
class Cast(Op):
    """Elementwise conversion to ``dtype``."""

    dtype: DType

    name: ClassVar[str] = "cast"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {"dtype": "dtype"}


@register_typeinfer(Cast)
def _cast_typeinfer(op: Cast, ctx):
    x = ctx.tensor(0, "x")
    if not isinstance(op.dtype, DType):
        ctx.error(f"dtype must be a DType, got {op.dtype!r}")
    # a value-preserving float->float conversion commutes with sum/max/min
    check_partials(ctx, lambda i, m, r: x.dtype.is_float and op.dtype.is_float, roles=("x",),
                   what=f"cast to {op.dtype}")
    return x.with_(dtype=op.dtype)


@register_access_relation(Cast)
def _cast_relation(op, ctx):
    return elementwise_relations(ctx.arg_types)


register_cost(Cast)(elementwise_flops)


@register_evaluator(Cast)
def _cast_eval(op, args, ctx):
    """To a float: the value as it is (floats widened to f32 exactly), the runner rounds once to nearest
    even; float -> int: truncated toward zero, saturated at the dtype's range, NaN -> 0 (PTX cvt.rzi.sat,
    a GPU's conversion; C leaves these undefined); int -> int wraps (two's complement); bool: x != 0."""
    x, target = f32(args[0]), ctx.result_type.dtype
    if target.is_bool or not (target.is_int and x.dtype.kind == "f"):
        return x != 0 if target.is_bool else x
    info, whole = np.iinfo(numpy_dtype(target)), np.trunc(x.astype(np.float64))  # exact in f64
    edge = 2.0 ** (info.bits - 1)
    inside = np.where(np.abs(whole) < edge, whole, 0).astype(info.dtype)  # NaN fails: 0
    return np.where(whole >= edge, info.max, np.where(whole <= -edge, info.min, inside)).astype(info.dtype)


# ---------------------------------------------------------------- Reduce / ArgMax


@register_op
@frozen_record
class Reduce(Op):
    """A reduction by ``kind`` over ``axes``, keeping them as extent 1 when ``keepdim``."""

    axes: tuple
    keepdim: bool = True
    kind: ReduceKind = ReduceKind.MEAN

    name: ClassVar[str] = "reduce"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {"axes": "axes", "keepdim": "bool", "kind": "kind:ReduceKind"}


def _reduce_relations(x: TensorType, axes: tuple, keepdim: bool):
    builder = DomainBuilder(x.shape)
    out = []
    for a in range(x.rank):
        if a in axes:
            if keepdim:
                out.append(const(0))
        else:
            out.append(proj(a))
    return builder.relations([builder.access(identity_maps(x.rank))], [builder.access(tuple(out))])


def _reduce_layout(ctx, x: TensorType, axes: tuple, keepdim: bool, out_shape: tuple):
    """Shared service for the attrs (reduced splits complete: Broadcast) and the
    factor positions; a kept reduced axis is one unsplit extent-1 position
    (companions §2.5), never one per position it had. A replicated input keeps
    its placement over the result's shape. Strides C-order over G with extent-1
    positions 0."""
    relations = _reduce_relations(x, axes, keepdim)
    layout = propagate(ctx, relations, out_shape, roles=("x",), complete_reduction_dims=frozenset(axes))
    if layout is None:
        layout = replicated_layout_for(out_shape, (x,))
    if layout is None:
        if isinstance(x.layout, Layout):
            return Layout(out_shape, c_order(out_shape)) if all(is_static(e) for e in out_shape) else None
        return None
    g = layout.layout.shape
    strides = c_order_unit_zero(g) if all(is_static(e) for e in g) else None
    return ShardLayout(Layout(g, strides), layout.attrs, layout.mesh)


_REDUCE_COMMUTES = {
    ReduceKind.SUM: ("sum",),
    ReduceKind.MEAN: ("sum",),
    ReduceKind.MAX: ("max",),
    ReduceKind.ABS_MAX: (),
}


@register_typeinfer(Reduce)
def _reduce_typeinfer(op: Reduce, ctx):
    x = ctx.tensor(0, "x")
    kind = op.kind
    if not isinstance(kind, ReduceKind):
        ctx.error(f"ReduceKind: unknown value {kind!r}; valid values are {[k.value for k in ReduceKind]}")
    axes = norm_axes(ctx, op.axes, x.rank)
    if not axes:
        ctx.error("axes must name at least one axis")
    check_partials(ctx, lambda i, m, r: r in _REDUCE_COMMUTES[kind], roles=("x",),
                   what=f"reduce {kind.value}")
    if op.keepdim:
        shape = tuple(1 if a in axes else e for a, e in enumerate(x.shape))
    else:
        shape = tuple(e for a, e in enumerate(x.shape) if a not in axes)
    layout = _reduce_layout(ctx, x, axes, op.keepdim, shape)
    return TensorType(shape, x.dtype, layout, x.storage)


@register_access_relation(Reduce)
def _reduce_relation(op, ctx):
    x = ctx.arg_types[0]
    axes = tuple(a % x.rank for a in op.axes) if x.rank else ()
    return _reduce_relations(x, axes, op.keepdim)


@register_evaluator(Reduce)
def _reduce_eval(op, args, ctx):
    """Floats accumulate in f32 whatever their dtype (mean: the f32 sum over the count); an integer sum
    wraps in its dtype (two's complement, as an integer add does); an integer mean accumulates wide and
    exactly (per element, quotient and remainder by the count, in i64), rounds toward zero as int div,
    and so never leaves the range of its inputs; an empty reduction is the kind's identity (0, or
    -inf / the int minimum for max), an empty mean NaN (int: 0). Bool is refused."""
    x, kind = f32(args[0]), op.kind
    if x.dtype.kind == "b":
        ctx.error(f"reduce {kind.value} of a bool value; tf.cast it to i32 first")
    axes = tuple(a % x.ndim for a in ((op.axes,) if isinstance(op.axes, int) else op.axes))
    if kind in (ReduceKind.MAX, ReduceKind.ABS_MAX):
        low = x.dtype.type(-np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min)
        data, initial = (x, low) if kind == ReduceKind.MAX else (np.abs(x), x.dtype.type(0))
        return np.max(data, axis=axes, keepdims=op.keepdim, initial=initial)
    count = _size(x.shape[a] for a in axes)
    if kind == ReduceKind.MEAN and x.dtype.kind != "f":
        return int_mean(x, axes, count, op.keepdim)
    total = np.sum(x, axis=axes, dtype=x.dtype, keepdims=op.keepdim)
    if kind == ReduceKind.SUM:
        return total
    with np.errstate(invalid="ignore"):
        return total / np.float32(count)


@register_op
@frozen_record
class ArgMax(Op):
    """The index of the largest element along ``axis``."""

    axis: int = -1

    name: ClassVar[str] = "argmax"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {"axis": "int"}


@register_typeinfer(ArgMax)
def _argmax_typeinfer(op: ArgMax, ctx):
    x = ctx.tensor(0, "x")
    axis = norm_axis(ctx, op.axis, x.rank)
    check_partials(ctx, lambda i, m, r: False, roles=("x",), what="argmax")
    shape = tuple(e for a, e in enumerate(x.shape) if a != axis)
    layout = _reduce_layout(ctx, x, (axis,), False, shape)
    return TensorType(shape, DType.i64, layout, x.storage)


@register_access_relation(ArgMax)
def _argmax_relation(op, ctx):
    x = ctx.arg_types[0]
    return _reduce_relations(x, (op.axis % x.rank,), False)


register_cost(ArgMax)(data_movement)


@register_evaluator(ArgMax, on_boxes=False)
def _argmax_eval(op, args, ctx):
    """The global index of the largest element; ties go to the lowest index and NaN counts as
    the largest (numpy's and torch's rule); exact comparisons."""
    x = f32(args[0])
    if x.shape[op.axis] == 0:
        ctx.error(f"argmax over an empty axis {op.axis} has no index")
    return np.argmax(x, axis=op.axis).astype(np.int64)


# ---------------------------------------------------------------- TopK


@register_op
@frozen_record
class TopK(Op):
    """The ``k`` largest (or smallest) elements along ``axis`` and their indices."""

    k: object
    axis: int = -1
    largest: bool = True
    sorted: bool = True

    name: ClassVar[str] = "topk"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {"k": "dim", "axis": "int", "largest": "bool", "sorted": "bool"}


def _topk_relations(x: TensorType, axis: int, k):
    out_shape = tuple(k if a == axis else e for a, e in enumerate(x.shape))
    builder = DomainBuilder(out_shape + (x.shape[axis],))
    scanned = len(out_shape)
    src = tuple(proj(scanned) if a == axis else proj(a) for a in range(x.rank))
    kept = identity_maps(x.rank)
    return builder.relations([builder.access(src)], [builder.access(kept), builder.access(kept)])


@register_typeinfer(TopK)
def _topk_typeinfer(op: TopK, ctx):
    x = ctx.tensor(0, "x")
    axis = norm_axis(ctx, op.axis, x.rank)
    k = op.k
    if isinstance(k, bool) or not is_dim(k):
        ctx.error(f"k must be an int or dim, got {k!r}")
    if is_static(k) and (k < 1 or (is_static(x.shape[axis]) and k > x.shape[axis])):
        ctx.error(f"k={k} is outside [1, {format_dim(x.shape[axis])}] for axis {op.axis}")
    check_partials(ctx, lambda i, m, r: False, roles=("x",), what="topk")
    shape = tuple(k if a == axis else e for a, e in enumerate(x.shape))
    relations = _topk_relations(x, axis, k)
    values = propagate(ctx, relations, shape, roles=("x",), output_index=0)
    indices = propagate(ctx, relations, shape, roles=("x",), output_index=1)
    return TupleType((TensorType(shape, x.dtype, values, x.storage),
                      TensorType(shape, DType.i64, indices, x.storage)))


@register_access_relation(TopK)
def _topk_relation(op, ctx):
    x = ctx.arg_types[0]
    return _topk_relations(x, op.axis % x.rank, op.k)


@register_evaluator(TopK, on_boxes=False)
def _topk_eval(op, args, ctx):
    """(values, global i64 indices) of the k largest (smallest) along ``axis``, best first even
    when not ``sorted`` (any order is then allowed); equal values keep the lower index first, NaN
    ranks above every number (torch's order); values copied exactly."""
    x = np.moveaxis(np.asarray(args[0]), op.axis, -1)
    key = f32(x) if f32(x).dtype.kind == "f" else x.astype(np.int64)  # bool and ints as i64
    nan, down = key != key, (-key if key.dtype.kind == "f" else ~key)  # ~: no overflow at the minimum
    order = np.lexsort((down, ~nan) if op.largest else (key, nan), axis=-1)[..., :op.k]
    values = np.take_along_axis(x, order, axis=-1)
    return np.moveaxis(values, -1, op.axis), np.moveaxis(order, -1, op.axis).astype(np.int64)


@register_cost(Reduce, TopK)
def _source_numel_cost(call, ctx):
    """Reduce (mean included) and TopK: source dtype : numel(source)."""
    source = ctx.selected_types[0]
    return Cost({leaf_dtype(source): numel(source)}, all_read_write(call), {})


# ---------------------------------------------------------------- TupleGetItem


@register_op
@frozen_record
class TupleGetItem(Op):
    """Field ``index`` of ``tuple_value``."""

    index: int

    name: ClassVar[str] = "tuple_get_item"
    inputs: ClassVar[tuple] = ("tuple_value",)
    attr_kinds: ClassVar[dict] = {"index": "int"}


@register_typeinfer(TupleGetItem)
def _tuple_get_item_typeinfer(op: TupleGetItem, ctx):
    t = ctx.arg_types[0]
    if not isinstance(t, TupleType):
        ctx.error(f"tuple_value must be a tuple, got {type(t).__name__}")
    index = op.index
    if isinstance(index, bool) or not isinstance(index, int):
        ctx.error(f"index must be an int, got {index!r}")
    n = len(t.fields)
    if not -n <= index < n:
        ctx.error(f"index {index} is out of range for a {n}-field tuple")
    return t.fields[index]


def _leaf_offset(t: TupleType, index: int) -> int:
    from tilefoundry.ir.tensor_type import tensor_leaves

    return sum(len(tensor_leaves(f)) for f in t.fields[:index])


@register_access_relation(TupleGetItem)
def _tuple_get_item_relation(op, ctx):
    t = ctx.arg_types[0]
    index = op.index % len(t.fields)
    field = t.fields[index]
    if isinstance(field, TensorType):
        builder = DomainBuilder(field.shape)
        ident = identity_maps(field.rank)
        src = (const(_leaf_offset(t, index)),) + ident
        return builder.relations([builder.access(src)], [builder.access(ident)])
    builder = DomainBuilder(())
    return builder.relations([None], [builder.access(())])


@register_evaluator(TupleGetItem)
def _tuple_get_item_eval(op, args, ctx):
    """Field ``index`` (negative from the end) of the tuple operand, as it is."""
    return args[0][op.index]


_ = (StorageKind,)


register_cost(TupleGetItem)(no_work)

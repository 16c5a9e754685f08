"""Tensor structure ops, part 2: Concat, Stack, Split, RepeatInterleave, Slice,
InsertSlice (and the control tuples of starts and offsets)."""
from __future__ import annotations

from typing import ClassVar

from tilefoundry.ir.dim import dim_add, dim_mul, format_dim, is_static
from tilefoundry.ir.expr import Constant, Op, Tuple
from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.ops._common import fmt_shape, norm_axis, propagate
from tilefoundry.semantics.cost import Cost, data_movement, directions, register_cost
from tilefoundry.semantics.op_numerics import np
from tilefoundry.semantics.op_registry import (
    register_access_relation,
    register_cost_evaluator,
    register_evaluator,
    register_op,
    register_typeinfer,
)
from tilefoundry.semantics.relations import (
    FREE,
    AxisMap,
    DomainBuilder,
    identity_maps,
    proj,
)
from tilefoundry.semantics.shard_propagation import check_partials, real_shard
from tilefoundry.semantics.storage_anchor import anchor_storage


def _assembled_type(ctx, types, relations_and_shape, what: str) -> TensorType:
    """Concat and Stack: storage anchored on every input (spec §3.3), a Partial
    only when all inputs carry it alike, a fresh C-order layout."""
    storage = anchor_storage(ctx, types)
    roles = tuple(f"input {i}" for i in range(len(types)))
    check_partials(ctx, _same_partial_everywhere(types), roles=roles, what=f"{what} of mixed states")
    relations, shape = relations_and_shape
    layout = propagate(ctx, relations, shape, roles=roles, fresh_strides=True)
    return TensorType(shape, types[0].dtype, layout, storage)


def index_in_range(ctx, role: str, values, low: int, high: int, what: str = ""):
    """``values`` (an integer array) if every one lies in ``[low, high)``; else a
    refusal naming ``role``, the first value outside and the valid range."""
    values = np.asarray(values)
    bad = (values < low) | (values >= high)
    if bad.any():
        ctx.error(f"{role} holds {int(values[bad].flat[0])}, outside the valid range [{low}, {high}){what}")
    return values


def agrees(ctx, value, type_=None):
    """``value`` if its shape is the one the result type states (``type_``, by
    default ``ctx.result_type``); else a refusal naming both shapes."""
    want = tuple((type_ or ctx.result_type).shape)
    if tuple(value.shape) != want:
        ctx.error(f"computed shape {fmt_shape(value.shape)} differs from the result type's {fmt_shape(want)}")
    return value


def _same_partial_everywhere(types):
    """A data-movement op commutes with a Partial only when every tensor input
    carries the same reduction on that mesh axis."""

    def allowed(i, m, r):
        for t in types:
            shard = t.shard if isinstance(t, TensorType) else None
            attr = shard.attrs[m] if shard is not None and m < len(shard.attrs) else None
            if getattr(attr, "reduction", None) != r:
                return False
        return True

    return allowed


# ---------------------------------------------------------------- Concat


@register_op
@frozen_record
class Concat(Op):
    """Its operands joined along ``axis``."""

    axis: int

    name: ClassVar[str] = "concat"
    inputs: ClassVar[tuple] = ()
    variadic: ClassVar[bool] = True
    attr_kinds: ClassVar[dict] = {"axis": "int"}


def _concat_relations(types, axis):
    out_shape = list(types[0].shape)
    total = 0
    for t in types:
        total = dim_add(total, t.shape[axis])
    out_shape[axis] = total
    builder = DomainBuilder(tuple(out_shape))
    inputs = []
    offset = 0
    for t in types:
        axes = []
        for a in range(t.rank):
            if a == axis:
                off = offset if is_static(offset) else builder.dim_text(offset)
                axes.append(AxisMap(dim=a, offset=(-off if isinstance(off, int) else f"-({off})")))
            else:
                axes.append(proj(a))
        lo = offset if is_static(offset) else builder.dim_text(offset)
        hi = dim_add(offset, t.shape[axis])
        hi = hi if is_static(hi) else builder.dim_text(hi)
        inputs.append(builder.access(tuple(axes), guards=(f"{lo} <= i{axis} < {hi}",)))
        offset = dim_add(offset, t.shape[axis])
    return builder.relations(inputs, [builder.access(identity_maps(len(out_shape)))]), tuple(out_shape)


@register_typeinfer(Concat)
def _concat_typeinfer(op: Concat, ctx):
    if not ctx.args:
        ctx.error("needs at least one input")
    types = [ctx.tensor(i, f"input {i}") for i in range(len(ctx.args))]
    first = types[0]
    axis = norm_axis(ctx, op.axis, first.rank)
    for i, t in enumerate(types[1:], 1):
        if t.rank != first.rank:
            ctx.error(f"input {i} has rank {t.rank}, input 0 has rank {first.rank}")
        if t.dtype != first.dtype:
            ctx.error(f"input {i} dtype {t.dtype} differs from input 0 dtype {first.dtype}")
        for a in range(t.rank):
            if a != axis and t.shape[a] != first.shape[a]:
                ctx.error(f"input {i} extent {format_dim(t.shape[a])} on axis {a} differs from input 0's "
                          f"{format_dim(first.shape[a])}")
    return _assembled_type(ctx, types, _concat_relations(types, axis), "concat")


@register_access_relation(Concat)
def _concat_relation(op, ctx):
    types = ctx.arg_types
    return _concat_relations(types, op.axis % types[0].rank)[0]


@register_evaluator(Concat, on_boxes=False)
def _concat_eval(op, args, ctx):
    """The operands joined along ``axis`` (negative counts from the end), in order; values unchanged."""
    return agrees(ctx, np.concatenate(args, axis=op.axis % args[0].ndim))


# ---------------------------------------------------------------- Stack


@register_op
@frozen_record
class Stack(Op):
    """Its operands stacked along a new ``axis``."""

    axis: int = 0

    name: ClassVar[str] = "stack"
    inputs: ClassVar[tuple] = ()
    variadic: ClassVar[bool] = True
    attr_kinds: ClassVar[dict] = {"axis": "int"}


def _stack_relations(types, axis):
    first = types[0]
    shape = first.shape[:axis] + (len(types),) + first.shape[axis:]
    builder = DomainBuilder(shape)
    inputs = []
    for i, t in enumerate(types):
        axes = tuple(proj(a if a < axis else a + 1) for a in range(t.rank))
        inputs.append(builder.access(axes, guards=(f"i{axis} = {i}",)))
    return builder.relations(inputs, [builder.access(identity_maps(len(shape)))]), shape


@register_typeinfer(Stack)
def _stack_typeinfer(op: Stack, ctx):
    if not ctx.args:
        ctx.error("needs at least one input")
    types = [ctx.tensor(i, f"input {i}") for i in range(len(ctx.args))]
    first = types[0]
    axis = norm_axis(ctx, op.axis, first.rank, allow_end=True)
    for i, t in enumerate(types[1:], 1):
        if t.shape != first.shape or t.dtype != first.dtype:
            ctx.error(f"input {i} {fmt_shape(t.shape)} {t.dtype} differs from input 0 "
                      f"{fmt_shape(first.shape)} {first.dtype}")
    return _assembled_type(ctx, types, _stack_relations(types, axis), "stack")


@register_access_relation(Stack)
def _stack_relation(op, ctx):
    types = ctx.arg_types
    return _stack_relations(types, op.axis % (types[0].rank + 1))[0]


@register_evaluator(Stack, on_boxes=False)
def _stack_eval(op, args, ctx):
    """The operands stacked along a new ``axis`` of the result (negative counts from the
    result's end), in order; values unchanged."""
    return agrees(ctx, np.stack(args, axis=op.axis % (args[0].ndim + 1)))


# ---------------------------------------------------------------- Split


@register_op
@frozen_record
class Split(Op):
    """``x`` cut into ``num_splits`` equal parts along ``axis``."""

    axis: int
    num_splits: int

    name: ClassVar[str] = "split"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {"axis": "int", "num_splits": "int"}


def _split_relations(x, axis, n):
    part = x.shape[axis] // n
    builder = DomainBuilder(x.shape)
    outputs = []
    for p in range(n):
        axes = tuple(AxisMap(dim=a, offset=-p * part) if a == axis else proj(a) for a in range(x.rank))
        outputs.append(builder.access(axes, guards=(f"{p * part} <= i{axis} < {(p + 1) * part}",)))
    return builder.relations([builder.access(identity_maps(x.rank))], outputs)


@register_typeinfer(Split)
def _split_typeinfer(op: Split, ctx):
    x = ctx.tensor(0, "x")
    axis = norm_axis(ctx, op.axis, x.rank)
    n = op.num_splits
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        ctx.error(f"num_splits must be a positive int, got {n!r}")
    extent = x.shape[axis]
    if not is_static(extent) or extent % n:
        ctx.error(f"axis {op.axis} extent {format_dim(extent)} is not divisible by num_splits={n}")
    check_partials(ctx, lambda i, m, r: True, roles=("x",), what="split")
    shape = tuple(extent // n if a == axis else e for a, e in enumerate(x.shape))
    relations = _split_relations(x, axis, n)
    fields = []
    for p in range(n):
        layout = propagate(ctx, relations, shape, roles=("x",), output_index=p)
        fields.append(TensorType(shape, x.dtype, layout, x.storage))
    return TupleType(tuple(fields))


@register_access_relation(Split)
def _split_relation(op, ctx):
    x = ctx.arg_types[0]
    return _split_relations(x, op.axis % x.rank, op.num_splits)


@register_evaluator(Split, on_boxes=False)
def _split_eval(op, args, ctx):
    """The tuple of ``num_splits`` equal consecutive pieces of ``x`` along ``axis``
    (piece p = indices [p * e / n, (p + 1) * e / n)); values unchanged."""
    x = args[0]
    pieces = np.split(x, op.num_splits, axis=op.axis % x.ndim)
    return tuple(agrees(ctx, p, t) for p, t in zip(pieces, ctx.result_type.fields))


# ---------------------------------------------------------------- RepeatInterleave


@register_op
@frozen_record
class RepeatInterleave(Op):
    """Each element of ``x`` repeated ``repeats`` times along ``axis``."""

    repeats: int
    axis: int

    name: ClassVar[str] = "repeat_interleave"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {"repeats": "int", "axis": "int"}


@register_typeinfer(RepeatInterleave)
def _repeat_interleave_typeinfer(op: RepeatInterleave, ctx):
    x = ctx.tensor(0, "x")
    axis = norm_axis(ctx, op.axis, x.rank)
    if isinstance(op.repeats, bool) or not isinstance(op.repeats, int) or op.repeats < 1:
        ctx.error(f"repeats must be a positive int, got {op.repeats!r}")
    # the result carries no layout, so a Partial could only be dropped: refuse it by name first
    check_partials(ctx, lambda i, m, r: False, roles=("x",), what="repeat_interleave (its result has no layout)")
    if real_shard(x) is not None:
        ctx.error("x (operand 0) is split; repeat_interleave reads it at floor(d/repeats), which is not "
                  "a projection; reshard x to Broadcast first")
    shape = tuple(dim_mul(e, op.repeats) if a == axis else e for a, e in enumerate(x.shape))
    return TensorType(shape, x.dtype, None, x.storage)


@register_access_relation(RepeatInterleave)
def _repeat_interleave_relation(op, ctx):
    x = ctx.arg_types[0]
    axis = op.axis % x.rank
    shape = tuple(dim_mul(e, op.repeats) if a == axis else e for a, e in enumerate(x.shape))
    builder = DomainBuilder(shape)
    src = tuple(AxisMap(dim=a, div=op.repeats) if a == axis else proj(a) for a in range(x.rank))
    return builder.relations([builder.access(src)], [builder.access(identity_maps(len(shape)))])


@register_evaluator(RepeatInterleave, on_boxes=False)
def _repeat_interleave_eval(op, args, ctx):
    """Each element of ``x`` repeated ``repeats`` times in place along ``axis``
    (result index d reads x at floor(d / repeats)); values unchanged."""
    x = args[0]
    return agrees(ctx, np.repeat(x, op.repeats, axis=op.axis % x.ndim))


register_cost(Concat, Stack, Split, RepeatInterleave)(data_movement)


# ---------------------------------------------------------------- control tuples (starts, offsets)


def control_fields(arg, type_, rank: int):
    """The per-axis control values of a starts/offsets argument: literal ints or
    the expression nodes standing for run-time coordinates."""
    if isinstance(arg, Tuple):
        return [f.value if isinstance(f, Constant) else f for f in arg.fields]
    if isinstance(arg, Constant):
        return [arg.value]
    if isinstance(type_, TupleType):
        return [(arg, k) for k in range(len(type_.fields))]
    return [(arg, k) for k in range(rank)]


def _control_count(type_) -> int:
    if isinstance(type_, TupleType):
        return len(type_.fields)
    if isinstance(type_, TensorType):
        return 1 if type_.rank == 0 else (type_.shape[0] if is_static(type_.shape[0]) else 1)
    return 0


def _control_ok(type_) -> bool:
    if isinstance(type_, TupleType):
        return all(isinstance(f, TensorType) and f.rank == 0 and f.dtype.is_int for f in type_.fields)
    return isinstance(type_, TensorType) and type_.dtype.is_int and type_.rank <= 1


def _control_boundary(builder, type_):
    n = _control_count(type_)
    if isinstance(type_, TensorType) and type_.rank == 0:
        return builder.access(())
    return builder.access((FREE,), guards=(f"0 <= o0 < {n}",)) if n else builder.access((FREE,))


def secondary_fits_primary(ctx, relations, primary: TensorType, secondary: int, roles):
    """Result = type of the primary input (dst / cache). The shared service checks
    every input's sharding against the relation (a translated split fails closed,
    mesh axes must agree); a secondary input whose sharding the primary's layout
    does not already carry cannot be represented and is refused (spec §3.2)."""
    sec = ctx.arg_types[secondary]
    if real_shard(sec) is None:
        return
    role = roles[secondary]
    derived = propagate(ctx, relations, primary.shape, roles=roles)
    ps = real_shard(primary)
    if ps is None or derived is None or derived.attrs != ps.attrs or derived.mesh != ps.mesh:
        ctx.error(f"{role} (operand {secondary}) carries sharding {sec.shard.attrs} that the result "
                  f"(the type of {roles[0]}) cannot represent; reshard {role} onto {roles[0]}'s layout "
                  "(or Broadcast) first")


def control_values(arg) -> list:
    """The ints a starts/offsets operand holds at run time: a tuple of rank-0
    arrays, or one rank-0 or rank-1 integer array."""
    if isinstance(arg, tuple):
        return [int(np.asarray(f).reshape(-1)[0]) for f in arg]
    return [int(v) for v in np.asarray(arg).reshape(-1)]


def _literal(value):
    return isinstance(value, int) and not isinstance(value, bool)


# ---------------------------------------------------------------- Slice


@register_op
@frozen_record
class Slice(Op):
    """A window of ``x``: run-time ``starts``, static ``sizes`` and ``strides``."""

    sizes: tuple
    strides: tuple

    name: ClassVar[str] = "slice"
    inputs: ClassVar[tuple] = ("x", "starts")
    attr_kinds: ClassVar[dict] = {"sizes": "shape", "strides": "shape"}


@register_typeinfer(Slice)
def _slice_typeinfer(op: Slice, ctx):
    x = ctx.tensor(0, "x")
    starts_t = ctx.arg_types[1]
    sizes, strides = tuple(op.sizes), tuple(op.strides)
    if len(sizes) != x.rank or len(strides) != x.rank:
        ctx.error(f"sizes {sizes} and strides {strides} must have the rank {x.rank} of x")
    if not _control_ok(starts_t) or _control_count(starts_t) != x.rank:
        ctx.error(f"starts must be a tuple of {x.rank} rank-0 ints")
    for s in strides:
        if not isinstance(s, int) or isinstance(s, bool) or s < 1:
            ctx.error(f"strides must be positive ints, got {strides}")
    starts = control_fields(ctx.args[1], starts_t, x.rank)
    for a, (start, size, stride) in enumerate(zip(starts, sizes, strides)):
        extent = x.shape[a]
        if _literal(start) and is_static(size) and is_static(extent):
            if start < 0 or start + (size - 1) * stride > extent - 1:
                ctx.error(f"window [{start}, {start + (size - 1) * stride}] on axis {a} is outside "
                          f"extent {extent}")
    check_partials(ctx, lambda i, m, r: True, roles=("x", "starts"), what="slice")
    relations = _slice_relations(op, ctx)
    layout = propagate(ctx, relations, sizes, roles=("x", "starts"))
    return TensorType(sizes, x.dtype, layout, x.storage)


def _slice_relations(op, ctx):
    x = ctx.arg_types[0]
    sizes, strides = tuple(op.sizes), tuple(op.strides)
    builder = DomainBuilder(sizes)
    starts = control_fields(ctx.args[1], ctx.arg_types[1], x.rank)
    axes, pguards = [], []
    for a, (start, size, stride) in enumerate(zip(starts, sizes, strides)):
        if _literal(start):
            axes.append(AxisMap(dim=a, coeff=stride, offset=start))
        else:
            name = builder.param(start, f"p_start{a}")
            axes.append(AxisMap(dim=a, coeff=stride, offset=name))
            ext = builder.dim_text(x.shape[a])
            last = builder.dim_text(dim_mul(dim_add(size, -1), stride)) if not is_static(size) else (size - 1) * stride
            pguards.append(f"0 <= {name} and {name} + {last} <= {ext} - 1")
    src = builder.access(tuple(axes), param_guards=tuple(pguards))
    return builder.relations([src, _control_boundary(builder, ctx.arg_types[1])],
                             [builder.access(identity_maps(len(sizes)))])


register_access_relation(Slice)(_slice_relations)


@register_cost_evaluator(Slice)
def _slice_cost(call, ctx):
    """A view: the source and the result move nothing; the starts are read."""
    return Cost({}, directions(call, (False, True), False), {})


@register_evaluator(Slice, on_boxes=False)
def _slice_eval(op, args, ctx):
    """x read on each axis at start + stride * d for d < size (starts at run time,
    each window inside x, no wrap of negatives); values unchanged."""
    x, starts = args[0], control_values(args[1])
    if len(starts) != x.ndim:
        ctx.error(f"starts holds {len(starts)} values at run time, x has rank {x.ndim}")
    window = []
    for a, (start, size, stride) in enumerate(zip(starts, op.sizes, op.strides)):
        last = x.shape[a] - 1 - (size - 1) * stride  # the last start whose window fits
        index_in_range(ctx, f"starts[{a}]", start, 0, last + 1,
                       f" (axis {a}: extent {x.shape[a]}, size {size}, stride {stride})")
        window.append(slice(start, start + (size - 1) * stride + 1, stride))
    return agrees(ctx, x[tuple(window)])


# ---------------------------------------------------------------- InsertSlice


@register_op
@frozen_record
class InsertSlice(Op):
    """``dst`` with ``update`` written over the window at the run-time ``offsets``."""

    name: ClassVar[str] = "insert_slice"
    inputs: ClassVar[tuple] = ("dst", "update", "offsets")
    attr_kinds: ClassVar[dict] = {}


@register_typeinfer(InsertSlice)
def _insert_slice_typeinfer(op: InsertSlice, ctx):
    dst = ctx.tensor(0, "dst")
    upd = ctx.tensor(1, "update")
    if dst.rank != upd.rank:
        ctx.error(f"update rank {upd.rank} differs from dst rank {dst.rank}")
    if dst.dtype != upd.dtype:
        ctx.error(f"update dtype {upd.dtype} differs from dst dtype {dst.dtype}")
    off_t = ctx.arg_types[2]
    if not _control_ok(off_t) or _control_count(off_t) != dst.rank:
        ctx.error(f"offsets must be a tuple of {dst.rank} rank-0 ints")
    offsets = control_fields(ctx.args[2], off_t, dst.rank)
    for a, (o, u) in enumerate(zip(offsets, upd.shape)):
        extent = dst.shape[a]
        if _literal(o) and is_static(u) and is_static(extent) and (o < 0 or o + u > extent):
            ctx.error(f"window [{o}, {o + u}) on axis {a} is outside dst extent {extent}")
        if is_static(u) and is_static(extent) and u > extent:
            ctx.error(f"update extent {u} on axis {a} exceeds dst extent {extent}")
    check_partials(ctx, _same_partial_everywhere((dst, upd)), roles=("dst", "update", "offsets"),
                   what="insert_slice of mixed states")
    secondary_fits_primary(ctx, _insert_slice_relation(op, ctx), dst, 1, ("dst", "update", "offsets"))
    return dst


@register_access_relation(InsertSlice)
def _insert_slice_relation(op, ctx):
    dst, upd = ctx.arg_types[0], ctx.arg_types[1]
    builder = DomainBuilder(dst.shape)
    offsets = control_fields(ctx.args[2], ctx.arg_types[2], dst.rank)
    inside, outside, upd_axes, pguards = [], [], [], []
    for a, (o, u) in enumerate(zip(offsets, upd.shape)):
        ot = str(o) if _literal(o) else builder.param(o, f"p_off{a}")
        ut = builder.dim_text(u)
        inside.append(f"{ot} <= i{a} < {ot} + {ut}")
        outside.append(f"i{a} < {ot} or i{a} >= {ot} + {ut}")
        upd_axes.append(AxisMap(dim=a, offset=(-o if _literal(o) else f"-{ot}")))
        if not _literal(o):
            pguards.append(f"0 <= {ot} and {ot} + {ut} <= {builder.dim_text(dst.shape[a])}")
    win = " and ".join(inside) or "true"
    comp = "(" + " or ".join(outside) + ")" if outside else "false"
    ident = identity_maps(dst.rank)
    return builder.relations(
        [builder.access(ident, guards=(comp,), param_guards=tuple(pguards)),
         builder.access(tuple(upd_axes), guards=(win,), param_guards=tuple(pguards)),
         _control_boundary(builder, ctx.arg_types[2])],
        [builder.access(ident, guards=(win,), param_guards=tuple(pguards))],
    )


@register_cost_evaluator(InsertSlice)
def _insert_slice_cost(call, ctx):
    """dst moves nothing; update and offsets are read; the result is written."""
    return Cost({}, directions(call, (False, True, True), True), {})


@register_evaluator(InsertSlice, on_boxes=False)
def _insert_slice_eval(op, args, ctx):
    """A copy of ``dst`` with ``update`` written over [offset_a, offset_a + update extent_a)
    on each axis (offsets at run time, the window inside dst, no wrap); values unchanged."""
    dst, update, offsets = args[0], args[1], control_values(args[2])
    if len(offsets) != dst.ndim:
        ctx.error(f"offsets holds {len(offsets)} values at run time, dst has rank {dst.ndim}")
    window = []
    for a, (o, u) in enumerate(zip(offsets, update.shape)):
        index_in_range(ctx, f"offsets[{a}]", o, 0, dst.shape[a] - u + 1,
                       f" (axis {a}: dst extent {dst.shape[a]}, update extent {u})")
        window.append(slice(o, o + u))
    out = np.array(dst, copy=True)
    out[tuple(window)] = update
    return agrees(ctx, out)

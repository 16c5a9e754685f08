"""Neural-network ops: MatMul, RMSNorm, LayerNorm, SoftMax, RoPE, Conv2D, MMA
tiles, Quant."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tilefoundry.ir.dim import dim_floordiv, format_dim, is_static
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Op
from tilefoundry.ir.shard import Broadcast, Layout, ShardLayout, Split, c_order_strides
from tilefoundry.ir.tensor_type import TensorType, TupleType, numel
from tilefoundry.ops._common import broadcast_shapes, fmt_shape, norm_axis, propagate
from tilefoundry.semantics.cost import (
    Cost,
    all_read_write,
    leaf_dtype,
    leaf_shape,
    product,
    register_cost,
)
from tilefoundry.semantics.op_registry import (
    register_access_relation,
    register_cost_evaluator,
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
from tilefoundry.semantics.shard_propagation import (
    ShardPropagationError,
    check_partials,
    common_mesh,
    real_shard,
)
from tilefoundry.semantics.storage_anchor import anchor_storage

# ---------------------------------------------------------------- MatMul


@register_op
@dataclass(frozen=True)
class MatMul(Op):
    """A (batched) matrix product: the last axis of ``lhs`` against the second-to-last of ``rhs``."""

    name: ClassVar[str] = "matmul"
    inputs: ClassVar[tuple] = ("lhs", "rhs")
    attr_kinds: ClassVar[dict] = {}


def _matmul_parts(lhs, rhs):
    batch_l, batch_r = lhs.shape[:-2], rhs.shape[:-2]
    return batch_l, batch_r


def matmul_relations(lhs: TensorType, rhs: TensorType, batch: tuple):
    """Domain (*batch, M, N, K); lhs (batch, d_M, d_K), rhs (batch, d_K, d_N)."""
    nb = len(batch)
    m_dim, n_dim, k_dim = nb, nb + 1, nb + 2
    m, n, k = lhs.shape[-2], rhs.shape[-1], lhs.shape[-1]
    builder = DomainBuilder(batch + (m, n, k))

    def batch_axes(t):
        axes = []
        for j, e in enumerate(t.shape[:-2]):
            d = nb - (t.rank - 2) + j
            axes.append(const(0) if (e == 1 and batch[d] != 1) else proj(d))
        return axes

    k_read = const(0) if k == 1 else proj(k_dim)
    lhs_axes = tuple(batch_axes(lhs)) + (proj(m_dim), k_read)
    rhs_axes = tuple(batch_axes(rhs)) + (k_read, proj(n_dim))
    out_axes = tuple(proj(d) for d in range(nb)) + (proj(m_dim), proj(n_dim))
    return builder.relations([builder.access(lhs_axes), builder.access(rhs_axes)],
                             [builder.access(out_axes)]), k_dim


@register_typeinfer(MatMul)
def _matmul_typeinfer(op: MatMul, ctx):
    lhs = ctx.tensor(0, "lhs")
    rhs = ctx.tensor(1, "rhs")
    if lhs.rank < 2 or rhs.rank < 2:
        ctx.error(f"MatMul operands need rank >= 2, got lhs {fmt_shape(lhs.shape)} and rhs {fmt_shape(rhs.shape)}")
    if lhs.dtype != rhs.dtype:
        ctx.error(f"MatMul dtype mismatch: lhs {lhs.dtype} vs rhs {rhs.dtype}; cast one operand explicitly")
    if lhs.shape[-1] != rhs.shape[-2]:
        ctx.error(f"MatMul contraction-dim mismatch: lhs K={format_dim(lhs.shape[-1])} vs rhs "
                  f"K={format_dim(rhs.shape[-2])}")
    batch = broadcast_shapes(ctx, (lhs.shape[:-2], rhs.shape[:-2]), "MatMul batch mismatch: ")
    shape = batch + (lhs.shape[-2], rhs.shape[-1])
    storage = anchor_storage(ctx, (lhs, rhs))
    types = (lhs, rhs)

    def allowed(i, m, r):  # bilinear: a sum-Partial times an operand not Partial on that axis
        other = types[1 - i].shard
        other_r = getattr(other.attrs[m], "reduction", None) if other is not None else None
        return r == "sum" and other_r is None

    check_partials(ctx, allowed, roles=("lhs", "rhs"), what="matmul (product of two Partials or non-sum)")
    relations, k_dim = matmul_relations(lhs, rhs, batch)
    _check_k_split(ctx, lhs, rhs)
    layout = propagate(ctx, relations, shape, roles=("lhs", "rhs"),
                       partial_reduction_dims=frozenset({k_dim}), fresh_strides=True)
    return TensorType(shape, lhs.dtype, layout, storage)


def _check_k_split(ctx, lhs, rhs):
    """Both operands split on K must use the same mesh axes."""
    from tilefoundry.semantics.canonical import position_axes
    from tilefoundry.semantics.shard_propagation import real_shard

    found = []
    for t, k_axis in ((lhs, lhs.rank - 1), (rhs, rhs.rank - 2)):
        shard = real_shard(t)
        if shard is None:
            found.append(None)
            continue
        owners = position_axes(t.shape, shard.layout.shape)
        found.append(tuple(m for m, a in enumerate(shard.attrs)
                           if type(a).__name__ == "Split" and owners[a.axis] == k_axis))
    if found[0] and found[1] and found[0] != found[1]:
        mesh = real_shard(lhs).mesh
        names = lambda axes: ", ".join(f"{m} ('{mesh.axis_name(m)}')" for m in axes)  # noqa: E731
        ctx.error(f"MatMul K is split on different mesh axes: lhs on mesh axis {names(found[0])}, rhs on "
                  f"mesh axis {names(found[1])}; reshard one operand so K uses the same mesh axis")


@register_access_relation(MatMul)
def _matmul_relation(op, ctx):
    lhs, rhs = ctx.arg_types
    rank = max(lhs.rank, rhs.rank) - 2
    bl, br = lhs.shape[:-2], rhs.shape[:-2]
    batch = []
    for k in range(rank):
        e = 1
        for s in (bl, br):
            j = k - (rank - len(s))
            if j >= 0 and s[j] != 1:
                e = s[j]
        batch.append(e)
    return matmul_relations(lhs, rhs, tuple(batch))[0]


@register_cost_evaluator(MatMul)
def _matmul_cost(call, ctx):
    """lhs dtype : 2 * batch * M * K * N over the logical (projected) operands."""
    lhs, rhs = ctx.selected_types[0], ctx.selected_types[1]
    m, k = leaf_shape(lhs)[-2], leaf_shape(lhs)[-1]
    n = leaf_shape(rhs)[-1]
    batch = product(leaf_shape(ctx.selected_output_type)[:-2])
    return Cost({leaf_dtype(lhs): 2 * batch * m * k * n}, all_read_write(call), {})


# ---------------------------------------------------------------- row-wise normalisations


def rowwise_relations(x: TensorType, first_free: int, extra_inputs=()):
    """One iteration per row (axes before ``first_free``); the suffix is free."""
    builder = DomainBuilder(x.shape[:first_free])
    row = tuple(proj(a) for a in range(first_free)) + (FREE,) * (x.rank - first_free)
    inputs = [builder.access(row)]
    for t in extra_inputs:
        inputs.append(builder.access((FREE,) * t.rank))
    return builder.relations(inputs, [builder.access(row)])


def _rowwise_type(ctx, x, first_free, roles, what):
    check_partials(ctx, lambda i, m, r: False, roles=roles, what=what)
    relations = rowwise_relations(x, first_free, ctx.arg_types[1:])
    types = (x,) + tuple(None for _ in ctx.arg_types[1:])
    from tilefoundry.semantics.shard_propagation import real_shard

    for i, t in enumerate(ctx.arg_types[1:], 1):
        if real_shard(t) is not None:
            ctx.error(f"{roles[i]} (operand {i}) is sharded but is read whole; reshard it to Broadcast first")
    layout = propagate(ctx, relations, x.shape, roles=roles, arg_types=types)
    # result = type of x: the service only validates (a split normalized suffix
    # fails closed); a real layout is kept whole, a replicated one carries none
    layout = x.layout if (layout is not None or x.shard is None) else None
    return TensorType(x.shape, x.dtype, layout, x.storage)


@register_op
@dataclass(frozen=True)
class RMSNorm(Op):
    """Root-mean-square normalisation over the last axis, scaled by a weight."""

    eps: float = 1e-6

    name: ClassVar[str] = "rms_norm"
    inputs: ClassVar[tuple] = ("x", "weight")
    attr_kinds: ClassVar[dict] = {"eps": "float"}


@register_typeinfer(RMSNorm)
def _rms_norm_typeinfer(op: RMSNorm, ctx):
    x = ctx.tensor(0, "x")
    w = ctx.tensor(1, "weight")
    if x.rank < 1:
        ctx.error("x must have rank >= 1")
    if w.rank != 1 or w.shape[0] != x.shape[-1]:
        ctx.error(f"weight must be rank 1 of extent {format_dim(x.shape[-1])} (x's last axis), got "
                  f"{fmt_shape(w.shape)}")
    return _rowwise_type(ctx, x, x.rank - 1, ("x", "weight"), "rms_norm")


@register_access_relation(RMSNorm)
def _rms_norm_relation(op, ctx):
    x = ctx.arg_types[0]
    return rowwise_relations(x, x.rank - 1, ctx.arg_types[1:])


@register_op
@dataclass(frozen=True)
class LayerNorm(Op):
    """Layer normalisation over ``axis`` with weight and bias."""

    axis: int
    eps: float

    name: ClassVar[str] = "layer_norm"
    inputs: ClassVar[tuple] = ("x", "weight", "bias")
    attr_kinds: ClassVar[dict] = {"axis": "int", "eps": "float"}


@register_typeinfer(LayerNorm)
def _layer_norm_typeinfer(op: LayerNorm, ctx):
    x = ctx.tensor(0, "x")
    w = ctx.tensor(1, "weight")
    b = ctx.tensor(2, "bias")
    if not x.dtype.is_float:
        ctx.error(f"x must be a float tensor, got {x.dtype}")
    axis = norm_axis(ctx, op.axis, x.rank)
    suffix = x.shape[axis:]
    for role, t in (("weight", w), ("bias", b)):
        if t.shape != suffix:
            ctx.error(f"{role} shape {fmt_shape(t.shape)} must equal the normalized suffix {fmt_shape(suffix)}")
    return _rowwise_type(ctx, x, axis, ("x", "weight", "bias"), "layer_norm")


@register_access_relation(LayerNorm)
def _layer_norm_relation(op, ctx):
    x = ctx.arg_types[0]
    return rowwise_relations(x, op.axis % x.rank, ctx.arg_types[1:])


@register_cost(RMSNorm, LayerNorm)
def _norm_cost(call, ctx):
    """f32 : 8 * numel(x), whatever x's dtype (companions §5.3)."""
    return Cost({DType.f32: 8 * numel(ctx.selected_types[0])}, all_read_write(call), {})


@register_op
@dataclass(frozen=True)
class SoftMax(Op):
    """Softmax over ``axis``."""

    axis: int

    name: ClassVar[str] = "softmax"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {"axis": "int"}


@register_typeinfer(SoftMax)
def _softmax_typeinfer(op: SoftMax, ctx):
    x = ctx.tensor(0, "x")
    if not x.dtype.is_float:
        ctx.error(f"x must be a float tensor, got {x.dtype}")
    axis = norm_axis(ctx, op.axis, x.rank)
    return _rowwise_type(ctx, x, axis, ("x",), "softmax")


@register_access_relation(SoftMax)
def _softmax_relation(op, ctx):
    x = ctx.arg_types[0]
    return rowwise_relations(x, op.axis % x.rank)


@register_cost_evaluator(SoftMax)
def _softmax_cost(call, ctx):
    out = ctx.selected_output_type
    return Cost({leaf_dtype(out): numel(out)}, all_read_write(call), {})


# ---------------------------------------------------------------- RoPE


@register_op
@dataclass(frozen=True)
class RoPE(Op):
    """Rotary position embedding of ``q`` and ``k`` from cosine and sine caches at ``pos_ids``."""

    name: ClassVar[str] = "rope"
    inputs: ClassVar[tuple] = ("q", "k", "cos_cache", "sin_cache", "pos_ids")
    attr_kinds: ClassVar[dict] = {}


@register_typeinfer(RoPE)
def _rope_typeinfer(op: RoPE, ctx):
    q = ctx.tensor(0, "q")
    k = ctx.tensor(1, "k")
    cos = ctx.tensor(2, "cos_cache")
    sin = ctx.tensor(3, "sin_cache")
    pos = ctx.tensor(4, "pos_ids")
    if q.rank < 1 or k.rank != q.rank:
        ctx.error(f"q and k must have one rank >= 1, got {fmt_shape(q.shape)} and {fmt_shape(k.shape)}")
    for role, t in (("q", q), ("k", k)):
        if is_static(t.shape[-1]) and t.shape[-1] % 2:
            ctx.error(f"{role} head dim {t.shape[-1]} must be even (rotate-half)")
    if is_static(q.shape[-1]) and is_static(k.shape[-1]) and q.shape[-1] != k.shape[-1]:
        ctx.error(f"q head dim {q.shape[-1]} differs from k head dim {k.shape[-1]}")
    for role, t in (("cos_cache", cos), ("sin_cache", sin)):
        if t.rank != 2:
            ctx.error(f"{role} must be rank 2 [positions, head_dim], got {fmt_shape(t.shape)}")
    if not pos.dtype.is_int:
        ctx.error(f"pos_ids must be an integer tensor, got {pos.dtype}")
    check_partials(ctx, lambda i, m, r: False, roles=RoPE.inputs, what="rope")
    from tilefoundry.semantics.shard_propagation import real_shard

    for i, t in ((0, q), (1, k)):
        shard = real_shard(t)
        if shard is None:
            continue
        from tilefoundry.semantics.canonical import position_axes

        owners = position_axes(t.shape, shard.layout.shape)
        for m, attr in enumerate(shard.attrs):
            # rotate-half pairs element d with d +- D/2: a split head dim has no local partner
            if type(attr).__name__ == "Split" and owners[attr.axis] == t.rank - 1:
                ctx.error(f"{RoPE.inputs[i]} (operand {i}) is split on mesh axis {m} "
                          f"('{shard.mesh.axis_name(m)}') along its head dim, which rotate-half reads "
                          f"across; reshard {RoPE.inputs[i]} with that axis Broadcast first")
    for i, t in ((2, cos), (3, sin), (4, pos)):
        if real_shard(t) is not None:
            ctx.error(f"{RoPE.inputs[i]} (operand {i}) is sharded but is read at data-dependent rows; "
                      "reshard it to Broadcast first")
    return TupleType((q, k))


@register_access_relation(RoPE)
def _rope_relation(op, ctx):
    q, k, cos, sin, pos = ctx.arg_types
    r = q.rank
    builder = DomainBuilder(q.shape + (2,))
    ident = identity_maps(r)
    heads = f" and i{r - 2} < {builder.dim_text(k.shape[-2])}" if r >= 2 else ""
    table = (FREE, proj(r - 1))
    return builder.relations(
        [builder.access(ident, guards=(f"i{r} = 0",)),
         builder.access(ident, guards=(f"i{r} = 1{heads}",)),
         builder.access(table), builder.access(table),
         builder.access((FREE,) * pos.rank)],
        [builder.access(ident, guards=(f"i{r} = 0",)),
         builder.access(ident, guards=(f"i{r} = 1{heads}",))],
    )


@register_cost_evaluator(RoPE)
def _rope_cost(call, ctx):
    """q dtype : 3 * numel(result) (q and k rotated)."""
    count = 3 * numel(ctx.selected_output_type)
    return Cost({leaf_dtype(ctx.selected_types[0]): count}, all_read_write(call), {})


# ---------------------------------------------------------------- Conv2D


@register_op
@dataclass(frozen=True)
class Conv2D(Op):
    """A 2-D convolution with stride, padding, dilation and groups."""

    stride: tuple
    padding: tuple
    dilation: tuple
    groups: int

    name: ClassVar[str] = "conv2d"
    inputs: ClassVar[tuple] = ("input", "weight", "bias")
    attr_kinds: ClassVar[dict] = {"stride": "shape", "padding": "shape", "dilation": "shape", "groups": "int"}


def _pair(ctx, value, what):
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    value = tuple(value)
    if len(value) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        ctx.error(f"{what} must be an int or a 2-tuple of ints, got {value!r}")
    return value


def _conv_geometry(ctx, op, x, w):
    s = _pair(ctx, op.stride, "stride")
    p = _pair(ctx, op.padding, "padding")
    d = _pair(ctx, op.dilation, "dilation")
    out = []
    for a in range(2):
        h, kk = x.shape[2 + a], w.shape[2 + a]
        out.append(dim_floordiv(h + 2 * p[a] - d[a] * (kk - 1) - 1, s[a]) + 1)
    return s, p, d, (x.shape[0], w.shape[0], out[0], out[1])


@register_typeinfer(Conv2D)
def _conv2d_typeinfer(op: Conv2D, ctx):
    x = ctx.tensor(0, "input")
    w = ctx.tensor(1, "weight")
    b = ctx.tensor(2, "bias")
    if x.rank != 4 or w.rank != 4 or b.rank != 1:
        ctx.error(f"conv2d needs NCHW input, OIHW weight and rank-1 bias, got {fmt_shape(x.shape)}, "
                  f"{fmt_shape(w.shape)}, {fmt_shape(b.shape)}")
    g = op.groups
    if isinstance(g, bool) or not isinstance(g, int) or g < 1:
        ctx.error(f"groups must be a positive int, got {g!r}")
    if x.dtype != w.dtype or x.dtype != b.dtype:
        ctx.error(f"dtypes differ: input {x.dtype}, weight {w.dtype}, bias {b.dtype}")
    if is_static(x.shape[1]) and is_static(w.shape[1]) and x.shape[1] != w.shape[1] * g:
        ctx.error(f"input channels {x.shape[1]} != weight in-channels {w.shape[1]} x groups {g}")
    if b.shape[0] != w.shape[0]:
        ctx.error(f"bias extent {format_dim(b.shape[0])} != out channels {format_dim(w.shape[0])}")
    s, p, d, shape = _conv_geometry(ctx, op, x, w)
    for e in shape[2:]:
        if is_static(e) and e < 1:
            ctx.error(f"output spatial extent {e} is empty")
    storage = anchor_storage(ctx, (x, w, b))
    # conv(sum x_i) + b != sum (conv(x_i) + b): the bias is added once, so neither a
    # Partial input nor a split reduction (ci, kh, kw -> a per-shard Partial) commutes
    check_partials(ctx, lambda i, m, r: False, roles=Conv2D.inputs, what="conv2d (the bias is added once)")
    relations = _conv2d_relations(op, x, w, shape, s, p, d)
    layout = propagate(ctx, relations, shape, roles=Conv2D.inputs, fresh_strides=True)
    return TensorType(shape, x.dtype, layout, storage)


def _conv2d_relations(op, x, w, shape, s, p, d):
    builder = DomainBuilder(shape + (w.shape[1], w.shape[2], w.shape[3]))
    g = op.groups
    if g == 1:
        ch = proj(4)
    else:
        per_group = dim_floordiv(w.shape[0], g)
        ch = AxisMap(expr=f"floor(i1/{per_group}) * {w.shape[1]} + i4")
    hx = AxisMap(expr=f"{s[0]}i2 + {d[0]}i5 - {p[0]}")
    wx = AxisMap(expr=f"{s[1]}i3 + {d[1]}i6 - {p[1]}")
    guard = (f"0 <= {s[0]}i2 + {d[0]}i5 - {p[0]} < {builder.dim_text(x.shape[2])} and "
             f"0 <= {s[1]}i3 + {d[1]}i6 - {p[1]} < {builder.dim_text(x.shape[3])}")
    return builder.relations(
        [builder.access((proj(0), ch, hx, wx), guards=(guard,)),
         builder.access((proj(1), proj(4), proj(5), proj(6))),
         builder.access((proj(1),))],
        [builder.access(identity_maps(4))],
    )


@register_access_relation(Conv2D)
def _conv2d_relation(op, ctx):
    x, w, b = ctx.arg_types
    s, p, d, shape = _conv_geometry(ctx, op, x, w)
    return _conv2d_relations(op, x, w, shape, s, p, d)


@register_cost_evaluator(Conv2D)
def _conv_cost(call, ctx):
    """input dtype : 2 * numel(out) * Cin * kh * kw."""
    x, w = ctx.selected_types[0], ctx.selected_types[1]
    wshape = leaf_shape(w)
    count = 2 * numel(ctx.selected_output_type) * wshape[1] * wshape[2] * wshape[3]
    return Cost({leaf_dtype(x): count}, all_read_write(call), {})


# ---------------------------------------------------------------- MMA tiles


_MMA_TRIPLES = {("f16", "f16", "f16"), ("bf16", "bf16", "bf16"), ("f16", "f16", "f32"),
                ("bf16", "bf16", "f32"), ("f32", "f32", "f32")}


def _mma_typeinfer(op, ctx):
    a = ctx.tensor(0, "a")
    b = ctx.tensor(1, "b")
    m, n, k = op.tile
    if a.shape != (m, k) or b.shape != (k, n):
        ctx.error(f"operands must be ({m}, {k}) and ({k}, {n}), got {fmt_shape(a.shape)} and {fmt_shape(b.shape)}")
    triple = (str(op.dtype_a), str(op.dtype_b), str(op.dtype_acc))
    if triple not in _MMA_TRIPLES:
        ctx.error(f"dtype triple {triple} is not supported; allowed: {sorted(_MMA_TRIPLES)}")
    if a.dtype != op.dtype_a or b.dtype != op.dtype_b:
        ctx.error(f"operand dtypes ({a.dtype}, {b.dtype}) differ from the declared ({op.dtype_a}, {op.dtype_b})")
    for label, value in (("a_layout", op.a_layout), ("b_layout", op.b_layout)):
        if value not in ("N", "T"):
            ctx.error(f"{label} must be 'N' or 'T', got {value!r}")
    storage = anchor_storage(ctx, (a, b))
    check_partials(ctx, lambda i, m_, r: False, roles=("a", "b"), what=op.name)
    return TensorType((m, n), op.dtype_acc, _mma_result_layout(op, ctx, (a, b)), storage)


def _mma_result_layout(op, ctx, operands):
    """The accumulator fragment on the operands' lane mesh (spec §3.3: the op
    owns its result layout). The tile is read whole by every lane, so the
    shared propagation service has no projection to follow; instead each split
    operand must already be the instruction's register fragment, and the result
    is the instruction's accumulator fragment on that mesh. Unsplit operands
    give an unsplit result."""
    try:
        mesh = common_mesh(operands, roles=("a", "b"))
    except ShardPropagationError as exc:
        ctx.error(str(exc))
    if mesh is None:
        return None
    for i, (role, type_) in enumerate(zip(("a", "b"), operands)):
        if real_shard(type_) is None:
            continue  # held whole by every lane: no fragment to match
        fragment = op.operand_fragments[i]
        if fragment is None:
            ctx.error(f"{role} (operand {i}) is split on the lane mesh, but {op.name} reads it whole "
                      "(from shared memory); reshard it with every mesh axis Broadcast")
        expected = _fragment_on_mesh(ctx, op, fragment, mesh)
        if type_.layout != expected:
            ctx.error(f"{role} (operand {i}) is laid out {_fmt_fragment(type_.shard)}, but {op.name} "
                      f"reads it as the register fragment {_fmt_fragment(expected)}; reshard it into "
                      "that fragment")
    return _fragment_on_mesh(ctx, op, op.accumulator_fragment, mesh)


def _fragment_on_mesh(ctx, op, fragment, mesh) -> ShardLayout:
    """Place a declared fragment on a lane mesh: each lane position is cut at
    the mesh axes' lane-digit boundaries, and the pieces one mesh axis covers
    must sit side by side with contiguous strides, so they merge into the one
    layout position that mesh axis splits."""
    axes = _lane_axes(ctx, op, mesh)
    pieces = []  # (extent, stride, lane stride | None, mesh axis | None)
    for extent, stride, lane in fragment:
        if lane is None:
            pieces.append((extent, stride, None, None))
            continue
        while extent > 1:
            _, high, m = next(axis for axis in axes if axis[0] <= lane < axis[1])
            take = min(extent, high // lane)
            if extent % take:
                ctx.error(f"mesh axis {m} ('{mesh.axis_name(m)}') ends inside a lane group of the "
                          f"{op.name} fragment; use a lane mesh whose axes follow its lane groups")
            pieces.append((take, stride, lane, m))
            extent, stride, lane = extent // take, stride * take, lane * take
    shape, strides, owner, next_lane = [], [], {}, None
    for extent, stride, lane, m in pieces:
        if m is not None and m in owner:
            # merging is exact only for the next lane digits at the next stride
            if owner[m] != len(shape) - 1 or strides[-1] * shape[-1] != stride or lane != next_lane:
                ctx.error(f"mesh axis {m} ('{mesh.axis_name(m)}') spans lanes whose elements of the "
                          f"{op.name} fragment are not one strided run; use a lane mesh whose axes "
                          "follow the fragment's lane groups")
            shape[-1] *= extent
        else:
            if m is not None:
                owner[m] = len(shape)
            shape.append(extent)
            strides.append(stride)
        next_lane = None if lane is None else lane * extent
    attrs = tuple(Split(owner[m]) if m in owner else Broadcast() for m in range(mesh.rank))
    return ShardLayout(Layout(tuple(shape), tuple(strides)), attrs, mesh)


def _lane_axes(ctx, op, mesh) -> list:
    """(low, high, mesh axis) lane-digit range of each non-unit mesh axis; the
    mesh must be one level whose axes tile exactly the instruction's lanes."""
    if mesh.is_sliced or len(mesh.topologies) != 1 or not all(is_static(e) for e in mesh.shape):
        ctx.error(f"{op.name} needs its operands on one static, unsliced lane mesh of {op.lanes} "
                  "threads")
    strides = mesh.layout.strides or c_order_strides(mesh.shape)
    axes = sorted((s, s * e, m) for m, (e, s) in enumerate(zip(mesh.shape, strides)) if e != 1)
    bounds = [1] + [hi for _, hi, _ in axes]
    if [lo for lo, _, _ in axes] != bounds[:-1] or bounds[-1] != op.lanes:
        ctx.error(f"{op.name} runs on {op.lanes} lanes; the mesh {mesh.shape} with strides "
                  f"{tuple(strides)} does not number them compactly")
    return axes


def _fmt_fragment(shard) -> str:
    positions = []
    split = {a.axis: m for m, a in enumerate(shard.attrs) if isinstance(a, Split)}
    for p, extent in enumerate(shard.layout.shape):
        at = f" @ {shard.mesh.axis_name(split[p])}" if p in split else ""
        positions.append(f"{format_dim(extent)}{at}")
    return f"(({', '.join(positions)}), {shard.layout.strides})"


def _mma_relations(op):
    m, n, k = op.tile
    builder = DomainBuilder((m, n))
    return builder.relations([builder.access((FREE, FREE)), builder.access((FREE, FREE))],
                             [builder.access(identity_maps(2))])


@dataclass(frozen=True)
class _MmaTile(Op):
    """A fixed-shape tensor-core tile: the attributes every MMA op shares;
    each op states its name, its (m, n, k) tile, its lane count and its register
    fragments.

    A fragment lists positions (extent, stride into the row-major tile, lane
    stride or None): a lane position is a run of lane-index digits starting at
    that lane stride, a None one a run of registers inside each lane. Positions
    go fastest first, the order the result layout is written in.
    """

    dtype_a: DType
    dtype_b: DType
    dtype_acc: DType
    a_layout: str = "T"
    b_layout: str = "N"

    inputs: ClassVar[tuple] = ("a", "b")
    attr_kinds: ClassVar[dict] = {"dtype_a": "dtype", "dtype_b": "dtype", "dtype_acc": "dtype",
                                  "a_layout": "str", "b_layout": "str"}
    tile: ClassVar[tuple] = ()
    lanes: ClassVar[int] = 0
    operand_fragments: ClassVar[tuple] = (None, None)  # None: read whole, never lane-split
    accumulator_fragment: ClassVar[tuple] = ()


# Lane-index digits of a warp: lane = tig + 4 * group (PTX "threadID_in_group"
# and "groupID"); a warpgroup adds the warp index above them.
_TIG, _GROUP, _WARP = 1, 4, 32


@register_op
@dataclass(frozen=True)
class Mma_SM80_16x8x16(_MmaTile):  # noqa: N801 (the catalogue's class name)
    """One SM80 ``mma.sync`` 16x8x16 tile: the product of fragments ``a`` and ``b``."""

    name: ClassVar[str] = "mma_sm80_16x8x16"
    tile: ClassVar[tuple] = (16, 8, 16)
    lanes: ClassVar[int] = 32
    # PTX mma.m16n8k16 fragments: A (16, 16) row = group + 8h, col = 2 tig + i + 8j;
    # B (16, 8) k = 2 tig + i + 8h, n = group; C (16, 8) row = group + 8h, col = 2 tig + i
    operand_fragments: ClassVar[tuple] = (
        ((2, 1, None), (4, 2, _TIG), (2, 8, None), (8, 16, _GROUP), (2, 128, None)),
        ((8, 1, _GROUP), (2, 8, None), (4, 16, _TIG), (2, 64, None)),
    )
    accumulator_fragment: ClassVar[tuple] = ((2, 1, None), (4, 2, _TIG), (8, 8, _GROUP), (2, 64, None))


@register_op
@dataclass(frozen=True)
class Wgmma_SM90_64x128x16(_MmaTile):  # noqa: N801
    """One SM90 warpgroup ``wgmma`` 64x128x16 tile: the product of ``a`` and ``b``."""

    name: ClassVar[str] = "wgmma_sm90_64x128x16"
    tile: ClassVar[tuple] = (64, 128, 16)
    lanes: ClassVar[int] = 128
    # PTX wgmma.m64n128k16: warp w owns rows 16 w.. of A and D; B is read from
    # shared memory. A (64, 16) row = group + 8h + 16w, col = 2 tig + i + 8j;
    # D (64, 128) row = group + 8h + 16w, col = 2 tig + i + 8j
    operand_fragments: ClassVar[tuple] = (
        ((2, 1, None), (4, 2, _TIG), (2, 8, None), (8, 16, _GROUP), (2, 128, None), (4, 256, _WARP)),
        None,
    )
    accumulator_fragment: ClassVar[tuple] = ((2, 1, None), (4, 2, _TIG), (16, 8, None), (8, 128, _GROUP),
                                             (2, 1024, None), (4, 2048, _WARP))


for _cls in (Mma_SM80_16x8x16, Wgmma_SM90_64x128x16):
    register_typeinfer(_cls)(_mma_typeinfer)
    register_access_relation(_cls)(lambda op, ctx: _mma_relations(op))


@register_cost(Mma_SM80_16x8x16, Wgmma_SM90_64x128x16)
def _mma_cost(call, ctx):
    """a dtype : 2 * m * n * k of the tile; per unit, 2 * k for each
    accumulator element the unit holds. The instruction is cooperative: a lane's
    A and B fragments do not partition the (m, n, k) iteration space, but its
    accumulator fragment partitions the result, each element of which takes the
    whole k (so the units' shares sum to the tile's 2 * m * n * k)."""
    a = ctx.selected_types[0]
    k = leaf_shape(call.args[0].type)[-1]
    m, n = leaf_shape(ctx.selected_output_type)[-2:]
    return Cost({leaf_dtype(a): 2 * m * n * k}, all_read_write(call), {})


# ---------------------------------------------------------------- Quant


@register_op
@dataclass(frozen=True)
class Quant(Op):
    """Quantisation of ``x`` to ``target_dtype`` by ``scheme`` over groups of ``group``
    elements, with its scales."""

    scheme: str = "per_token_group"
    group: int = 128
    target_dtype: DType = DType.fp8e4m3

    name: ClassVar[str] = "quant"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {"scheme": "str", "group": "int", "target_dtype": "dtype"}


def _quant_relations(x, group):
    builder = DomainBuilder(x.shape)
    ident = identity_maps(x.rank)
    scale = ident[:-1] + (AxisMap(dim=x.rank - 1, div=group),)
    return builder.relations([builder.access(ident)], [builder.access(ident), builder.access(scale)])


@register_typeinfer(Quant)
def _quant_typeinfer(op: Quant, ctx):
    x = ctx.tensor(0, "x")
    if op.scheme != "per_token_group":
        ctx.error(f"scheme {op.scheme!r} is not supported; valid: ['per_token_group']")
    g = op.group
    if isinstance(g, bool) or not isinstance(g, int) or g < 1:
        ctx.error(f"group must be a positive int, got {g!r}")
    if x.rank < 1 or not x.dtype.is_float:
        ctx.error(f"x must be a float tensor of rank >= 1, got {fmt_shape(x.shape)} {x.dtype}")
    last = x.shape[-1]
    if is_static(last) and last % g:
        ctx.error(f"last extent {last} is not divisible by group {g}")
    check_partials(ctx, lambda i, m, r: False, roles=("x",), what="quant")
    scale_shape = x.shape[:-1] + (dim_floordiv(last, g),)
    relations = _quant_relations(x, g)
    q_layout = propagate(ctx, relations, x.shape, roles=("x",), output_index=0)
    s_layout = propagate(ctx, relations, scale_shape, roles=("x",), output_index=1, fresh_strides=True)
    return TupleType((TensorType(x.shape, op.target_dtype, q_layout, x.storage),
                      TensorType(scale_shape, DType.f32, s_layout, x.storage)))


@register_access_relation(Quant)
def _quant_relation(op, ctx):
    return _quant_relations(ctx.arg_types[0], op.group)


_ = (const,)


@register_cost_evaluator(Quant)
def _quant_cost(call, ctx):
    """f32 : 4 * numel(x)."""
    return Cost({DType.f32: 4 * numel(ctx.selected_types[0])}, all_read_write(call), {})

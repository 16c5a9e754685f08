"""Neural-network ops: MatMul, RMSNorm, LayerNorm, SoftMax, RoPE, Conv2D, Quant
(the MMA tile ops are in ``mma``)."""
from __future__ import annotations

from typing import ClassVar

from tilefoundry.ir.dim import dim_floordiv, format_dim, is_static
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Op
from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.tensor_type import TensorType, TupleType, numel
from tilefoundry.ops._common import (
    broadcast_shapes,
    check_k_split,
    fmt_shape,
    matmul_result_dtype,
    norm_axis,
    propagate,
)
from tilefoundry.ops.tensor_index import index_in_range
from tilefoundry.semantics.cost import (
    Cost,
    all_read_write,
    leaf_dtype,
    leaf_shape,
    product,
    register_cost,
)
from tilefoundry.semantics.op_numerics import f32, np, numpy_dtype
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
    const,
    identity_maps,
    proj,
)
from tilefoundry.semantics.shard_propagation import check_partials
from tilefoundry.semantics.storage_anchor import anchor_storage

# ---------------------------------------------------------------- MatMul


@register_op
@frozen_record
class MatMul(Op):
    """A (batched) matrix product: the last axis of ``lhs`` against the second-to-last of ``rhs``;
    ``out_dtype`` (Triton's ``tl.dot`` name) widens a bf16/f16/fp8 product to an f32 result."""

    out_dtype: DType | None = None

    name: ClassVar[str] = "matmul"
    inputs: ClassVar[tuple] = ("lhs", "rhs")
    attr_kinds: ClassVar[dict] = {"out_dtype": "dtype"}


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
    dtype = matmul_result_dtype(op, lhs.dtype)
    if dtype is None:
        ctx.error(f"out_dtype {op.out_dtype} is not written from {lhs.dtype} operands; "
                  f"out_dtype is the operands' dtype or, for bf16/f16/fp8 operands, \"f32\" "
                  f"(cast the result afterwards for another dtype)")
    storage = anchor_storage(ctx, (lhs, rhs))
    types = (lhs, rhs)

    def allowed(i, m, r):  # bilinear: a sum-Partial times an operand not Partial on that axis
        other = types[1 - i].shard
        other_r = getattr(other.attrs[m], "reduction", None) if other is not None else None
        return r == "sum" and other_r is None

    check_partials(ctx, allowed, roles=("lhs", "rhs"), what="matmul (product of two Partials or non-sum)")
    relations, k_dim = matmul_relations(lhs, rhs, batch)
    check_k_split(ctx, lhs, rhs)
    layout = propagate(ctx, relations, shape, roles=("lhs", "rhs"),
                       partial_reduction_dims=frozenset({k_dim}), fresh_strides=True)
    return TensorType(shape, dtype, layout, storage)


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
    """lhs dtype : 2 * batch * M * K * N over the logical (projected) operands: the operands'
    dtype whatever ``out_dtype`` writes, so an f32-accumulated bf16 product is priced at the
    bf16 tensor-core rate."""
    lhs, rhs = ctx.selected_types[0], ctx.selected_types[1]
    m, k = leaf_shape(lhs)[-2], leaf_shape(lhs)[-1]
    n = leaf_shape(rhs)[-1]
    batch = product(leaf_shape(ctx.selected_output_type)[:-2])
    return Cost({leaf_dtype(lhs): 2 * batch * m * k * n}, all_read_write(call), {})


@register_evaluator(MatMul)
def _matmul_eval(op, args, ctx):
    """lhs @ rhs, batch axes broadcast right-aligned (numpy); floats widened to f32 and
    accumulated there, integers exact; the runner rounds the f32 sum once to the result dtype
    (the operands' or ``out_dtype``)."""
    return np.matmul(f32(args[0]), f32(args[1]))


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
@frozen_record
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


@register_evaluator(RMSNorm)
def _rms_norm_eval(op, args, ctx):
    """x / sqrt(mean(x^2 over the last axis) + eps) * weight, in f32."""
    x, w = f32(args[0]), f32(args[1])
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + np.float32(op.eps)) * w


@register_op
@frozen_record
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


@register_evaluator(LayerNorm)
def _layer_norm_eval(op, args, ctx):
    """(x - mean) / sqrt(var + eps) * weight + bias over the axes from ``axis`` on
    (biased variance), in f32."""
    x, w, b = (f32(a) for a in args)
    axes = tuple(range(op.axis % x.ndim, x.ndim))
    centred = x - np.mean(x, axis=axes, keepdims=True)
    var = np.mean(centred * centred, axis=axes, keepdims=True)
    return centred / np.sqrt(var + np.float32(op.eps)) * w + b


@register_op
@frozen_record
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


@register_evaluator(SoftMax)
def _softmax_eval(op, args, ctx):
    """exp(x - max) / sum(exp(x - max)) along ``axis``, in f32 (the row max subtracted first)."""
    x = f32(args[0])
    top = np.max(x, axis=op.axis % x.ndim, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(top), top, np.float32(0)))
    return e / np.sum(e, axis=op.axis % x.ndim, keepdims=True)


# ---------------------------------------------------------------- RoPE


@register_op
@frozen_record
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


@register_evaluator(RoPE)
def _rope_eval(op, args, ctx):
    """(q, k) each rotated rotate-half (Llama/HF): x * cos[p] + cat(-x2, x1) * sin[p], x1, x2
    the head-dim halves; the tables' rows [positions, head_dim] picked by p = pos_ids
    broadcast right-aligned over x's axes before the head axis (-2); in f32."""
    cos, sin = f32(args[2]), f32(args[3])
    pos = index_in_range(ctx, "pos_ids", args[4], 0, min(cos.shape[0], sin.shape[0]), " of the table rows")
    out = []
    for role, x in zip(("q", "k"), (f32(args[0]), f32(args[1]))):
        lead, half = x.shape[:-2], x.shape[-1] // 2
        if cos.shape[1] != x.shape[-1] or sin.shape[1] != x.shape[-1]:
            ctx.error(f"tables are {cos.shape} and {sin.shape}; {role}'s head dim is {x.shape[-1]}")
        if pos.ndim > len(lead) or any(e not in (1, f) for e, f in zip(pos.shape[::-1], lead[::-1])):
            ctx.error(f"pos_ids {pos.shape} does not broadcast over {role}'s axes {lead} before the head axis")
        p = np.broadcast_to(pos, lead)
        c, s = (t[p][..., None, :] if x.ndim >= 2 else t[p] for t in (cos, sin))
        out.append(x * c + np.concatenate([-x[..., half:], x[..., :half]], axis=-1) * s)
    return tuple(out)


# ---------------------------------------------------------------- Conv2D


@register_op
@frozen_record
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


@register_evaluator(Conv2D, on_boxes=False)
def _conv2d_eval(op, args, ctx):
    """Cross-correlation (no kernel flip) of NCHW input with OIHW weight per group, zero
    padding, stride and dilation, accumulated in f32 (integers exact), plus bias per channel."""
    x, w, b = (f32(a) for a in args)
    (sh, sw), (ph, pw), (dh, dw), (n, o, oh, ow) = _conv_geometry(ctx, op, x, w)
    g, cg = op.groups, w.shape[1]
    if o % g or x.shape[1] != cg * g:
        ctx.error(f"groups {g} must divide out channels {o} and give input channels {x.shape[1]} = {cg} x {g}")
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw))).reshape((n, g, cg) + (x.shape[2] + 2 * ph, -1))
    wg = w.reshape((g, o // g, cg) + w.shape[2:])
    out = np.zeros((n, g, o // g, oh, ow), np.result_type(x, w))
    for i in range(w.shape[2]):
        for j in range(w.shape[3]):
            patch = xp[..., i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
            out += np.einsum("ngchw,goc->ngohw", patch, wg[..., i, j])
    return out.reshape(n, o, oh, ow) + b[:, None, None]


# ---------------------------------------------------------------- Quant


@register_op
@frozen_record
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


@register_cost_evaluator(Quant)
def _quant_cost(call, ctx):
    """f32 : 4 * numel(x)."""
    return Cost({DType.f32: 4 * numel(ctx.selected_types[0])}, all_read_write(call), {})


@register_evaluator(Quant)
def _quant_eval(op, args, ctx):
    """per_token_group, per run of ``group`` last-axis elements: scale = max(amax|x|, 1e-10) /
    max(target) in f32, x_q = clip(x / scale, +-max(target)) (rounded by the runner); (x_q, scale)."""
    import ml_dtypes  # finfo of bf16 and the fp8/fp4 types
    x, t, g = f32(args[0]), op.target_dtype, op.group
    if op.scheme != "per_token_group" or not t.is_float or t.name == "f8e8m0":
        ctx.error(f"evaluates scheme 'per_token_group' to a signed float type, not {op.scheme!r} to {t}")
    if x.shape[-1] % g:
        ctx.error(f"x's last extent {x.shape[-1]} (in this box) is not a multiple of group {g}")
    top = np.float32(ml_dtypes.finfo(numpy_dtype(t)).max)
    xg = x.reshape(x.shape[:-1] + (x.shape[-1] // g, g))
    scale = np.maximum(np.max(np.abs(xg), axis=-1), np.float32(1e-10)) / top
    return np.clip(xg / scale[..., None], -top, top).reshape(x.shape), scale

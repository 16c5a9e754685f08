"""Helpers shared by the op files: axis normalisation, broadcasting, layout
propagation through the shared service, elementwise relations."""
from __future__ import annotations

from tilefoundry.ir.dim import format_dim, is_static
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.shard import Broadcast, Layout, ShardLayout
from tilefoundry.ir.storage import StorageKind
from tilefoundry.ir.tensor_type import TensorType
from tilefoundry.semantics.canonical import c_order
from tilefoundry.semantics.relations import DomainBuilder, const, identity_maps, proj
from tilefoundry.semantics.shard_propagation import (
    ShardPropagationError,
    derive_output_shard_layout,
)


def fmt_shape(shape) -> str:
    inner = ", ".join(format_dim(d) for d in shape)
    return f"({inner}{',' if len(shape) == 1 else ''})"


def norm_axis(ctx, axis, rank: int, what: str = "axis", *, allow_end: bool = False) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int):
        ctx.error(f"{what} must be an int, got {axis!r}")
    limit = rank + 1 if allow_end else rank
    value = axis + limit if axis < 0 else axis
    if not 0 <= value < limit:
        ctx.error(f"{what} {axis} is out of range for rank {rank}")
    return value


def norm_axes(ctx, axes, rank: int, what: str = "axes") -> tuple:
    if isinstance(axes, int) and not isinstance(axes, bool):
        axes = (axes,)
    result = []
    for axis in tuple(axes):
        value = norm_axis(ctx, axis, rank, what)
        if value in result:
            ctx.error(f"{what} names axis {axis} twice")
        result.append(value)
    return tuple(result)


def broadcast_shapes(ctx, shapes, prefix: str = "") -> tuple:
    """numpy right-aligned broadcasting; symbolic extents must be equal."""
    rank = max((len(s) for s in shapes), default=0)
    result = []
    for k in range(rank):
        extent = 1
        for shape in shapes:
            j = k - (rank - len(shape))
            if j < 0:
                continue
            e = shape[j]
            if e == 1:
                continue
            if extent == 1:
                extent = e
            elif extent != e:
                ctx.error(
                    f"{prefix}shapes {', '.join(fmt_shape(s) for s in shapes)} do not broadcast "
                    f"(axis {k - rank}: {format_dim(extent)} vs {format_dim(e)})"
                )
        result.append(extent)
    return tuple(result)


def broadcast_relations(arg_types, out_shape):
    """Binary/Where relation: operands right-aligned, extent-1 axes read at 0."""
    builder = DomainBuilder(out_shape)
    rank = len(out_shape)
    inputs = []
    for type_ in arg_types:
        if not isinstance(type_, TensorType):
            inputs.append(builder.access(()))
            continue
        axes = []
        for j, e in enumerate(type_.shape):
            d = rank - type_.rank + j
            axes.append(const(0) if (e == 1 and out_shape[d] != 1) else proj(d))
        inputs.append(builder.access(tuple(axes)))
    return builder.relations(inputs, [builder.access(identity_maps(rank))])


def elementwise_relations(arg_types, rank_source=0):
    shape = arg_types[rank_source].shape
    builder = DomainBuilder(shape)
    ident = identity_maps(len(shape))
    inputs = [builder.access(ident) if i == rank_source else builder.access(())
              for i in range(len(arg_types))]
    return builder.relations(inputs, [builder.access(ident)])


def propagate(ctx, relations, out_shape, *, prefix: str = "", roles=None, output_index: int = 0,
              arg_types=None, **controls):
    """Run the shared shard-propagation service; its refusals become ctx.error.

    Fails closed when the op has no registered access relation (spec §2), and
    holds each input boundary's image rank to its type (spec §1.2)."""
    from tilefoundry.semantics.op_registry import ACCESS_RELATIONS

    if type(ctx.op) not in ACCESS_RELATIONS:
        ctx.error(f"no access relation registered for {ctx.op.class_name}; shard propagation refuses "
                  "it (fail closed); register one with @register_access_relation")
    types = ctx.arg_types if arg_types is None else arg_types
    for k, (boundary, type_) in enumerate(zip(relations.inputs, ctx.arg_types)):
        if boundary is not None and isinstance(type_, TensorType) and boundary.pattern.rank != type_.rank:
            ctx.error(f"input boundary {k} has image rank {boundary.pattern.rank} but its type has rank "
                      f"{type_.rank}; the relation does not describe this operand")
    try:
        return derive_output_shard_layout(
            types, relations, tuple(out_shape), output_index=output_index, roles=roles, **controls
        )
    except ShardPropagationError as exc:
        ctx.error(f"{prefix}{exc}")


def single_storage(type_) -> StorageKind:
    return type_.storage


def replicated_layout_for(result_shape, operands):
    """The fully-Broadcast placement a result keeps when its placed operands are
    all replicated (programs README note 7; companions §2.2: Broadcast still
    places a value, the mesh says who participates).

    It is rebuilt over the result's own shape on the operands' one mesh, never
    an operand's layout carried across a shape change; an equal-shape operand
    laid out over exactly that shape in an order other than C-order lends its
    strides, so the physical order survives (a column-major carry keeps its
    type). Strides that differ from C-order only where an extent is 1 are
    C-order in every way that places a byte, and restate as C-order. None when
    no operand is placed, or the placed operands name different meshes (no one
    placement)."""
    shape = tuple(result_shape)
    placed = [t for t in operands if isinstance(t, TensorType) and t.shard is not None]
    if not placed or any(not t.shard.is_replicated for t in placed):
        return None
    mesh = placed[0].shard.mesh
    if any(t.shard.mesh != mesh for t in placed):
        return None
    lent = {t.shard.layout.strides for t in placed
            if tuple(t.shape) == shape and tuple(t.shard.layout.shape) == shape}
    lent.discard(None)
    lent = {s for s in lent if not _places_as_c_order(shape, s)}
    if len(lent) == 1:
        strides = lent.pop()
    else:
        strides = c_order(shape) if all(is_static(e) for e in shape) else None
    return ShardLayout(Layout(shape, strides), (Broadcast(),) * mesh.rank, mesh)


def _places_as_c_order(shape: tuple, strides: tuple) -> bool:
    """Whether ``strides`` agree with C-order at every axis of extent other
    than 1 (a unit axis's stride never moves a byte)."""
    if not all(is_static(e) for e in shape):
        return False
    return all(s == c for e, s, c in zip(shape, strides, c_order(shape)) if e != 1)


def plain_layout_for(result_shape, storage, operands):
    """A result with no derivable shard layout: keep the operands' replicated
    placement, else an equal-shape operand's plain Layout, else fresh C-order in
    rmem/smem (authoring §6.3), else None."""
    replicated = replicated_layout_for(result_shape, operands)
    if replicated is not None:
        return replicated
    for t in operands:
        if isinstance(t, TensorType) and isinstance(t.layout, Layout) and tuple(t.shape) == tuple(result_shape):
            return t.layout
    if storage in (StorageKind.RMEM, StorageKind.SMEM) and all(is_static(e) for e in result_shape):
        return Layout(tuple(result_shape), c_order(tuple(result_shape)))
    return None


def is_scalar_int(type_) -> bool:
    return isinstance(type_, TensorType) and type_.dtype.is_int and all(e == 1 for e in type_.shape)


def shard_or_none(type_):
    return type_.shard if isinstance(type_, TensorType) else None


def require_static(ctx, value, what: str) -> int:
    if not is_static(value):
        ctx.error(f"{what} must be static, got {format_dim(value)}; bind symbolic dimensions")
    return value


def row_major_source_index(terms: list, stride: int, extent: int) -> str:
    """Source axis (``stride``, ``extent``) of the result's row-major position
    sum(S_k i_k) over ``terms`` [(S_k, E_k)]: ``floor(L / stride) mod extent``.
    Where the reshape only merges or splits axes, the terms whose strides are
    multiples of ``stride`` are the quotient and the others stay below it, so
    the index is their affine sum (mod ``extent`` only where it can wrap): one
    relation, written without the floor and mod a parser must turn into
    existential variables (a model's reshapes were its costliest relations).
    ``ops.tensor``'s Reshape relation reads its source through it."""
    remainder = sum(s * (e - 1) for s, e in terms if e != 1 and s % stride != 0)
    if remainder >= stride:  # the lower terms carry into the quotient
        linear = " + ".join(f"{s}i{k}" for k, (s, e) in enumerate(terms) if e != 1) or "0"
        return f"(floor(({linear})/{stride}) mod {extent})"
    whole = [(k, s // stride) for k, (s, e) in enumerate(terms) if e != 1 and s % stride == 0]
    kept = [(k, c) for k, c in whole if c % extent != 0]  # a multiple of the extent wraps to 0
    if not kept:
        return "0"
    quotient = " + ".join(f"{c}i{k}" for k, c in kept)
    if sum(c * (terms[k][1] - 1) for k, c in kept) < extent:
        return f"({quotient})"
    return f"(({quotient}) mod {extent})"


# ---------------------------------------------------------------- MatMul's rules (ops.nn)


def matmul_result_dtype(op, operand):
    """The result dtype of ``op`` over operands of ``operand``, or None where ``out_dtype`` is
    not one a tensor core writes: the operands' own dtype, or f32 for operands of 16 bits or
    fewer (bf16, f16, the fp8 kinds), whose products a tensor-core MMA accumulates in f32
    (the PTX ISA's mma and wgmma take an f32 accumulator for bf16, f16 and fp8 operands)."""
    wanted = op.out_dtype
    if wanted is None or wanted == operand:
        return operand
    if operand.is_float and operand.bits <= 16 and wanted == DType.f32:
        return wanted
    return None


def check_k_split(ctx, lhs, rhs):
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

"""Sharding ops: Reshard (the only op that changes a layout or mesh, and the only
completion of a Partial) and Local."""
from __future__ import annotations

from typing import ClassVar

from tilefoundry.ir.dim import dim_mul, format_dim, is_static
from tilefoundry.ir.expr import Op
from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.shard import ComposedLayout, Layout, ShardLayout
from tilefoundry.ir.storage import StorageKind
from tilefoundry.ir.tensor_type import TensorType, tensor_leaves
from tilefoundry.ops._common import fmt_shape
from tilefoundry.semantics.canonical import (
    local_extents,
    materialize_reshard_strides,
    regroup,
)
from tilefoundry.semantics.cost import (
    Cost,
    all_read_write,
    no_traffic,
    no_work,
    register_cost,
)
from tilefoundry.semantics.op_numerics import np
from tilefoundry.semantics.op_registry import (
    register_access_relation,
    register_cost_evaluator,
    register_evaluator,
    register_op,
    register_typeinfer,
)
from tilefoundry.semantics.relations import FREE, DomainBuilder, identity_maps


@register_op
@frozen_record
class Reshard(Op):
    """The explicit change of a value's shard layout, mesh or storage."""

    layout: object = None
    storage: StorageKind | None = None

    name: ClassVar[str] = "reshard"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {"layout": "layout", "storage": "storage"}


def _size(shape):
    total = 1
    for e in shape:
        total = dim_mul(total, e)
    return total


@register_typeinfer(Reshard)
def _reshard_typeinfer(op: Reshard, ctx):
    x = ctx.tensor(0, "x")
    layout = op.layout
    storage = op.storage
    if storage is StorageKind.UMAT:
        ctx.error("storage 'umat' is not a residency; reshard to a concrete storage level")
    if layout is None:
        if storage is not None and storage != x.storage:
            ctx.error("storage change requires an explicit `layout=`")
        if storage is None:
            ctx.error("reshard needs a layout= (and optionally storage=)")
        return x
    shard = layout.outer if isinstance(layout, ComposedLayout) else layout
    if not isinstance(shard, ShardLayout):
        ctx.error(f"layout must be a ShardLayout, got {type(layout).__name__}")
    gshape = shard.layout.shape
    if all(is_static(e) for e in gshape) and all(is_static(e) for e in x.shape):
        if _size(gshape) != _size(x.shape):
            ctx.error(
                f"layout domain {fmt_shape(gshape)} holds {_size(gshape)} elements but the value "
                f"{fmt_shape(x.shape)} has {_size(x.shape)}"
            )
    try:
        regroup(x.shape, gshape)
    except Exception as exc:  # VerifyError from regroup
        ctx.error(str(exc))
    for m, attr in enumerate(shard.attrs):
        if type(attr).__name__ == "Split":
            e = shard.mesh.shape[m]
            extent = gshape[attr.axis]
            if is_static(e) and is_static(extent) and extent % e:
                ctx.error(
                    f"layout position {attr.axis} (extent {extent}) is not divisible by mesh axis {m} "
                    f"('{shard.mesh.axis_name(m)}') extent {e}"
                )
            elif not is_static(extent) and extent != e and not is_static(e):
                ctx.error(f"split of symbolic extent {format_dim(extent)}: bind symbolic dimensions")
    target = storage if storage is not None else x.storage
    materialized = materialize_reshard_strides(x, shard, target)
    if isinstance(layout, ComposedLayout):
        materialized = ComposedLayout(layout.inner, layout.offset, materialized)
    return TensorType(x.shape, x.dtype, materialized, target)


@register_access_relation(Reshard)
def _reshard_relation(op, ctx):
    x = ctx.arg_types[0]
    builder = DomainBuilder(x.shape)
    ident = identity_maps(x.rank)
    return builder.relations([builder.access(ident)], [builder.access(ident)])


@register_cost_evaluator(Reshard)
def _reshard_cost(call, ctx):
    """Read and write when the storage level changes, else nothing."""
    pairs = zip(tensor_leaves(call.args[0].type), tensor_leaves(call.type))
    if any(source.storage != result.storage for source, result in pairs):
        return Cost({}, all_read_write(call), {})
    return Cost({}, no_traffic(call), {})


@register_evaluator(Reshard)
def _reshard_eval(op, args, ctx):
    """The values are unchanged: a reshard moves them between participants and
    storage, which the placed run carries out (execute.placed)."""
    return args[0]


@register_op
@frozen_record
class Local(Op):
    """The part of a sharded value that one participant holds."""

    name: ClassVar[str] = "local"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {}


@register_typeinfer(Local)
def _local_typeinfer(op: Local, ctx):
    x = ctx.tensor(0, "x")
    shard = x.shard
    if shard is None:
        ctx.error(f"x (operand 0) has layout {x.layout!r}; local() requires a value with a ShardLayout; "
                  "reshard it onto a mesh first")
    # the per-unit view has no mesh axis left to carry the pending reduction on
    for m, attr in enumerate(shard.attrs):
        if type(attr).__name__ == "Partial":
            ctx.error(f"x (operand 0) carries Partial({attr.reduction}) on mesh axis {m} "
                      f"('{shard.mesh.axis_name(m)}'); local() would drop the pending reduction; "
                      f"insert reshard(x, ...) with '{shard.mesh.axis_name(m)}' Broadcast first")
    shape = local_extents(shard)
    strides = shard.layout.strides
    inner = Layout(shape, strides) if strides is not None else None
    return TensorType(shape, x.dtype, inner, x.storage)


@register_access_relation(Local)
def _local_relation(op, ctx):
    builder = DomainBuilder(())
    x = ctx.arg_types[0]
    rank = len(local_extents(x.shard)) if x.shard is not None else x.rank
    return builder.relations([None], [builder.access((FREE,) * rank)])


register_cost(Local)(no_work)


@register_evaluator(Local)
def _local_eval(op, args, ctx):
    """A participant's box in its layout-domain form: the runner hands each
    participant its own box (execute.logical, execute.placed)."""
    return np.ascontiguousarray(args[0]).reshape(ctx.result_shape)

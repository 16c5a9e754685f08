"""MMA tile ops: one warp-level (Mma_SM80_16x8x16) or warpgroup-level
(Wgmma_SM90_64x128x16) matrix multiply-accumulate over register fragments."""
from __future__ import annotations

from typing import ClassVar

from tilefoundry.ir.dim import format_dim, is_static
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Op
from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.shard import Broadcast, Layout, ShardLayout, Split, c_order_strides
from tilefoundry.ir.tensor_type import TensorType
from tilefoundry.ops._common import fmt_shape
from tilefoundry.semantics.cost import (
    Cost,
    all_read_write,
    leaf_dtype,
    leaf_shape,
    register_cost,
)
from tilefoundry.semantics.op_numerics import f32, np, to_dtype
from tilefoundry.semantics.op_registry import (
    register_access_relation,
    register_evaluator,
    register_op,
    register_typeinfer,
)
from tilefoundry.semantics.relations import FREE, DomainBuilder, identity_maps
from tilefoundry.semantics.shard_propagation import (
    ShardPropagationError,
    check_partials,
    common_mesh,
    real_shard,
)
from tilefoundry.semantics.storage_anchor import anchor_storage


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


@frozen_record
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
@frozen_record
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
@frozen_record
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


def _mma_eval(op, args, ctx):
    """D = A @ B over the logical (m, k) and (k, n) tiles (a_layout/b_layout name the
    operands' storage order only, as the typeinfer reads them); the running sum is
    rounded to dtype_acc after each k step (f16/bf16 products are exact in f32)."""
    a, b = (f32(t) for t in args)
    m, n, k = op.tile
    if a.shape != (m, k) or b.shape != (k, n):
        ctx.error(f"operands are {a.shape} and {b.shape} at run time; the tile needs ({m}, {k}) and ({k}, {n})")
    acc = np.zeros((m, n), np.float32)
    for kk in range(k):
        acc = f32(to_dtype(acc + np.multiply.outer(a[:, kk], b[kk, :]), op.dtype_acc))
    return acc


for _cls in (Mma_SM80_16x8x16, Wgmma_SM90_64x128x16):
    register_evaluator(_cls, on_boxes=False)(_mma_eval)

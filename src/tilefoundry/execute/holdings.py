"""Who holds which elements of a placed value (companions §2.2–§2.6), in numpy.

A participant is one position of a Mesh: its coordinate over the mesh axes,
keyed by the flat position the mesh layout maps it to, so that values placed
on two meshes of one topology line up. Under a ShardLayout a participant holds
one box of the value's layout domain: a Split position gives it its block (a
position split by several mesh axes is cut in mesh-axis order, outermost
first), a Broadcast or Partial axis the whole extent. A Partial axis makes the
holders' boxes contributions to one region, completed by the reduction.

The layout domain is the value's row-major index space refactored (the
canonical regroup, §2.6), so a box of it read back per logical axis is the
participant's elements in increasing index order: a block share is a box, a
cyclic share a strided sub-lattice, and either is an ordinary array to an
evaluator. A position that straddles two logical axes (a relinearised layout)
has no such per-axis form: ``logical_local_shape`` is then None.
"""
from __future__ import annotations

from itertools import product
from math import prod

from tilefoundry.errors import EvaluationError
from tilefoundry.ir.shard import Broadcast, ComposedLayout, Dynamic, Partial, flatten_shape
from tilefoundry.semantics.canonical import regroup
from tilefoundry.semantics.op_numerics import is_float, np

__all__ = ["positions_of", "domain_shape", "box_of", "logical_local_shape", "take_box",
           "assemble", "partial_axes"]


def _extent(item) -> int:
    return prod(flatten_shape(item)) if isinstance(item, tuple) else item


def domain_shape(shard) -> tuple:
    """The layout domain's top-level extents (a nested position counts whole)."""
    return tuple(_extent(item) for item in shard.layout.shape)


def positions_of(mesh) -> dict:
    """Flat position -> mesh coordinate, for every participant of ``mesh``."""
    layout = mesh.layout
    found = {}
    for coord in product(*(range(e) for e in mesh.shape)):
        found[_position(layout, coord)] = coord
    return found


def _position(layout, coord: tuple) -> int:
    if isinstance(layout, ComposedLayout):
        return layout(coord)
    strides = layout.strides
    if strides is None:
        from tilefoundry.ir.shard import c_order_strides

        strides = c_order_strides(layout.shape)
    return sum(c * s for c, s in zip(coord, strides))


def partial_axes(shard) -> dict:
    """mesh axis -> reduction of every Partial attr."""
    return {m: attr.reduction for m, attr in enumerate(shard.attrs) if isinstance(attr, Partial)}


def box_of(shard, coord: tuple) -> tuple:
    """The slices of the layout domain the participant at ``coord`` holds."""
    gshape = domain_shape(shard)
    slices = [slice(0, e) for e in gshape]
    for position, mesh_axes in shard.split_positions().items():
        blocks = prod(shard.mesh.shape[m] for m in mesh_axes)
        extent = gshape[position]
        if extent % blocks:
            raise EvaluationError(
                f"layout position {position} (extent {extent}) does not divide among the "
                f"{blocks} participants of mesh axes {mesh_axes}")
        index = 0
        for m in mesh_axes:
            index = index * shard.mesh.shape[m] + coord[m]
        size = extent // blocks
        slices[position] = slice(index * size, (index + 1) * size)
    return tuple(slices)


def _local_domain(shard) -> tuple:
    return tuple(s.stop - s.start for s in box_of(shard, (0,) * shard.mesh.rank))


def logical_local_shape(type_, shard) -> tuple | None:
    """The participant's box per logical axis, or None when a layout position
    straddles two logical axes (no per-axis form)."""
    gshape = domain_shape(shard)
    groups = regroup(tuple(type_.shape), gshape)
    used = [p for group in groups for p in group]
    if len(used) != len(set(used)):
        return None
    local = _local_domain(shard)
    leftover = [p for p in range(len(gshape)) if p not in used]
    if any(local[p] != 1 for p in leftover):
        return None
    return tuple(prod(local[p] for p in group) for group in groups)


def check_static_attrs(shard, where: str) -> None:
    if any(isinstance(a, Dynamic) for a in shard.attrs):
        raise EvaluationError(f"{where}: a Dynamic placement states no owner, so no participant "
                              "can be given its box; the placed run needs static attributes")


def take_box(value, type_, shard, coord: tuple, local_shape: tuple):
    """The participant's elements of the whole ``value``, as ``local_shape``."""
    gshape = domain_shape(shard)
    box = np.asarray(value).reshape(gshape)[box_of(shard, coord)]
    return np.ascontiguousarray(box).reshape(local_shape)


_REDUCE = {"sum": "add", "max": "maximum", "min": "minimum"}


def assemble(pieces: dict, type_, shard, positions: dict, dtype):
    """The whole value from each participant's box (``pieces``: position ->
    array in its local shape). Partial axes are folded by their reduction (in
    f32 for floats, then rounded once by the caller); replicas (participants
    apart only on Broadcast axes) must agree.

    Returns (value, disagreement): disagreement is None, or (position, other
    position, flat element index of the box) of the first replica pair that
    differs."""
    gshape = domain_shape(shard)
    partial = partial_axes(shard)
    split_axes = sorted({m for axes in shard.split_positions().values() for m in axes})
    local = _local_domain(shard)
    work = np.float32 if (partial and is_float(dtype)) else dtype
    whole = np.zeros(gshape, dtype=work)
    boxes: dict = {}  # split coords -> broadcast coords -> [(partial coords, position, piece)]
    for position, coord in positions.items():
        piece = np.asarray(pieces[position]).reshape(local)
        split_key = tuple(coord[m] for m in split_axes)
        replica_key = tuple(c for m, c in enumerate(coord) if m not in partial and m not in split_axes)
        boxes.setdefault(split_key, {}).setdefault(replica_key, []).append(
            (tuple(coord[m] for m in sorted(partial)), position, piece))
    disagreement = None
    for split_key, replicas in boxes.items():
        first_position, first = None, None
        for replica_key, contributions in sorted(replicas.items()):
            position, folded = _fold(sorted(contributions, key=lambda c: c[0]), partial, work)
            if first is None:
                first_position, first = position, folded
                whole[box_of(shard, positions[position])] = folded
            elif disagreement is None:
                differs = _first_difference(first, folded)
                if differs is not None:
                    disagreement = (first_position, position, differs)
    return whole.reshape(tuple(type_.shape)), disagreement


def _fold(contributions: list, partial: dict, work):
    """(first holder's position, the folded box) of one replica's contributions."""
    position = contributions[0][1]
    if not partial:
        return position, contributions[0][2]
    reductions = set(partial.values())
    if len(reductions) != 1:
        raise EvaluationError(f"a value Partial under different reductions {sorted(reductions)} on "
                              "two mesh axes has no one completion")
    ufunc = getattr(np, _REDUCE[reductions.pop()])
    total = contributions[0][2].astype(work)
    for _, _, piece in contributions[1:]:
        total = ufunc(total, piece.astype(work))
    return position, total


def _first_difference(a, b):
    a = np.asarray(a)
    b = np.asarray(b)
    if is_float(a.dtype):
        af, bf = a.astype(np.float64), b.astype(np.float64)
        same = (af == bf) | (np.isnan(af) & np.isnan(bf))
    else:
        same = a == b
    if same.all():
        return None
    return int(np.flatnonzero(~same.reshape(-1))[0])


def is_placeable(shard) -> bool:
    return shard is not None and not any(isinstance(a, Dynamic) for a in shard.attrs)


def replicated(shard) -> bool:
    return all(isinstance(a, Broadcast) for a in shard.attrs)

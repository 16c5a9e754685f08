"""Canonical regroup, canonical factorization, stride materialization and the
per-level projection of a type (companions §2.4–§2.7, spec §3.1).

Everything here is exact integer (or dim) arithmetic on the structural form of a
``ShardLayout``; nothing builds an isl object.
"""
from __future__ import annotations

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dim import dim_floordiv, dim_mul, format_dim, is_static
from tilefoundry.ir.shard import (
    ComposedLayout,
    Layout,
    Mesh,
    Partial,
    ShardLayout,
    Split,
    c_order_strides,
    flatten_shape,
)
from tilefoundry.ir.storage import StorageKind
from tilefoundry.ir.tensor_type import TensorType, TupleType

__all__ = [
    "regroup",
    "position_axes",
    "canonical_shard_layout",
    "c_order",
    "c_order_unit_zero",
    "local_extents",
    "local_box_strides",
    "materialize_reshard_strides",
    "local_type_of",
    "mesh_axis_extent",
]


def _prod(values):
    result = 1
    for value in values:
        result = dim_mul(result, value)
    return result


c_order = c_order_strides  # one definition, in ir.shard


def c_order_unit_zero(shape: tuple) -> tuple:
    """C-order over ``shape`` with every extent-1 position given stride 0."""
    return tuple(0 if extent == 1 else s for extent, s in zip(shape, c_order(shape)))


def mesh_axis_extent(mesh: Mesh, axis: int):
    return mesh.shape[axis]


# ---------------------------------------------------------------- regroup (§2.6)

_REGROUP_CACHE: dict = {}


def regroup(shape: tuple, gshape: tuple) -> tuple:
    """Per logical axis, the tuple of layout positions holding it (companions §2.6).

    Positions are consumed left to right; each logical axis takes positions until
    their product reaches its extent; an extent-1 axis takes exactly one extent-1
    position (none if the next one is larger); a symbolic axis takes one matching
    position, else all remaining; leftovers go to the last logical axis.
    """
    key = (shape, gshape)
    cached = _REGROUP_CACHE.get(key)
    if cached is not None:
        return cached
    groups: list[list[int]] = []
    pos, n = 0, len(gshape)
    for extent in shape:
        group: list[int] = []
        if not is_static(extent):
            # the positions whose product is the extent (a symbolic extent split
            # over a mesh axis is (size, extent exactdiv size): issue 40 item 2),
            # else all remaining
            start, product = pos, 1
            while pos < n and product != extent:
                product = dim_mul(product, gshape[pos])
                pos += 1
            group.extend(range(start, pos if product == extent else n))
            pos = pos if product == extent else n
        elif extent == 1:
            if pos < n and gshape[pos] == 1:
                group.append(pos)
                pos += 1
        else:
            product = 1
            while pos < n and product != extent:
                g = gshape[pos]
                if not is_static(g):
                    raise VerifyError(
                        f"layout domain {_fmt(gshape)} does not regroup onto logical shape "
                        f"{_fmt(shape)}: symbolic position {format_dim(g)} inside static axis {extent}"
                    )
                product *= g
                group.append(pos)
                pos += 1
                if product > extent or (extent % product):
                    # a position straddles an axis boundary: no per-axis factoring,
                    # but the row-major relinearisation still holds when sizes agree
                    result = _relinearised_groups(shape, gshape)
                    _REGROUP_CACHE[key] = result
                    return result
            if product != extent:
                raise VerifyError(
                    f"layout domain {_fmt(gshape)} does not regroup onto logical shape {_fmt(shape)}"
                )
        groups.append(group)
    if pos < n:
        if not groups:
            if any(g != 1 for g in gshape[pos:]):
                raise VerifyError(f"layout domain {_fmt(gshape)} is larger than a rank-0 value")
        else:
            groups[-1].extend(range(pos, n))
    result = tuple(tuple(g) for g in groups)
    _REGROUP_CACHE[key] = result
    return result


def _relinearised_groups(shape: tuple, gshape: tuple) -> tuple:
    """Per logical axis, every layout position whose row-major digit range
    overlaps the axis's digit range (companions §2.6: flatten the logical shape
    row-major, re-read it row-major in the domain).

    Used when a position straddles a logical-axis boundary, so a straddling
    position is listed under each axis it spans. Needs static extents with equal
    products; anything else has no relinearisation and is refused.
    """
    if not all(is_static(e) for e in (*shape, *gshape)):
        raise VerifyError(
            f"layout domain {_fmt(gshape)} does not regroup onto logical shape {_fmt(shape)}: a "
            "position straddles an axis boundary and the extents are symbolic"
        )
    if _prod(gshape) != _prod(shape):
        raise VerifyError(
            f"layout domain {_fmt(gshape)} does not regroup onto logical shape {_fmt(shape)} "
            f"(canonical regroup, row-major): it holds {_prod(gshape)} elements, the shape {_prod(shape)}"
        )
    spans = _digit_spans(gshape)
    axes = _digit_spans(shape)
    return tuple(tuple(p for p, span in enumerate(spans) if _touches(span, axis, axes))
                 for axis in axes)


def _touches(span: tuple, axis: tuple, axes: tuple) -> bool:
    """Whether a position's digits reach a logical axis's digits. A position is
    clear of an axis only when divisibility separates them (its stride a
    multiple of the axis's upper bound, or the axis stride a multiple of its
    upper bound); an extent-1 position goes with the axis holding its stride,
    and an extent-1 axis has no digits to reach."""
    (lo, hi), (low, high) = span, axis
    if low == high:
        return False
    if lo == hi:
        owner = next((a for a in axes if a[0] <= lo < a[1]), axes[-1])
        return owner == axis
    return not (lo % high == 0 or low % hi == 0)


def straddles(groups: tuple) -> bool:
    """Whether some layout position is listed under two logical axes (a
    relinearised regroup, companions §2.6)."""
    listed = [p for group in groups for p in group]
    return len(listed) != len(set(listed))


def relinearised_local_extents(shape: tuple, gshape: tuple, local: tuple) -> tuple:
    """Per logical axis, how many of its coordinates one unit holds when the
    unit holds the first ``local[p]`` digits of each layout position ``p`` of a
    relinearised regroup (static extents, equal products).

    A straddling position's digit is a mixed-radix number over the parts of the
    axes it spans; a block of its first ``l`` values fills the lower part first
    (``min(f, l)`` values there) and reaches ``ceil(l / f)`` values of the part
    above. Counting the whole local extent in each spanned axis would count the
    unit's elements twice."""
    spans, axes = _digit_spans(gshape), _digit_spans(shape)
    extents = []
    for low, high in axes:
        held = 1
        for (lo, hi), block in zip(spans, local):
            start, stop = max(lo, low), min(hi, high)
            if start >= stop:
                continue  # this position's digits lie outside the axis
            part = stop // start
            below = start // lo  # values of the position's digit beneath this part
            held *= min(part, max(1, -(-int(block) // below)))
        extents.append(held)
    return tuple(extents)


def relinearised_held_constraints(shape: tuple, gshape: tuple, local: tuple) -> tuple:
    """isl constraints over ``o0..`` for the same holding as
    ``relinearised_local_extents``: each split position's digit of the
    row-major flattened index stays below its local extent."""
    axes = _digit_spans(shape)
    flat = " + ".join(f"{lo}*o{a}" if lo != 1 else f"o{a}" for a, (lo, _) in enumerate(axes)) or "0"
    constraints = []
    for (lo, hi), extent, block in zip(_digit_spans(gshape), gshape, local):
        if block >= extent:
            continue
        digit = f"floor(({flat})/{lo})" if lo != 1 else f"({flat})"
        constraints.append(f"{digit} mod {int(extent)} < {int(block)}")
    return tuple(constraints)


def _digit_spans(extents: tuple) -> tuple:
    """Row-major [stride, stride * extent) of each position of ``extents``."""
    spans, stride = [], 1
    for extent in reversed(extents):
        spans.append((stride, stride * extent))
        stride *= extent
    return tuple(reversed(spans))


def position_axes(shape: tuple, gshape: tuple) -> tuple:
    """Layout position -> logical axis (or None for leftover positions of a scalar)."""
    owner = [None] * len(gshape)
    for axis, group in enumerate(regroup(shape, gshape)):
        for p in group:
            owner[p] = axis
    return tuple(owner)


def _fmt(shape) -> str:
    return "(" + ", ".join(format_dim(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


# ---------------------------------------------------------------- factorization (§2.5)


def canonical_shard_layout(shape: tuple, mesh: Mesh, attrs: tuple, *, unit_residual: bool = False,
                           strides: bool = True) -> ShardLayout:
    """Factor a per-mesh-axis attr tuple naming LOGICAL axes into a canonical
    ShardLayout: unsplit axes keep their extent; a split axis gives one position
    per splitting mesh axis (mesh-axis order) then its residual (kept when it is
    not 1, or always with ``unit_residual``); splits renumbered to positions;
    strides C-order when static."""
    attrs = tuple(attrs)
    if len(attrs) != mesh.rank:
        raise VerifyError(f"canonical_shard_layout: {len(attrs)} attrs for a rank-{mesh.rank} mesh")
    splitting: dict[int, list[int]] = {}
    for m, attr in enumerate(attrs):
        if isinstance(attr, Split):
            if not 0 <= attr.axis < len(shape):
                raise VerifyError(
                    f"canonical_shard_layout: Split({attr.axis}) on mesh axis {m} names no axis of "
                    f"the rank-{len(shape)} shape"
                )
            splitting.setdefault(attr.axis, []).append(m)
    gshape: list = []
    new_attrs = list(attrs)
    for axis, extent in enumerate(shape):
        axes = splitting.get(axis)
        if not axes:
            gshape.append(extent)
            continue
        if not is_static(extent):
            if len(axes) != 1:
                raise VerifyError(
                    f"canonical_shard_layout: symbolic axis {format_dim(extent)} split over several mesh axes"
                )
            e = mesh.shape[axes[0]]
            if not is_static(e) and e != extent:
                raise VerifyError("canonical_shard_layout: dynamic mesh extent; bind symbolic dimensions")
            new_attrs[axes[0]] = Split(len(gshape))
            gshape.append(extent)
            continue
        remaining = extent
        for m in axes:
            e = mesh.shape[m]
            if not is_static(e):
                raise VerifyError("canonical_shard_layout: dynamic mesh extent; bind symbolic dimensions")
            if remaining % e:
                raise VerifyError(
                    f"canonical_shard_layout: extent {extent} of axis {axis} is not divisible by the "
                    f"mesh extent {e} of mesh axis {m} ('{mesh.axis_name(m)}')"
                )
            new_attrs[m] = Split(len(gshape))
            gshape.append(e)
            remaining //= e
        if remaining != 1 or unit_residual:
            gshape.append(remaining)
    gshape_t = tuple(gshape)
    st = c_order(gshape_t) if strides and all(is_static(g) for g in gshape_t) else None
    return ShardLayout(Layout(gshape_t, st), tuple(new_attrs), mesh)


# ---------------------------------------------------------------- strides (§2.4)


def local_extents(layout: ShardLayout) -> tuple:
    """Extents of the per-unit box: each split position divided by its mesh extents."""
    shape = list(layout.layout.shape)
    for m, attr in enumerate(layout.attrs):
        if isinstance(attr, Split):
            e = layout.mesh.shape[m]
            k = attr.axis
            if shape[k] == e:
                shape[k] = 1
            else:
                shape[k] = dim_floordiv(shape[k], e)
    return tuple(shape)


def local_box_strides(layout: ShardLayout) -> tuple:
    """Per-instance storage: C-order in the local box, local-extent-1 positions 0."""
    local = local_extents(layout)
    return tuple(0 if extent == 1 else s for extent, s in zip(local, c_order(local)))


def _has_local_form(shard: ShardLayout) -> bool:
    strides = shard.layout.strides
    if strides is None:
        return False
    return any(strides[attr.axis] == 0 for attr in shard.attrs if isinstance(attr, Split))


_NEAR = {StorageKind.HOST: 0, StorageKind.GMEM: 1, StorageKind.UMAT: 1, StorageKind.SMEM: 2,
         StorageKind.RMEM: 3, StorageKind.TMEM: 3}


def materialize_reshard_strides(source: TensorType, layout: ShardLayout, storage: StorageKind) -> ShardLayout:
    """Fill unset strides by storage direction (authoring §6.4 reshard, companions §2.4):
    toward a nearer level per-instance storage (local-box C-order, split strides 0);
    outward shared C-order over G; same level follows the source's form."""
    if not isinstance(layout, ShardLayout) or layout.layout.strides is not None:
        return layout
    src, dst = _NEAR[source.storage], _NEAR[storage]
    if dst > src:
        local = True
    elif dst < src:
        local = False
    else:
        shard = source.shard
        if shard is not None and shard.layout.strides is not None:
            local = _has_local_form(shard)
        else:
            local = storage in (StorageKind.SMEM, StorageKind.RMEM, StorageKind.TMEM)
    strides = local_box_strides(layout) if local else c_order(layout.layout.shape)
    return layout.with_strides(strides)


# ---------------------------------------------------------------- local type (§2.7)


def local_type_of(type_, level: str, topologies: tuple):
    """What one unit of ``level`` holds (companions §2.7)."""
    if isinstance(type_, TupleType):
        return TupleType(tuple(local_type_of(f, level, topologies) for f in type_.fields))
    if not isinstance(type_, TensorType):
        return type_
    shard = type_.shard
    if shard is None:
        return type_
    names = [t.name for t in topologies]
    if level not in names:
        raise VerifyError(f"local_type_of: no topology named '{level}'; effective levels are {names}")
    rank_of = {name: i for i, name in enumerate(names)}
    selected = rank_of[level]
    inner = shard.layout
    if isinstance(inner, ShardLayout):
        inner_shape = local_type_of(TensorType(inner.shape, type_.dtype, inner, type_.storage),
                                    level, topologies).shape
        shape = list(inner_shape)
    else:
        shape = list(flatten_shape(inner.shape))
    levels = shard.mesh.axis_levels()
    for m, attr in enumerate(shard.attrs):
        if not isinstance(attr, Split):
            continue
        lvl = levels[m]
        if lvl not in rank_of:
            raise VerifyError(f"local_type_of: mesh axis {m} belongs to undeclared topology '{lvl}'")
        if rank_of[lvl] > selected:
            continue
        e = shard.mesh.shape[m]
        k = attr.axis
        if shape[k] == e:
            shape[k] = 1
        elif not is_static(shape[k]) or not is_static(e) or shape[k] % e:
            raise VerifyError(
                f"local_type_of: position {k} extent {format_dim(shape[k])} is not divisible by mesh "
                f"axis {m} extent {format_dim(e)}"
            )
        else:
            shape[k] //= e
    for extent in shape:
        if not is_static(extent) or extent < 0:
            raise VerifyError(
                f"local_type_of: extent {format_dim(extent)} is not concrete; bind it with --dim"
            )
    return TensorType(tuple(shape), type_.dtype, type_.layout, type_.storage)



def is_real_sharding(layout) -> bool:
    """A ShardLayout that is not fully Broadcast (spec §3.2)."""
    shard = layout.outer if isinstance(layout, ComposedLayout) else layout
    return isinstance(shard, ShardLayout) and not shard.is_replicated


def partial_axes(shard) -> dict:
    """mesh axis -> reduction name of every Partial attr."""
    if not isinstance(shard, ShardLayout):
        return {}
    return {m: a.reduction for m, a in enumerate(shard.attrs) if isinstance(a, Partial)}

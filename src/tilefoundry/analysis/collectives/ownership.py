"""Ownership tables from two ShardLayouts (seed §7.1, companions §2.2–§2.6).

A Reshard between two placements at one topology level is a relayout: each
participant of the level (the level's position image, companions §2.2) holds
one region of the tensor before and one after. This module reads those
regions off the layouts and returns them in the table form `relayout classify`
reads (``tables.parse_tables``), so the existing classifier decides the op.

- Axes are the LOGICAL axes of the tensor (``d0``, ``d1``, ...). A layout
  position belongs to the logical axis the canonical regroup (§2.6) gives it; a
  Split cuts its axis only if every position before it in that axis has extent
  1 or is split too (else the participant's share is strided: no box).
- Mesh axes of the selected level cut; finer levels never do (§2.7); coarser
  levels must cut both sides alike and then name independent copies of one
  exchange (``instances``), the tables being those of one coarser unit.
- ``Broadcast`` on a level axis: every coordinate holds the same region
  (replication). ``Partial`` on a level axis: the holders hold different
  contributions to one region, so they are told apart by one more axis,
  ``partial``, cut once per contribution; a destination without it has
  completed the fold (seed §4: reduce / reduce_scatter).
- Participants of the level that a mesh slice leaves out are idle.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from math import prod

from tilefoundry import limits
from tilefoundry.errors import VerifyError
from tilefoundry.ir.dim import is_static
from tilefoundry.ir.shard import (ComposedLayout, Dynamic, Partial, ShardLayout,
                                  Split, c_order_strides, flatten_shape)

PARTIAL_AXIS = "partial"

__all__ = ["PARTIAL_AXIS", "UnformableTables", "Placed", "LayoutPair", "placed_side",
           "layout_pair"]


class UnformableTables(VerifyError):
    """The two layouts name no ownership table (dynamic, strided, unprojectable)."""


@dataclass(frozen=True)
class Placed:
    """One side: who holds which slice of each axis at the level."""

    table: dict  # core (str) -> {axis: slice index}
    cuts: dict  # axis -> slice count (axes absent: uncut)
    reduction: str | None  # the Partial's reduction on the level's axes, else None
    contributions: int  # holders of distinct partial contributions per region (1: none)
    coarse: tuple  # ((logical axis, slice count), ...) cut by coarser levels
    instances: int  # coarser units: independent copies of the exchange


@dataclass(frozen=True)
class LayoutPair:
    """The table document (``parse_tables`` input) and what it was read from."""

    data: dict
    source: Placed
    destination: Placed
    extents: tuple  # logical extents of one instance, then the partial axis if any


def _level_axes(mesh, level: str, levels: tuple) -> tuple[list, list]:
    """(mesh axes of ``level``, mesh axes of coarser levels) by position."""
    order = list(levels)
    rank = order.index(level)
    own, coarser = [], []
    for axis, name in enumerate(mesh.axis_levels()):
        if name not in order:
            raise UnformableTables(f"mesh axis {mesh.axis_name(axis)} belongs to level "
                                   f"'{name}', which the module does not declare")
        if name == level:
            own.append(axis)
        elif order.index(name) < rank:
            coarser.append(axis)
    return own, coarser


def _positions(mesh, level: str, axes: list, size: int) -> dict:
    """Mesh coordinate (over ``axes``) -> participant id at ``level`` (companions
    §2.2: the level's own position layout, strides divided by the finer levels).
    Counted before they are listed: more coordinates than the level's ``size``
    positions name one twice (the tables would be built for nothing)."""
    names = [t.name for t in mesh.topologies]
    finer = prod(t.size for t in mesh.topologies[names.index(level) + 1:])
    layout, offset = mesh.layout, 0
    if isinstance(layout, ComposedLayout):
        if layout.inner is not None:
            raise UnformableTables("the mesh slice has a non-identity inner layout, so its "
                                   "participants are not projectable")
        offset, layout = layout.offset, layout.outer
    strides = layout.strides or c_order_strides(layout.shape)
    for value in (offset, *(strides[a] for a in axes)):
        if not is_static(value) or value % finer:
            raise UnformableTables(f"the mesh offset or stride {value} is not a multiple of "
                                   f"the {finer} finer positions, so its {level} participants "
                                   "are not projectable")
    extents = [layout.shape[a] for a in axes]
    if not all(is_static(e) for e in extents):
        raise UnformableTables("the mesh has a dynamic extent, so its participants are not "
                               "static")
    if prod(extents) > size:
        raise UnformableTables(f"the mesh places {prod(extents):,} positions on the {size:,} of "
                               f"level '{level}', so it names one participant twice")
    return {coord: (offset + sum(c * strides[a] for c, a in zip(coord, axes))) // finer
            for coord in product(*(range(e) for e in extents))}


def _axis_cuts(shard: ShardLayout, shape: tuple, mesh_axes: set, cutting: set) -> dict:
    """logical axis -> ordered [(mesh axis, extent)] cutting it, for ``mesh_axes``;
    refuses a cut that leaves a strided share. ``cutting`` (a superset: the level
    and the coarser ones) are the splits that divide among participants; a
    position a finer level splits is held whole, like an unsplit one."""
    from tilefoundry.semantics.canonical import regroup

    gshape = tuple(flatten_shape(shard.layout.shape))
    if not all(is_static(e) for e in (*shape, *gshape)):
        raise UnformableTables(f"dynamic extent in shape {shape} / layout {gshape}: no "
                               "static table; bind it with --dim")
    groups = regroup(shape, gshape)
    owners = [a for a, group in enumerate(groups) for _ in group]
    if len(owners) != len(set(p for g in groups for p in g)):
        raise UnformableTables(f"a position of layout {gshape} straddles two logical axes of "
                               f"{shape}, so a participant's share is no box")
    splits: dict[int, list[int]] = {}
    for mesh_axis, attr in enumerate(shard.attrs):
        if isinstance(attr, Split) and mesh_axis in cutting:
            splits.setdefault(attr.axis, []).append(mesh_axis)
    cuts: dict[int, list] = {}
    for axis, group in enumerate(groups):
        held_inside = False  # a position before this one is held in part
        for p in group:
            if p in splits:
                if held_inside:
                    raise UnformableTables(
                        f"Split on layout position {p} of {gshape} cuts logical axis {axis} "
                        "inside an unsplit position, so each participant holds a strided "
                        "share, not a box; split the axis's leading position instead")
                extents = [shard.mesh.shape[m] for m in splits[p]]
                if gshape[p] % prod(extents):
                    raise UnformableTables(f"layout position {p} (extent {gshape[p]}) is not "
                                           f"divisible by its mesh extents {extents}")
                mine = [(m, e) for m, e in zip(splits[p], extents) if m in mesh_axes]
                if mine:
                    cuts.setdefault(axis, []).extend(mine)
                held_inside = gshape[p] != prod(extents)
            elif gshape[p] > 1:
                held_inside = True
    return cuts


def _outermost(shard: ShardLayout, cut: list, last: bool = False) -> int:
    """The layout position of the first (or last) mesh axis of ``cut``."""
    positions = [shard.attrs[m].axis for m, _ in cut]
    return max(positions) if last else min(positions)


def placed_side(ttype, level: str, levels: tuple, size: int) -> Placed | None:
    """The side's table at ``level``; None when it is not placed on that level."""
    shard = ttype.shard
    if not isinstance(shard, ShardLayout):
        return None
    mesh = shard.mesh
    if level not in [t.name for t in mesh.topologies]:
        return None
    own, coarser = _level_axes(mesh, level, levels)
    for axis in own + coarser:
        if isinstance(shard.attrs[axis], Dynamic):
            raise UnformableTables(f"mesh axis {mesh.axis_name(axis)} is Dynamic(): the "
                                   "distribution is undecided; decide the placement (Split, Broadcast or "
                                   "Partial) before classifying the exchange")
    for axis in coarser:
        if isinstance(shard.attrs[axis], Partial):
            raise UnformableTables(f"Partial on coarser mesh axis {mesh.axis_name(axis)}: "
                                   "the fold crosses a coarser level; analyse that level")
    shape = tuple(ttype.shape)
    cutting = set(own) | set(coarser)
    fine = _axis_cuts(shard, shape, set(own), cutting)
    coarse_cuts = _axis_cuts(shard, shape, set(coarser), cutting)
    for axis, cut in coarse_cuts.items():
        if axis in fine and _outermost(shard, fine[axis]) < _outermost(shard, cut, last=True):
            raise UnformableTables(f"logical axis {axis} is cut by level '{level}' outside "
                                   "its coarser cut, so one coarser unit's share is no box")
    partial = [a for a in own if isinstance(shard.attrs[a], Partial)]
    reductions = {shard.attrs[a].reduction for a in partial}
    if len(reductions) > 1:
        raise UnformableTables(f"Partial with different reductions {sorted(reductions)} on "
                               "one value")
    ids = _positions(mesh, level, own, size)
    for core in ids.values():
        if not 0 <= core < size:
            raise UnformableTables(f"participant {core} lies outside the {size} positions of "
                                   f"level '{level}'")
    if len(set(ids.values())) != len(ids):
        raise UnformableTables("the mesh names one participant twice")
    table = {}
    for coord, core in ids.items():
        digit = dict(zip(own, coord))
        entry = {}
        for axis, cut in fine.items():
            index = 0
            for mesh_axis, extent in cut:
                index = index * extent + digit[mesh_axis]
            entry[f"d{axis}"] = index
        if partial:
            index = 0
            for mesh_axis in partial:
                index = index * mesh.shape[mesh_axis] + digit[mesh_axis]
            entry[PARTIAL_AXIS] = index
        table[str(core)] = entry
    cuts = {f"d{a}": prod(e for _, e in cut) for a, cut in fine.items()}
    if partial:
        cuts[PARTIAL_AXIS] = prod(mesh.shape[a] for a in partial)
    coarse = tuple(sorted((a, prod(e for _, e in cut)) for a, cut in coarse_cuts.items()))
    instances = prod(mesh.shape[a] for a in coarser) if coarser else 1
    return Placed(table, cuts, reductions.pop() if reductions else None,
                  cuts.get(PARTIAL_AXIS, 1), coarse, instances)


def _on_level(ttype, level: str) -> bool:
    shard = ttype.shard
    return isinstance(shard, ShardLayout) and level in [t.name for t in shard.mesh.topologies]


def layout_pair(source_type, destination_type, level: str, levels: tuple,
                size: int) -> LayoutPair | None:
    """Both sides' tables as one ``parse_tables`` document; None when a side is
    not placed at ``level`` (then the movement is a load or store, not an
    exchange between participants)."""
    if not (_on_level(source_type, level) and _on_level(destination_type, level)):
        return None
    # a table has a row per participant: its stated limit comes before any row
    limits.check("CORES", size, f"'cores' is {size:,} (the '{level}' positions of its tables)")
    src = placed_side(source_type, level, levels, size)
    dst = placed_side(destination_type, level, levels, size)
    if src is None or dst is None:
        return None
    if src.coarse != dst.coarse or src.instances != dst.instances:
        raise UnformableTables(f"the reshard also changes the distribution over a level "
                               f"coarser than '{level}'; analyse it with that --topology")
    if dst.contributions > 1 and dst.contributions != src.contributions:
        raise UnformableTables("the destination introduces a Partial the source does not "
                               "hold; that is no delivery")
    coarse = dict(src.coarse)
    extents = [e // coarse.get(a, 1) for a, e in enumerate(source_type.shape)]
    tensor = {f"d{a}": e for a, e in enumerate(extents) if e > 0}
    if src.contributions > 1:
        tensor[PARTIAL_AXIS] = src.contributions
    if len(tensor) != len(extents) + (src.contributions > 1):
        raise UnformableTables(f"the tensor has an empty axis {tuple(source_type.shape)}")
    data = {"cores": size, "tensor": tensor, "source": src.table,
            "destination": dst.table}
    return LayoutPair(data, src, dst, tuple(tensor.values()))

"""Layouts, topologies, meshes and shard layouts (companions §2).

All are frozen values compared structurally. A ``Mesh`` is a compile-time
device-domain record, never an IR value.
"""
from __future__ import annotations

from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.immutable import ImmutableValue

from math import prod
from typing import Union

from tilefoundry.errors import VerifyError, did_you_mean
from tilefoundry.ir.declared import remember
from tilefoundry.ir.dim import dim_mul, is_dim, is_static


def c_order_strides(shape: tuple) -> tuple:
    """Row-major (C-order) strides of a flat shape (symbolic extents allowed)."""
    strides = []
    running = 1
    for extent in reversed(shape):
        strides.append(running)
        running = dim_mul(running, extent)
    return tuple(reversed(strides))


def flatten_shape(shape):
    """The extents of a nested (pycute-style) shape, left to right."""
    for item in shape:
        if isinstance(item, tuple):
            yield from flatten_shape(item)
        else:
            yield item


def _as_tuple(value) -> tuple:
    if isinstance(value, tuple):
        return value
    if isinstance(value, list):
        return tuple(value)
    return (value,)


# ---------------------------------------------------------------- layouts


@frozen_record
class Layout(ImmutableValue):
    """pycute-style shape and strides; ``strides=None`` = not yet materialized."""

    shape: tuple
    strides: tuple | None = None

    def __post_init__(self):
        object.__setattr__(self, "shape", _as_tuple(self.shape))
        if self.strides is not None:
            strides = _as_tuple(self.strides)
            if len(strides) != len(self.shape):
                raise VerifyError(
                    f"Layout: {len(strides)} strides for a rank-{len(self.shape)} "
                    f"shape {self.shape}"
                )
            object.__setattr__(self, "strides", strides)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self):
        return prod(self.shape) if self.shape else 1

    def __call__(self, coord: tuple) -> int:
        strides = self.strides or c_order_strides(self.shape)
        return sum(c * s for c, s in zip(coord, strides))


@frozen_record
class ComposedLayout(ImmutableValue):
    """index = inner(offset + outer(c)); None components are identity."""

    inner: Layout | None
    offset: int
    outer: Layout | None

    @property
    def domain(self) -> Layout:
        return self.outer if self.outer is not None else self.inner

    @property
    def shape(self) -> tuple:
        return self.domain.shape

    @property
    def rank(self) -> int:
        return self.domain.rank

    @property
    def size(self):
        return self.domain.size

    def __call__(self, coord: tuple) -> int:
        index = self.offset + (self.outer(coord) if self.outer else sum(coord))
        return self.inner((index,)) if self.inner else index


LayoutLike = Union[Layout, ComposedLayout]


# ---------------------------------------------------------------- topology and mesh


@frozen_record
class Topology(ImmutableValue):
    """One parallel level, coarse to fine in a module's hierarchy."""

    name: str
    size: object

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise VerifyError(f"Topology: name must be a non-empty str, got {self.name!r}")
        if not is_dim(self.size):  # 8.0, True, "8": no level has a fractional or spelled size
            raise VerifyError(
                f"Topology {self.name!r}: size must be an int or a DimVar expression, got "
                f"{self.size!r} ({type(self.size).__name__}); write e.g. Topology({self.name!r}, 8)")
        remember(("Topology", self.name, self.size))  # where a target's refusal of it points


@frozen_record
class Mesh(ImmutableValue):
    """A device-domain record: levels, a position layout, optional axis names."""

    topologies: tuple
    layout: LayoutLike
    names: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "topologies", _as_tuple(self.topologies))
        layout = self.layout
        if isinstance(layout, (tuple, list, int)):
            shape = _as_tuple(layout)
            layout = Layout(shape, c_order_strides(shape))
            object.__setattr__(self, "layout", layout)
        object.__setattr__(self, "names", tuple(self.names or ()))
        for extent in flatten_shape(self.layout.shape):
            if not is_dim(extent) or (is_static(extent) and extent <= 0):
                # a zero or negative axis holds no unit: every position, slice
                # and split over it would divide by or count nothing
                raise VerifyError(f"Mesh: axis extent {extent!r} must be a positive int "
                                  "(or a DimVar expression)")
        if self.names and len(self.names) != self.layout.rank:
            raise VerifyError(
                f"Mesh: {len(self.names)} names for a rank-{self.layout.rank} layout"
            )

    # -- geometry -------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self.layout.shape

    @property
    def rank(self) -> int:
        return self.layout.rank

    @property
    def is_sliced(self) -> bool:
        return isinstance(self.layout, ComposedLayout)

    def axis_index(self, name: str) -> int:
        if name in self.names:
            return self.names.index(name)
        if not self.names and name in ("x", "y", "z")[: self.rank]:
            return ("x", "y", "z").index(name)
        raise VerifyError(
            f"Mesh has no axis named {name!r}; its axes are {list(self.names) or self.rank}"
            f"{did_you_mean(name, self.names or ('x', 'y', 'z')[: self.rank])}"
        )

    def axis_name(self, index: int) -> str:
        if self.names:
            return self.names[index]
        return ("x", "y", "z")[index] if index < 3 else f"a{index}"

    def axis_levels(self) -> tuple[str, ...]:
        """The topology level each layout axis belongs to (companions §2.2)."""
        return tuple(level for level, _ in self._level_segments() for _ in range(_))

    def _level_segments(self) -> list[tuple[str, int]]:
        """(level name, number of axes) assigned left to right by product."""
        extents = self.shape
        if len(self.topologies) == 1:
            return [(self.topologies[0].name, len(extents))]
        segments = []
        cursor = 0
        for topology in self.topologies:
            size = topology.size
            if not is_static(size):
                raise VerifyError(
                    f"Mesh: topology {topology.name!r} has symbolic size {size!r}; "
                    "a multi-level mesh needs concrete sizes"
                )
            start = cursor
            product = 1
            while cursor < len(extents) and product < size:
                extent = extents[cursor]
                if not is_static(extent):
                    raise VerifyError(f"Mesh: axis extent {extent!r} is symbolic")
                product *= extent
                cursor += 1
            if product != size:
                raise VerifyError(
                    f"Mesh axis {cursor - 1} (extent {extents[cursor - 1] if cursor else '?'}) "
                    f"straddles topology levels: the axes assigned to {topology.name!r} "
                    f"multiply to {product}, not its size {size}; split the mesh "
                    "layout so each level's axes multiply exactly to its size"
                )
            segments.append((topology.name, cursor - start))
        if cursor != len(extents):
            raise VerifyError(
                f"Mesh: axes {list(range(cursor, len(extents)))} are left over after "
                f"assigning axes to levels {[t.name for t in self.topologies]}"
            )
        return segments

    def level_of_axis(self, index: int) -> str:
        return self.axis_levels()[index]

    def __getattr__(self, name: str) -> "MeshAxisRef":
        # `m.a` outside a body: annotations written without postponed evaluation
        # run `N @ m.a` at import; the parser reads the real meaning from the AST.
        if name.startswith("_"):
            raise AttributeError(name)
        names = object.__getattribute__(self, "names")
        if name in names or (not names and name in ("x", "y", "z")):
            return MeshAxisRef(self, self.axis_index(name))
        raise AttributeError(f"Mesh has no axis or attribute {name!r}")

    def __getitem__(self, key) -> "Mesh":
        return slice_mesh(self, key)


@frozen_record
class MeshAxisRef(ImmutableValue):
    """One named axis of a mesh, as Python evaluates ``m.a``; ``N @ m.a`` yields
    a placeholder the annotation machinery tolerates (the AST is authoritative)."""

    mesh: Mesh
    index: int

    def __rmatmul__(self, extent):
        return ("split-sugar", extent, self)


def slice_mesh(mesh: Mesh, key) -> Mesh:
    """``m[...]``: ints or unit-step slices, missing axes full (companions §2.2)."""
    if mesh.is_sliced:
        raise VerifyError("Mesh: a sliced mesh cannot be sliced again")
    if len(mesh.topologies) != 1:
        raise VerifyError("Mesh: a multi-level mesh may not be sliced")
    items = key if isinstance(key, tuple) else (key,)
    if len(items) > mesh.rank:
        raise VerifyError(f"Mesh: {len(items)} indices for a rank-{mesh.rank} mesh")
    items = items + (slice(None),) * (mesh.rank - len(items))
    strides = mesh.layout.strides or c_order_strides(mesh.shape)
    offset, sub_shape, sub_strides = 0, [], []
    for axis, (extent, stride, item) in enumerate(zip(mesh.shape, strides, items)):
        if not is_static(extent):
            raise VerifyError("Mesh: a symbolic mesh axis cannot be sliced")
        if isinstance(item, int) and not isinstance(item, bool):
            # a mesh index names a participant: one the axis has (negatives count
            # from the end, as in Python), never a position past it
            if not -extent <= item < extent:
                raise VerifyError(
                    f"Mesh: index {item} is outside axis {axis} of extent {extent}; a mesh "
                    f"index names one of its positions, in [-{extent}, {extent})")
            start = item % extent
            stop = start + 1
        elif isinstance(item, slice):
            if item.step not in (None, 1):
                raise VerifyError("Mesh: slices must have step 1")
            for bound in (item.start, item.stop):
                if isinstance(bound, int) and not -extent <= bound <= extent:
                    raise VerifyError(
                        f"Mesh: slice bound {bound} is outside axis {axis} of extent {extent}; a "
                        f"mesh slice names positions the axis has (it is not clipped): use bounds "
                        f"in [-{extent}, {extent}]")
            start, stop, _ = item.indices(extent)
        else:
            raise VerifyError(f"Mesh: cannot slice with {item!r}")
        if stop <= start:
            raise VerifyError(f"Mesh: empty slice {start}:{stop}")
        offset += start * stride
        sub_shape.append(stop - start)
        sub_strides.append(stride)
    layout = ComposedLayout(None, offset, Layout(tuple(sub_shape), tuple(sub_strides)))
    return Mesh(mesh.topologies, layout, mesh.names)


# ---------------------------------------------------------------- shard attributes


class ShardAttr(ImmutableValue):
    """One per mesh layout axis, by position."""


@frozen_record
class Split(ShardAttr):
    """A mesh axis that divides layout axis ``axis`` among its participants."""

    axis: int

    def __repr__(self) -> str:
        return f"S({self.axis})"


@frozen_record
class Broadcast(ShardAttr):
    """A mesh axis whose participants each hold the whole value (replicated)."""

    def __repr__(self) -> str:
        return "B()"


_REDUCTIONS = ("sum", "max", "min")


@frozen_record
class Partial(ShardAttr):
    """A mesh axis whose participants each hold a partial value still to be combined by
    ``reduction``."""

    reduction: str = "sum"

    def __post_init__(self):
        if self.reduction not in _REDUCTIONS:
            raise VerifyError(
                f"Partial: unknown reduction {self.reduction!r}; valid: {list(_REDUCTIONS)}"
            )

    def __repr__(self) -> str:
        return f'P("{self.reduction}")'


@frozen_record
class Dynamic(ShardAttr):
    """A mesh axis whose placement is decided at run time, so no static ownership is stated."""

    def __repr__(self) -> str:
        return "Dynamic()"


def S(axis: int) -> Split:
    return Split(axis)


def B() -> Broadcast:
    return Broadcast()


def P(reduction: str = "sum") -> Partial:
    return Partial(reduction)


# ---------------------------------------------------------------- shard layout


@frozen_record
class ShardLayout(ImmutableValue):
    """A value's distribution: its layout domain, one attr per mesh axis, the mesh."""

    layout: LayoutLike
    attrs: tuple
    mesh: Mesh

    def __post_init__(self):
        object.__setattr__(self, "attrs", _as_tuple(self.attrs))
        if not isinstance(self.mesh, Mesh):
            raise VerifyError(f"ShardLayout: mesh must be a Mesh, got {type(self.mesh).__name__}")
        if len(self.attrs) != self.mesh.rank:
            raise VerifyError(
                f"ShardLayout: {len(self.attrs)} attrs for a rank-{self.mesh.rank} mesh "
                "(one attr per mesh axis)"
            )
        seen_axes = {}
        for mesh_axis, attr in enumerate(self.attrs):
            if not isinstance(attr, ShardAttr):
                raise VerifyError(f"ShardLayout: attr {attr!r} is not a shard attribute")
            if isinstance(attr, Split):
                if not 0 <= attr.axis < self.layout.rank:
                    raise VerifyError(
                        f"ShardLayout: Split({attr.axis}) on mesh axis {mesh_axis} names "
                        f"no position of the rank-{self.layout.rank} layout"
                    )
                seen_axes.setdefault(attr.axis, []).append(mesh_axis)

    @property
    def shape(self) -> tuple:
        return self.layout.shape

    @property
    def is_replicated(self) -> bool:
        """Fully Broadcast: carries no real sharding (spec §3.2)."""
        return all(isinstance(a, Broadcast) for a in self.attrs)

    def split_positions(self) -> dict[int, list[int]]:
        """layout position -> mesh axes splitting it, in mesh-axis order."""
        positions: dict[int, list[int]] = {}
        for mesh_axis, attr in enumerate(self.attrs):
            if isinstance(attr, Split):
                positions.setdefault(attr.axis, []).append(mesh_axis)
        return positions

    def with_strides(self, strides) -> "ShardLayout":
        return ShardLayout(Layout(self.layout.shape, strides), self.attrs, self.mesh)


def partial_reductions_by_axis(layout: object) -> tuple:
    """Per mesh axis: the Partial's reduction name, else None (spec §3.2)."""
    if not isinstance(layout, ShardLayout):
        return ()
    return tuple(a.reduction if isinstance(a, Partial) else None for a in layout.attrs)

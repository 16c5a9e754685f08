"""Where an occurrence runs (analysis §1.2.4, shard §5, companions §2.2): the
exact image of its execution Mesh's positions at the selected level, and the
rule that a result is laid out only where the work that made it ran."""
from __future__ import annotations

from itertools import product

from tilefoundry.errors import AnalysisError
from tilefoundry.ir.metadata import ExecutionDomainMetadata, locator

__all__ = ["count", "level_image", "participants", "placement"]


def count(positions) -> int:
    """How many positions ``positions`` holds: exact for a closed-form run of
    any size (``len()`` of a range stops at sys.maxsize, 2**63 - 1: a mesh
    extent of 2**63 is a count, not an OverflowError)."""
    if isinstance(positions, range):
        span = positions.stop - positions.start if positions.step > 0 else positions.start - positions.stop
        step = abs(positions.step)
        return max(0, (span + step - 1) // step)
    return len(positions)


def _level_layout(mesh, level: str):
    """(shape, strides, offset) of ``level``'s own position layout in ``mesh``
    (companions §2.2), or None when the mesh does not name ``level``."""
    from tilefoundry.ir.shard import ComposedLayout, c_order_strides

    if not any(t.name == level for t in mesh.topologies):
        return None
    levels = mesh.axis_levels()
    axes = [i for i, name in enumerate(levels) if name == level]
    names = [t.name for t in mesh.topologies]
    finer = 1
    for topology in mesh.topologies[names.index(level) + 1:]:
        finer *= topology.size
    layout = mesh.layout
    offset = 0
    if isinstance(layout, ComposedLayout):
        if layout.inner is not None:
            raise AnalysisError(
                f"its {level} Mesh has a non-identity inner layout, so its positions are not "
                "projectable")
        offset = layout.offset
        layout = layout.outer
    strides = layout.strides or c_order_strides(layout.shape)
    shape, steps = [], []
    for i in axes:
        stride = strides[i]
        if stride % finer:
            raise AnalysisError(
                f"its {level} Mesh stride {stride} is not a multiple of the {finer} finer "
                "positions, so its positions are not projectable")
        shape.append(layout.shape[i])
        steps.append(stride // finer)
    if offset % finer:
        raise AnalysisError(f"its {level} Mesh slice offset {offset} is not projectable")
    return tuple(shape), tuple(steps), offset // finer


def level_image(mesh, level: str) -> "range | list | None":
    """The positions ``mesh``'s layout places at ``level``, one per coordinate
    in row-major coordinate order (repeats kept): the layout's exact image
    (shard §5, companions §2.2). A box laid out row-major is one run, stated
    as a ``range`` (never enumerated: a mesh of 2**25 CTAs used to take a
    minute and 3 GB); any other layout is listed, within the POINTS limit.
    None when the mesh does not name the level; AnalysisError when they are
    not projectable or not static."""
    from tilefoundry.ir.dim import is_static

    found = _level_layout(mesh, level)
    if found is None:
        return None
    shape, steps, offset = found
    if not all(is_static(e) for e in shape):
        raise AnalysisError(f"its {level} Mesh has a symbolic extent, so its positions are not static")
    count = 1
    for extent in shape:
        count *= extent
    if _row_major(shape, steps):
        return range(offset, offset + count)
    from tilefoundry.limits import check

    check("POINTS", count, f"its {level} Mesh places {count:,} positions")
    return [offset + sum(c * s for c, s in zip(coord, steps))
            for coord in product(*(range(e) for e in shape))]


def participants(mesh, level: str, size: int) -> "frozenset | range | None":
    """The exact image of ``mesh``'s ``level`` positions (shard §5, companions
    §2.2): static, duplicate-free, inside ``[0, size)``; an unsliced mesh covers
    the whole level. None when the mesh does not name the level."""
    image = level_image(mesh, level)
    if image is None:
        return None
    if isinstance(image, range):
        if image.start < 0 or image.stop > size or (not mesh.is_sliced and count(image) != size):
            _refused_range(mesh, level, size, image)
        return image
    positions = frozenset(image)
    if len(positions) != len(image):
        raise AnalysisError(f"its {level} Mesh names a position twice, so its participants are not exact")
    if image and (min(image) < 0 or max(image) >= size):
        raise AnalysisError(
            f"its {level} Mesh reaches positions {sorted(positions)} outside [0, {size})")
    if not mesh.is_sliced and len(positions) != size:
        raise AnalysisError(
            f"its unsliced {level} Mesh covers {len(positions)} of the {size} positions; "
            "a strict subset needs a slice")
    return positions


def _row_major(shape, steps) -> bool:
    expected = 1
    for extent, step in zip(reversed(shape), reversed(steps)):
        if extent != 1 and step != expected:
            return False
        expected *= extent
    return True


def _refused_range(mesh, level, size, positions: range):
    if positions.start < 0 or positions.stop > size:
        raise AnalysisError(
            f"its {level} Mesh reaches positions {_shown(positions)} outside [0, {size})")
    raise AnalysisError(
        f"its unsliced {level} Mesh covers {count(positions)} of the {size} positions; "
        "a strict subset needs a slice")


def same_positions(a, b) -> bool:
    """Two participant sets are equal (a closed-form run against a set too)."""
    if type(a) is type(b):
        return a == b
    return count(a) == count(b) and all(p in b for p in a)


def _shown(positions) -> str:
    """Every position of a small set; a large one by its run or its count."""
    if count(positions) <= 64:
        return str(sorted(positions))
    if isinstance(positions, range):
        return f"[{positions.start}, ..., {positions.stop - 1}] ({count(positions)} positions)"
    listed = sorted(positions)
    return f"{listed[:8]} ... ({len(listed)} positions)"


def _result_meshes(call):
    """The meshes the call's result leaves are laid out on (looking through a
    static-offset view to its outer shard)."""
    from tilefoundry.ir.shard import ComposedLayout, ShardLayout
    from tilefoundry.ir.tensor_type import tensor_leaves

    meshes = []
    for leaf in tensor_leaves(call.type):
        shard = leaf.shard
        if isinstance(shard, ComposedLayout) and isinstance(shard.outer, ShardLayout):
            shard = shard.outer
        if isinstance(shard, ShardLayout) and shard.mesh not in meshes:
            meshes.append(shard.mesh)
    return meshes


def _positions(mesh, level, size, call, memo: dict):
    key = mesh
    if key not in memo:
        try:
            memo[key] = participants(mesh, level, size)
        except AnalysisError as exc:
            raise AnalysisError(f"performance: {locator(call)}: {exc}") from None
    return memo[key]


def placement(call, level: str, size: int, memo: dict) -> tuple[frozenset | None, str | None]:
    """(participants, None) for a valid execution placement, else (None, why).

    The execution region is the innermost enclosing Mesh naming ``level``; a
    result laid out on a Mesh naming ``level`` must be laid out on exactly those
    positions; a result carrying no ShardLayout does not unplace it."""
    domain = call.get_metadata(ExecutionDomainMetadata)
    mesh = domain.at(level) if domain is not None else None
    if mesh is None:
        return None, (
            f"performance: {locator(call)}: has no {level} execution domain; it was authored "
            f"outside any {level} Mesh, and where its result was laid out does not say where "
            f"the work ran. Write it inside a Mesh of that level")
    try:
        runs_on = _positions(mesh, level, size, call, memo)
        laid = [(m, _positions(m, level, size, call, memo)) for m in _result_meshes(call)]
    except AnalysisError as exc:
        return None, str(exc)
    for _, laid_out in laid:
        if laid_out is not None and not same_positions(laid_out, runs_on):
            return None, (
                f"performance: {locator(call)}: runs on {level} positions {_shown(runs_on)} but "
                f"its result is laid out on {_shown(laid_out)}; a result cannot be placed where "
                "the work that made it never ran")
    return runs_on, None

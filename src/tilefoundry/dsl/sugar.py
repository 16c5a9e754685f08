"""Meshes in bodies and layout sugar (authoring.md §4.2, §4.4; companions §2.2, §2.5)."""
from __future__ import annotations

import ast
from math import prod

from tilefoundry.ir.dim import dim_exactdiv, is_static
from tilefoundry.ir.shard import (
    Broadcast, ComposedLayout, Layout, Mesh, Partial, ShardLayout, Split, c_order_strides,
)


class MeshValue:
    """A mesh bound by ``with ... as name`` (a lexical scope)."""

    __slots__ = ("mesh", "name", "site")

    def __init__(self, mesh: Mesh, name: str, site: str = ""):
        self.mesh = mesh
        self.name = name
        self.site = site  # file:line:col of the `with` that opened it

    def __repr__(self) -> str:
        return f"<mesh scope {self.name}>"


def check_levels(mesh: Mesh) -> str | None:
    """companions §2.2: axes go to levels left to right; a straddling or leftover
    axis is refused. Returns the refusal text, or None."""
    if len(mesh.topologies) <= 1:
        return None
    extents = mesh.shape
    sizes = [t.size for t in mesh.topologies]
    if not all(is_static(e) for e in extents) or not all(is_static(s) for s in sizes):
        return (f"a Mesh naming several levels {[t.name for t in mesh.topologies]} needs "
                "concrete level sizes and axis extents")
    cursor = 0
    for topology in mesh.topologies:
        product = 1
        while cursor < len(extents) and product < topology.size:
            product *= extents[cursor]
            cursor += 1
        if product != topology.size:
            return (f"mesh axes {tuple(extents)} do not land on the boundary of level "
                    f"'{topology.name}' at {topology.size}: the axes up to there multiply to "
                    f"{product}. Write the axis that straddles it as the two axes it is")
    if cursor != len(extents):
        return (f"mesh axes {tuple(extents)} leave axes {tuple(extents[cursor:])} over after "
                f"the levels {[t.name for t in mesh.topologies]} are filled")
    return None


def compose_meshes(meshes: list[Mesh]) -> Mesh:
    """Nested single-level scopes compose outermost first into one multi-level mesh."""
    if len(meshes) == 1:
        return meshes[0]
    topologies, shape, strides, names = [], [], [], []
    for index, mesh in enumerate(meshes):
        if isinstance(mesh.layout, ComposedLayout):
            raise ValueError("a sliced mesh cannot be combined with another mesh in one layout")
        finer = prod(m.layout.size for m in meshes[index + 1:]) if index + 1 < len(meshes) else 1
        own = mesh.layout.strides or c_order_strides(mesh.shape)
        topologies.extend(mesh.topologies)
        shape.extend(mesh.shape)
        strides.extend(s * finer for s in own)
        names.extend(mesh.axis_name(i) for i in range(mesh.rank))
    return Mesh(tuple(topologies), Layout(tuple(shape), tuple(strides)), tuple(names))


class SugarError(Exception):
    """A layout-sugar violation; the parser adds the location."""


def split_outer_form(node: ast.expr):
    """-> (axis item nodes, strides node or None, state-set node or None)."""
    if isinstance(node, (ast.Tuple, ast.List)) and node.elts and isinstance(node.elts[0], (ast.Tuple, ast.List)):
        parts = list(node.elts)
        axes = parts.pop(0).elts
        states = None
        if parts and isinstance(parts[-1], ast.Set):
            states = parts.pop()
        if any(isinstance(p, ast.Set) for p in parts):
            raise SugarError("the value-state set {...} must come last in a layout")
        if len(parts) > 1:
            raise SugarError("a layout is (axes), ((axes), (strides)), ((axes), {states}) or ((axes), (strides), {states})")
        strides = parts[0] if parts else None
        return list(axes), strides, states
    if isinstance(node, (ast.Tuple, ast.List)):
        return list(node.elts), None, None
    return [node], None, None


def build_sugar(items, strides, states, meshes_in_scope, materialize: bool) -> ShardLayout:
    """``items``: list of (extent, [(mesh_obj, axis_index), ...]) in layout order;
    ``states``: [(mesh_obj, axis_index, Partial)]; ``meshes_in_scope``: lexical
    meshes outermost first (the innermost is used when no mesh is named)."""
    named: list[Mesh] = []
    for _, refs in items:
        for mesh, _ in refs:
            if not any(mesh is m for m in named):
                named.append(mesh)
    for mesh, _, _ in states:
        if not any(mesh is m for m in named):
            named.append(mesh)
    if not named:
        if not meshes_in_scope:
            raise SugarError(
                "layout sugar names no mesh and there is no enclosing `with Mesh(...)`; "
                "write the layout inside a mesh scope or pass a ShardLayout"
            )
        named = [meshes_in_scope[-1]]
    if len(named) > 1:
        order = []
        for mesh in meshes_in_scope:
            if any(mesh is m for m in named):
                order.append(mesh)
        if len(order) != len(named):
            raise SugarError("a layout may combine several meshes only when all are enclosing `with` scopes")
        named = order
    try:
        mesh = compose_meshes(named)
    except ValueError as exc:
        raise SugarError(str(exc)) from None
    offsets = {}
    running = 0
    for m in named:
        offsets[id(m)] = running
        running += m.rank
    positions: list = []
    attrs: list = [None] * mesh.rank
    for extent, refs in items:
        if not refs:
            positions.append(extent)
            continue
        mesh_axes = [offsets[id(m)] + axis for m, axis in refs]
        mesh_extents = [mesh.shape[a] for a in mesh_axes]
        for axis in mesh_axes:
            if attrs[axis] is not None:
                raise SugarError(f"mesh axis '{mesh.axis_name(axis)}' is bound twice in one layout")
        if len(mesh_axes) == 1:
            size = mesh_extents[0]
            if extent == size:
                attrs[mesh_axes[0]] = Split(len(positions))
                positions.append(size)
                continue
            if not (is_static(extent) and is_static(size)):
                attrs[mesh_axes[0]] = Split(len(positions))
                # split symbolically: each unit holds extent / size, which a binding must
                # make exact (issue 40 item 2: refused then, naming the binding)
                positions.extend([size, dim_exactdiv(extent, size)])
                continue
            if size <= 0 or extent % size:
                raise SugarError(
                    f"extent {extent} is not a multiple of mesh axis '{mesh.axis_name(mesh_axes[0])}' "
                    f"extent {size}"
                )
            attrs[mesh_axes[0]] = Split(len(positions))
            positions.extend([size, extent // size])
            continue
        if not (is_static(extent) and all(is_static(e) for e in mesh_extents)):
            raise SugarError("a split over several mesh axes needs concrete extents; bind symbolic dimensions")
        total = prod(mesh_extents)
        if extent % total:
            raise SugarError(
                f"extent {extent} is not a multiple of the mesh extents {tuple(mesh_extents)} "
                f"(product {total})"
            )
        for axis, size in zip(mesh_axes, mesh_extents):
            attrs[axis] = Split(len(positions))
            positions.append(size)
        positions.append(extent // total)
    for m, axis, partial in states:
        index = offsets[id(m)] + axis
        if attrs[index] is not None:
            raise SugarError(f"mesh axis '{mesh.axis_name(index)}' is bound twice in one layout")
        attrs[index] = partial
    attrs = [a if a is not None else Broadcast() for a in attrs]
    if strides is not None:
        strides = tuple(strides)
        if len(strides) != len(positions):
            raise SugarError(
                f"{len(strides)} strides for the {len(positions)} layout positions {tuple(positions)}"
            )
    elif materialize and all(is_static(p) for p in positions):
        strides = c_order_strides(tuple(positions))
    return ShardLayout(Layout(tuple(positions), strides), tuple(attrs), mesh)


def partial_from(call: ast.expr, evaluate) -> Partial:
    """``P("sum")`` (matched by spelling) -> Partial."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in ("P", "Partial")):
        raise SugarError("a value-state item is `mesh.axis @ P(\"sum\")`")
    if len(call.args) + len(call.keywords) != 1:
        raise SugarError("P(...) takes exactly one argument, the reduction")
    value = evaluate(call.args[0] if call.args else call.keywords[0].value)
    return Partial(value)

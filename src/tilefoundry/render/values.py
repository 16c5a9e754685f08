"""Value forms shared by every rendering: types, layouts, meshes, literals
(companions §7.1, §7.4). Nothing else in the package formats these."""
from __future__ import annotations

from enum import Enum

from tilefoundry.ir.dim import format_dim, is_dim
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.shard import (
    ComposedLayout,
    Layout,
    Mesh,
    Partial,
    ShardLayout,
    Split,
    c_order_strides,
)
from tilefoundry.ir.storage import StorageKind
from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.ir.memo import memoised


def format_tuple(items) -> str:
    parts = [format_value(item) for item in items]
    if len(parts) == 1:
        return f"({parts[0]},)"
    return f"({', '.join(parts)})"


def format_value(value) -> str:
    """Python-source spelling of an attribute or literal value."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return repr(value)
    if is_dim(value):
        return format_dim(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, DType):
        return f'"{value.name}"'
    if isinstance(value, StorageKind):
        return str(value)
    if isinstance(value, Enum):
        return f'"{value.value}"'
    if isinstance(value, tuple):
        return format_tuple(value)
    if isinstance(value, Layout):
        return format_layout(value)
    if isinstance(value, ComposedLayout):
        return format_composed(value, indent=None)
    if isinstance(value, Mesh):
        return format_mesh(value)
    return repr(value)


def format_layout(layout: Layout) -> str:
    strides = "None" if layout.strides is None else format_tuple(layout.strides)
    return f"Layout({format_tuple(layout.shape)}, {strides})"


def format_composed(layout: ComposedLayout, indent: str | None) -> str:
    inner = "None" if layout.inner is None else format_value(layout.inner)
    outer = "None" if layout.outer is None else format_value(layout.outer)
    if indent is None:
        return f"ComposedLayout( inner={inner}, offset={layout.offset}, outer={outer}, )"
    pad = indent + "    "
    return (f"ComposedLayout(\n{pad}inner={inner},\n{pad}offset={layout.offset},\n"
            f"{pad}outer={outer},\n{indent})")


def format_mesh(mesh: Mesh, indent: str | None = None) -> str:
    topologies = ", ".join(f'Topology("{t.name}", {format_dim(t.size)})' for t in mesh.topologies)
    if len(mesh.topologies) == 1:
        topologies += ","
    if isinstance(mesh.layout, ComposedLayout):
        layout = format_composed(mesh.layout, indent)
    else:
        layout = format_layout(mesh.layout)
    names = f", names={mesh.names!r}" if mesh.names else ""
    return f"Mesh(({topologies}), {layout}{names})"


class MeshNames:
    """Printer-wide mesh variables: first topology name, then `_2`, `_3`…"""

    def __init__(self):
        self.names: dict[Mesh, str] = {}

    def name(self, mesh: Mesh) -> str:
        if mesh not in self.names:
            base = mesh.topologies[0].name if mesh.topologies else "mesh"
            taken = set(self.names.values())
            name, suffix = base, 2
            while name in taken:
                name, suffix = f"{base}_{suffix}", suffix + 1
            self.names[mesh] = name
        return self.names[mesh]


def _sugar_ok(shard: ShardLayout, single_mesh: bool) -> bool:
    if not shard.mesh.names or not isinstance(shard.layout, Layout):
        return False
    has_real = any(isinstance(a, (Split, Partial)) for a in shard.attrs)
    return has_real or single_mesh


def format_shard_sugar(shard: ShardLayout, mesh_var: str) -> str:
    positions = []
    splits = shard.split_positions()
    for index, extent in enumerate(shard.layout.shape):
        text = format_dim(extent)
        for mesh_axis in splits.get(index, []):
            text += f" @ {mesh_var}.{shard.mesh.axis_name(mesh_axis)}"
        positions.append(text)
    axes = f"({', '.join(positions)}{',' if len(positions) == 1 else ''})"
    strides = shard.layout.strides
    parts = [axes]
    if strides is not None and tuple(strides) != c_order_strides(shard.layout.shape):
        parts.append(format_tuple(strides))
    partials = [
        f'{mesh_var}.{shard.mesh.axis_name(i)} @ P("{a.reduction}")'
        for i, a in enumerate(shard.attrs) if isinstance(a, Partial)
    ]
    if partials:
        parts.append("{" + ", ".join(partials) + "}")
    return parts[0] if len(parts) == 1 else f"({', '.join(parts)})"


def format_shard_verbose(shard: ShardLayout, indent: str | None) -> str:
    layout = format_value(shard.layout)
    attrs = format_tuple(shard.attrs) if shard.attrs else "()"
    mesh = format_mesh(shard.mesh)
    if indent is None:
        return f"ShardLayout( layout={layout}, attrs={attrs}, mesh={mesh}, )"
    pad = indent + "    "
    return (f"ShardLayout(\n{pad}layout={layout},\n{pad}attrs={attrs},\n"
            f"{pad}mesh={mesh},\n{indent})")


class TypeFormatter:
    """Formats types for one printed program (mesh variables and sugar policy)."""

    def __init__(self, meshes: MeshNames, single_mesh: bool):
        self.meshes = meshes
        self.single_mesh = single_mesh
        self._spelled: dict = {}  # a program has few distinct types and thousands of uses

    def annotation(self, type_, *, const: bool = False, indent: str | None = None,
                   sugar: bool = True) -> str:
        return memoised(self._spelled, (type_, const, indent, sugar),
                        lambda: self._annotation(type_, const, indent, sugar))

    def _annotation(self, type_, const, indent, sugar) -> str:
        if isinstance(type_, TupleType):
            return "Tuple[" + ", ".join(self.annotation(f, sugar=sugar) for f in type_.fields) + "]"
        if not isinstance(type_, TensorType):
            return repr(type_)
        head = "ConstTensor" if const else "Tensor"
        parts = [format_tuple(type_.shape) if type_.shape else "()", f'"{type_.dtype.name}"']
        layout = self.layout(type_.layout, indent, sugar)
        if layout is not None:
            parts.append(layout)
        if type_.storage is not StorageKind.GMEM:
            parts.append(f'"{type_.storage}"')
        if indent is not None and layout is not None and "\n" in layout:
            return f"{head}[{parts[0]}, {parts[1]},\n{indent}{layout}" + (
                f", {parts[3]}" if len(parts) > 3 else "") + "]"
        return f"{head}[{', '.join(parts)}]"

    def layout(self, layout, indent, sugar) -> str | None:
        # an annotation names a layout only for a shard layout (companions §7.4):
        # a plain Layout is storage order the op chose, not part of the type's spelling
        if layout is None or isinstance(layout, Layout):
            return None
        if isinstance(layout, ShardLayout):
            if sugar and _sugar_ok(layout, self.single_mesh):
                return format_shard_sugar(layout, self.meshes.name(layout.mesh))
            return format_shard_verbose(layout, indent)
        return format_value(layout)

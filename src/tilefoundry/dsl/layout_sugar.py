"""Layout sugar in layout positions and mesh coordinates as values
(authoring.md §4.4, §4.5; companions §2.5)."""
from __future__ import annotations

import ast

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dim import is_static
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.shard import Broadcast, Layout, Mesh, ShardLayout, Split
from tilefoundry.ir.storage import StorageKind
from tilefoundry.ir.tensor_type import TensorType
from tilefoundry.dsl.sugar import MeshValue, SugarError, build_sugar, partial_from, split_outer_form


class PlacementMixin:
    # ---------------------------------------------------------------- layout sugar
    def mesh_ref(self, node, *, signature):
        """`m` -> (mesh object) or None."""
        if isinstance(node, ast.Name):
            local = self.locals.get(node.id)
            if isinstance(local, MeshValue):
                return local.mesh
            value = self.env.lookup(node.id)
            if isinstance(value, Mesh):
                return value
        return None

    def sugar_refs(self, node, *, signature):
        """The right side of `N @ ...` -> [(mesh, axis_index), ...]."""
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        refs = []
        for elt in elts:
            if isinstance(elt, ast.Attribute):
                mesh = self.mesh_ref(elt.value, signature=signature)
                if mesh is None:
                    self.error(elt, f"`{ast.unparse(elt.value)}` is not a mesh in scope")
                try:
                    refs.append((mesh, mesh.axis_index(elt.attr)))
                except VerifyError as exc:
                    self.error(elt, str(exc))
            elif isinstance(elt, ast.Name) and not isinstance(node, ast.Tuple):
                mesh = self.mesh_ref(elt, signature=signature)
                if mesh is None:
                    self.error(elt, f"`{elt.id}` is not a mesh in scope")
                if mesh.rank != 1:
                    self.error(elt, f"`N @ {elt.id}` is shorthand for a one-axis mesh; '{elt.id}' has {mesh.rank} axes")
                refs.append((mesh, 0))
            else:
                self.error(elt, f"`{ast.unparse(elt)}` does not name a mesh axis")
        return refs

    def layout_sugar(self, node, *, materialize: bool, signature: bool) -> ShardLayout:
        try:
            axes, strides_node, states_node = split_outer_form(node)
        except SugarError as exc:
            self.error(node, str(exc))
        items = []
        for axis in axes:
            if isinstance(axis, ast.BinOp) and isinstance(axis.op, ast.MatMult):
                if isinstance(axis.left, ast.Name) and axis.left.id == "_":
                    self.error(axis, "`_ @ ...` is refused in a layout axis tuple")
                items.append((self.dim_value(axis.left), self.sugar_refs(axis.right, signature=signature)))
            else:
                items.append((self.dim_value(axis), []))
        strides = None
        if strides_node is not None:
            strides = self.static(strides_node, "layout strides")
            if not isinstance(strides, tuple):
                self.error(strides_node, "layout strides must be a tuple")
        states = []
        if states_node is not None:
            for elt in states_node.elts:
                if not (isinstance(elt, ast.BinOp) and isinstance(elt.op, ast.MatMult)):
                    self.error(elt, "a value-state item is `mesh.axis @ P(\"sum\")`")
                refs = self.sugar_refs(elt.left, signature=signature)
                try:
                    partial = partial_from(elt.right, lambda n: self.static(n, "reduction"))
                except (SugarError, VerifyError) as exc:
                    self.error(elt, str(exc))
                for mesh, index in refs:
                    states.append((mesh, index, partial))
        scopes = [s.mesh for s in self.scopes]
        if signature and not scopes:
            scopes = self.global_meshes()
        try:
            return build_sugar(items, strides, states, scopes, materialize)
        except (SugarError, VerifyError) as exc:
            self.error(node, f"layout sugar: {exc}")

    def global_meshes(self) -> list:
        meshes = [v for v in self.env.globals.values() if isinstance(v, Mesh)]
        unique = []
        for mesh in meshes:
            if not any(mesh is m for m in unique):
                unique.append(mesh)
        return unique if len(unique) == 1 else []

    # ---------------------------------------------------------------- mesh coordinates
    def mesh_coordinate(self, scope: MeshValue, node):
        mesh = scope.mesh
        try:
            axis = mesh.axis_index(node.attr)
        except VerifyError as exc:
            self.error(node, str(exc))
        key = (id(mesh), axis)
        if key in self.coordinate_cache:
            return self.coordinate_cache[key]
        extent = mesh.shape[axis]
        if not is_static(extent):
            self.error(node, f"mesh coordinate `{ast.unparse(node)}` needs a concrete axis extent")
        ramp = self.build_named("arange", [], {"type": TensorType((extent,), DType.i64)}, node, None)
        attrs = tuple(Split(0) if i == axis else Broadcast() for i in range(mesh.rank))
        # the ramp is written in C order, as any fresh value (authoring §6.3)
        layout = ShardLayout(Layout((extent,), (1,)), attrs, mesh)
        placed = self.build_named("reshard", [ramp], {"layout": layout, "storage": StorageKind.RMEM}, node, None)
        local = self.build_named("local", [placed], {}, node, None)
        value = self.build_named("reshape", [local], {"new_shape": ()}, node, f"{scope.name}.{node.attr}")
        self.coordinate_cache[key] = value
        return value

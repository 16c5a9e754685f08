"""``with Mesh(...) as m`` scopes in a body (authoring.md §4.2; companions §2.2)."""
from __future__ import annotations

import ast

from tilefoundry.errors import VerifyError
from tilefoundry.ir.shard import ComposedLayout, Layout, Mesh, Topology
from tilefoundry.dsl.env import _MISSING
from tilefoundry.dsl.sugar import MeshValue, check_levels


class MeshScopeMixin:
    # ---------------------------------------------------------------- with Mesh
    def with_stmt(self, stmt) -> bool:
        if self.loop_depth:
            self.error(stmt, "a `with` inside a loop body is refused")
        if len(stmt.items) != 1:
            self.error(stmt, "`with` takes exactly one Mesh item")
        item = stmt.items[0]
        if not isinstance(item.optional_vars, ast.Name):
            self.error(stmt, "`with Mesh(...)` needs `as NAME`")
        mesh = self.mesh_of(item.context_expr)
        name = item.optional_vars.id
        saved = self.locals.get(name, _MISSING)
        scope = MeshValue(mesh, name, self.where(stmt))
        self.locals[name] = scope
        self.scopes.append(scope)
        try:
            returned = self.block(stmt.body)
        finally:
            self.scopes.pop()
        if self.locals.get(name) is scope:
            if saved is _MISSING:
                del self.locals[name]
            else:
                self.locals[name] = saved
        self.last_stmt_was_loop = False
        return returned

    def mesh_of(self, node) -> Mesh:
        if isinstance(node, ast.Call) and self.static_callee(node.func) is Mesh:
            return self.mesh_call(node)
        if isinstance(node, ast.Subscript):
            base = self.ev(node.value) if isinstance(node.value, ast.Name) else _MISSING
            mesh = base.mesh if isinstance(base, MeshValue) else None
            if mesh is None and isinstance(node.value, ast.Call) \
                    and self.static_callee(node.value.func) is Mesh:
                mesh = self.mesh_call(node.value)  # `Mesh(("cta",), ...)[0:8]`: its levels resolved
            if mesh is None:
                value = self.static(node.value, "mesh")
                mesh = self.declared_levels(value, node.value) if isinstance(value, Mesh) else None
            if mesh is None:
                self.error(node, "`with` slices only a Mesh (`with grid[:4] as left`)")
            key = self.static_key(node.slice)
            try:
                return mesh[key]
            except VerifyError as exc:
                self.error(node, str(exc))
        if isinstance(node, ast.Name) and isinstance(self.locals.get(node.id), MeshValue):
            return self.locals[node.id].mesh
        value = None
        if not isinstance(node, ast.Call):
            try:
                value = self.static(node, "with item")
            except VerifyError:
                value = None
        if isinstance(value, Mesh):
            return self.declared_levels(value, node)
        self.error(node, f"`with` over a non-Mesh value `{ast.unparse(node)}` is not supported (only `with Mesh(...) as m` or a slice of an enclosing mesh)")

    def declared_levels(self, mesh: Mesh, node) -> Mesh:
        """A Mesh built in Python outside the body (``WHOLE = Mesh(("cta",),
        (128,), ("p",))``) names its levels as strings: each becomes the
        enclosing @module/@func's Topology of that name, as in a body."""
        if all(isinstance(t, Topology) for t in mesh.topologies):
            return mesh
        resolved = tuple(t if isinstance(t, Topology) else self.declared_level(t, node)
                         for t in mesh.topologies)
        try:
            return Mesh(resolved, mesh.layout, mesh.names)
        except VerifyError as exc:
            self.error(node, str(exc))

    def declared_level(self, name, node) -> Topology:
        """The enclosing @module/@func's Topology named ``name``, or one located line."""
        declared = self.topologies or ()
        for topology in declared:
            if topology.name == name:
                return topology
        levels = [t.name for t in declared]
        self.error(node, f"Mesh: topology '{name}' is not declared by the enclosing @module/@func; "
                         f"available levels: {levels or 'none (declare topologies=(Topology(...), ...))'}")

    def static_key(self, node):
        if isinstance(node, ast.Tuple):
            return tuple(self.static_key(e) for e in node.elts)
        if isinstance(node, ast.Slice):
            part = lambda n: None if n is None else self.static(n, "slice bound")
            return slice(part(node.lower), part(node.upper), part(node.step))
        return self.static(node, "index")

    def mesh_call(self, node) -> Mesh:
        keywords = {}
        for kw in node.keywords:
            if kw.arg in ("topology", "topologies"):
                self.error(kw.value, f"Mesh(...): the `{kw.arg}=` keyword is refused; the first argument is a tuple of level names, e.g. Mesh((\"cta\",), ...)")
            if kw.arg not in ("layout", "names"):
                self.error(node, f"Mesh(...): unknown keyword {kw.arg!r}")
            keywords[kw.arg] = kw.value
        if not node.args:
            self.error(node, "Mesh(...) needs the tuple of level names first, e.g. Mesh((\"cta\",), layout=(8,))")
        if len(node.args) > 3:
            self.error(node, "Mesh(...) takes (levels, layout, names)")
        levels_node = node.args[0]
        if isinstance(levels_node, ast.Constant) and isinstance(levels_node.value, str):
            self.error(levels_node, f"Mesh(...): write the level names as a tuple: (\"{levels_node.value}\",)")
        if not (isinstance(levels_node, ast.Tuple) and levels_node.elts
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in levels_node.elts)):
            self.error(levels_node, "Mesh(...): the first argument must be a non-empty tuple of level-name strings")
        topologies = [self.declared_level(elt.value, elt) for elt in levels_node.elts]
        positional = list(node.args[1:])
        layout_node = positional[0] if positional else keywords.get("layout")
        names_node = positional[1] if len(positional) > 1 else keywords.get("names")
        if layout_node is None:
            self.error(node, "Mesh(...) needs a layout (positional second argument or layout=)")
        if isinstance(layout_node, ast.Tuple):
            layout = tuple(self.dim_value(e) for e in layout_node.elts)
        else:
            layout = self.static(layout_node, "mesh layout")
            if not isinstance(layout, (Layout, ComposedLayout, tuple, int)):
                self.error(layout_node, f"Mesh layout must be a tuple of extents or a Layout, got {layout!r}")
        names = self.static(names_node, "mesh names") if names_node is not None else ()
        if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
            self.error(names_node, "Mesh names must be a tuple of strings")
        try:
            mesh = Mesh(tuple(topologies), layout, tuple(names))
        except VerifyError as exc:
            self.error(node, str(exc))
        problem = check_levels(mesh)
        if problem:
            self.error(node, problem)
        return mesh

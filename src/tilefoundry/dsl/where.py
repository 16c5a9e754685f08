"""``y: where(layout=..., mesh=..., storage=...)`` annotations (authoring.md §3.4)."""
from __future__ import annotations

import ast

from tilefoundry.ir.core.constraints import WhereMetadata
from tilefoundry.ir.dim import is_dim
from tilefoundry.ir.shard import Mesh
from tilefoundry.ir.storage import STORAGE_TOKENS, StorageKind, storage_hint

_FIELDS = ("layout", "mesh", "storage")


def _topology_text(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return ast.unparse(node)
    return None


def _entry(parser, node, bound: set):
    if isinstance(node, ast.Name) and node.id == "_":
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        value = parser.static(node, "where layout extent")
        if isinstance(value, bool) or not is_dim(value):
            parser.error(node, f"where(layout=...): '{node.id}' is not an int or DimVar")
        return value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        extent = _entry(parser, node.left, bound)
        topo = _topology_text(node.right)
        if topo is None:
            parser.error(node.right, "where(layout=...): `extent @ topo` takes a topology name")
        if topo in bound:
            parser.error(node.right, f"where(layout=...): topology '{topo}' is bound twice")
        bound.add(topo)
        return (extent, topo)
    parser.error(node, f"where(layout=...): entry `{ast.unparse(node)}` must be `_`, an int, a NAME or `extent @ topo` (bind expressions to a name first)")


def parse_where(parser, call: ast.Call, value) -> None:
    if call.args:
        parser.error(call, "where(...) takes keywords only (layout=, mesh=, storage=)")
    if not call.keywords:
        parser.error(call, "where(...) needs at least one of layout=, mesh=, storage=")
    seen = {}
    for kw in call.keywords:
        if kw.arg not in _FIELDS:
            parser.error(kw.value if kw.arg else call, f"where(...): unknown field {kw.arg!r}; fields are {list(_FIELDS)}")
        if kw.arg in seen:
            parser.error(kw.value, f"where(...): field '{kw.arg}' given twice")
        seen[kw.arg] = kw.value
    layout, bindings, mesh, storage = None, (), None, None
    bound: set = set()
    if "layout" in seen:
        node = seen["layout"]
        entries_node, set_node = node, None
        if isinstance(node, ast.Tuple) and len(node.elts) == 2 and isinstance(node.elts[1], ast.Set):
            entries_node, set_node = node.elts
        if not isinstance(entries_node, ast.Tuple):
            parser.error(node, "where(layout=...) takes (e0, e1, ...) or ((e0, ...), {binding, ...})")
        layout = tuple(_entry(parser, e, bound) for e in entries_node.elts)
        found = []
        for elt in (set_node.elts if set_node is not None else ()):
            if not (isinstance(elt, ast.BinOp) and isinstance(elt.op, ast.MatMult) and isinstance(elt.right, ast.Call)
                    and isinstance(elt.right.func, ast.Name) and elt.right.func.id in ("B", "P")):
                parser.error(elt, "where(layout=...): a binding is `topo @ B()` or `topo @ P(\"sum\")`")
            topo = _topology_text(elt.left)
            if topo is None or topo in bound:
                parser.error(elt, f"where(layout=...): topology '{topo}' is bound twice or not a name")
            bound.add(topo)
            if elt.right.func.id == "B":
                found.append((topo, "B"))
            else:
                args = elt.right.args
                reduction = parser.static(args[0], "reduction") if args else "sum"
                found.append((topo, f"P:{reduction}"))
        bindings = tuple(found)
    if "mesh" in seen:
        mesh = parser.static(seen["mesh"], "where mesh")
        if not isinstance(mesh, Mesh):
            parser.error(seen["mesh"], "where(mesh=...) takes a Mesh")
    if "storage" in seen:
        token = parser.static(seen["storage"], "where storage")
        if isinstance(token, str) and token in STORAGE_TOKENS:
            token = STORAGE_TOKENS[token]
        if not isinstance(token, StorageKind):
            parser.error(seen["storage"], f"where(storage=...): {token!r} is not a storage token; write one "
                                          f"of {sorted(STORAGE_TOKENS)}{storage_hint(token)}")
        storage = token
    previous = value.get_metadata(WhereMetadata)
    here = parser.where(call)
    if previous is not None:
        parser.error(call, f"this value already carries a where(...) annotation at {previous.location}; a second one (here, {here}) is refused")
    value.with_metadata(WhereMetadata(layout, bindings, mesh, storage, here))

"""The annotated-program printer (companions §7.4): one pass produces the
program text and the `value` label (`<name>:<line>`) of every statement."""
from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import Callable

from tilefoundry.ir.expr import Call, Constant, GridRegionExpr, Tuple, Var
from tilefoundry.ir.function import Function
from tilefoundry.ir.metadata import BindingMetadata
from tilefoundry.ir.shard import ShardLayout
from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.ir.trampoline import trampoline
from tilefoundry.render.values import (
    MeshNames,
    TypeFormatter,
    format_mesh,
    format_shard_verbose,
    format_tuple,
    format_value,
)

PREAMBLE = (
    "from __future__ import annotations",
    "",
    "from tilefoundry import func",
    "from tilefoundry.dsl.tf import *  # noqa: F401, F403",
    "from tilefoundry.dsl import {tensor_names}",
    "from tilefoundry.dsl.storage import gmem, host, rmem, smem, tmem  # noqa: F401",
    "from tilefoundry.ir.types.shard import (",
    "    B, S, P, ComposedLayout, Layout, Mesh, ShardLayout, Topology,",
    ")",
    "",
)

# Kinded ops print by alias (companions §7.4); these unary kinds print generically.
_BINARY_ALIASES = {
    "eq": "cmp_eq", "ne": "cmp_ne", "lt": "cmp_lt", "le": "cmp_le", "gt": "cmp_gt",
    "ge": "cmp_ge", "and": "logical_and", "or": "logical_or",
}
_UNARY_ALIASES = {"not": "logical_not"}
_UNARY_GENERIC = {"rsqrt", "cast", "relu", "square"}

CommentSource = Callable[[object], list]


@dataclass
class PrintedProgram:
    """The annotated program's text, each node's ``value`` label, and every printed name."""

    text: str
    labels: dict = field(default_factory=dict)  # id(node) -> "<name>:<line>"
    names: dict = field(default_factory=dict)  # id(node) -> printed name


def _kind_value(op) -> str:
    kind = getattr(op, "kind", None)
    return getattr(kind, "value", kind)


def op_spelling(op) -> tuple[str, list]:
    """The printed callee and the attributes it still shows."""
    if isinstance(op, Function):  # an authored call (not inlined): its callee's name
        return op.name, []
    attrs = [(k, v) for k, v in op.attributes() if v is not None]
    if op.name == "binary":
        kind = _kind_value(op)
        return _BINARY_ALIASES.get(kind, kind), []
    if op.name == "unary":
        kind = _kind_value(op)
        if kind in _UNARY_GENERIC:
            return "unary", attrs
        return _UNARY_ALIASES.get(kind, kind), []
    return op.name, attrs


def _collect_meshes(type_, found: list):
    if isinstance(type_, TupleType):
        for f in type_.fields:
            _collect_meshes(f, found)
    elif isinstance(type_, TensorType) and isinstance(type_.shard, ShardLayout):
        if type_.shard.mesh not in found:
            found.append(type_.shard.mesh)


class ProgramPrinter:
    def __init__(self, function: Function, *, param_names: dict | None = None,
                 comments: CommentSource | None = None, header_lines: int = 0):
        self.function = function
        self.param_names = param_names or {}
        self.comments = comments
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        self.labels: dict[int, str] = {}
        self.emitted: set[int] = set()
        self.taken: set[str] = set()
        self.counter = 0
        self.op_names = set()
        self._order = None  # the body's postorder, walked once
        self._spellings: dict = {}  # id(op) -> (op, op_spelling(op))
        self._attr_texts: dict = {}  # id(op) -> (op, (callee, keyword texts)): see _spelled_attrs
        self._reshards: dict = {}  # (id(op), indent) -> (op, its layout and storage arguments)
        self._squeezed: dict[str, str] = {}  # a comment part -> its one-line form
        self.loop_carries: dict[int, GridRegionExpr] = {}
        self.windows: dict[int, object] = {}  # id(var of a loop printed as tile) -> its step
        meshes = self._all_meshes()
        self.meshes = MeshNames()
        self.fmt = TypeFormatter(self.meshes, single_mesh=len(meshes) <= 1)
        self._mesh_order = meshes

    # ---------------------------------------------------------------- survey
    def _walk(self):
        if self.function.body is None:  # a variant prototype has no body
            return []
        if self._order is None:
            from tilefoundry.analysis.check import iter_nodes  # the walk the analyses kept

            self._order = iter_nodes(self.function.body)
        return self._order

    def _all_meshes(self) -> list:
        found: list = []
        _collect_meshes(self.function.result_type, found)
        for param in self.function.params:
            _collect_meshes(param.type, found)
        seen: set = set()  # ids of the types and ops surveyed: a view's nodes share a few hundred
        for node in self._walk():
            if id(node.type) not in seen:
                seen.add(id(node.type))
                _collect_meshes(node.type, found)
            if isinstance(node, Call) and hasattr(node.op, "attributes") and id(node.op) not in seen:
                seen.add(id(node.op))
                for _, value in node.op.attributes():
                    if isinstance(value, ShardLayout) and value.mesh not in found:
                        found.append(value.mesh)
        return found

    def _spelling(self, op) -> tuple[str, list]:
        """``op_spelling``, once per op object (a view's calls share their ops)."""
        found = self._spellings.get(id(op))
        if found is None:
            found = self._spellings[id(op)] = (op, op_spelling(op))  # the op kept: its id stays unique
        return found[1]

    def _spelled_attrs(self, op) -> tuple[str, list]:
        """(callee, ["name=value", ...]) of ``op``, spelled once per op object:
        a layer's calls repeat their ops over every copy of the layer."""
        found = self._attr_texts.get(id(op))
        if found is None:
            callee, attrs = self._spelling(op)
            found = self._attr_texts[id(op)] = (op, (callee, [f"{k}={self._attr(v)}" for k, v in attrs]))
        return found[1]

    # ---------------------------------------------------------------- names
    def _claim(self, name: str) -> str:
        if name in self.op_names:
            name = f"{name}_out"
        candidate, suffix = name, 2
        while candidate in self.taken:
            candidate, suffix = f"{name}_{suffix}", suffix + 1
        self.taken.add(candidate)
        return candidate

    def _counter_name(self) -> str:
        name = f"v{self.counter}"
        self.counter += 1
        return name

    def _assign_names(self):
        order = self._walk()
        for node in order:
            if isinstance(node, Call) and hasattr(node.op, "name"):
                self.op_names.add(self._spelling(node.op)[0])
        forced: dict[int, str] = {}
        for node in order:
            if isinstance(node, GridRegionExpr):
                for var, init in zip(node.carried, node.inits):
                    forced[id(var)] = var.name
                    if isinstance(init, Call):
                        forced.setdefault(id(init), var.name)
        # parameters keep their names first: calls never take a parameter's name
        # (companions §3.1), so the printed program re-parses to the same names
        for param in self.function.params:
            self.names[id(param)] = self._claim(_sanitize(self.param_names.get(param, param.name)))
        for node in order:
            if id(node) in self.names:
                continue
            if id(node) in forced:
                name = forced[id(node)]
                self.taken.add(name)
                self.names[id(node)] = name
            elif isinstance(node, Call):
                binding = node.get_metadata(BindingMetadata)
                self.names[id(node)] = self._claim(binding.name if binding else self._counter_name())
            elif isinstance(node, (Constant, Tuple, GridRegionExpr)):
                self.names[id(node)] = self._claim(self._counter_name())
            elif isinstance(node, Var):
                self.names[id(node)] = node.name
        tiled = _tile_window_vars(order)
        for node in order:
            if isinstance(node, GridRegionExpr):
                # authored `range` loops keep their spelling (a unit-step row read stays
                # `x[r:r + 1]`); an authored `tile` is kept only where a window proves it
                if node.kind == "tile" and node.start == 0 and id(node.induction_var) in tiled:
                    self.windows[id(node.induction_var)] = node.step
                self.names[id(node.induction_var)] = node.induction_var.name
                for var in node.carried:
                    self.names[id(var)] = var.name
                if len(node.carried) == 1:
                    self.names[id(node)] = node.carried[0].name
                for var in node.carried:
                    self.loop_carries[id(var)] = node

    # ---------------------------------------------------------------- rendering
    def run(self) -> PrintedProgram:
        self._assign_names()
        tensor_names = "ConstTensor, Tensor" if any(p.is_const for p in self.function.params) else "Tensor"
        for line in PREAMBLE:
            self.lines.append(line.format(tensor_names=tensor_names))
        self._mesh_prelude()
        self._signature()
        if self.function.body is None:  # the prototype of authored variants (`pass`)
            self.lines.append("    pass")
        else:
            trampoline(self._emit(self.function.body, "    ", top=True))
            self.lines.append(f"    return {self._ref(self.function.body)}")
        return PrintedProgram("\n".join(self.lines) + "\n", self.labels, self.names)

    def _mesh_prelude(self):
        named = [m for m in self._mesh_order if m.names]
        if not named:
            return
        for mesh in self._mesh_order:
            self._append(f"{self.meshes.name(mesh)} = {format_mesh(mesh, indent='')}")
        self.lines.append("")

    def _signature(self):
        self.lines.append("@func")
        self.lines.append(f"def {self.function.name}(")
        params = self.function.params
        for index, param in enumerate(params):
            annotation = self.fmt.annotation(param.type, const=param.is_const, indent="        ")
            comma = "," if index < len(params) - 1 else ""
            self._append(f"    {self.names[id(param)]}: {annotation}{comma}")
        result = self.function.result_type
        if isinstance(result, TensorType):
            self._append(f") -> {self.fmt.annotation(result, indent='        ')}:")
        else:
            self.lines.append("):")

    def _ref(self, node) -> str:
        """How an operand is written in an argument position."""
        if isinstance(node, Tuple):
            # companions §7.4: tuple arguments print inline, literals by value
            inner = ", ".join(format_value(f.value) if isinstance(f, Constant) else self._ref(f)
                              for f in node.fields)
            return f"({inner}{',' if len(node.fields) == 1 else ''})"
        if isinstance(node, Call) and self._is_loop_projection(node):
            loop = node.args[0]
            return loop.carried[node.op.index].name
        return self.names.get(id(node), "?")

    def _is_loop_projection(self, node: Call) -> bool:
        return (getattr(node.op, "name", None) == "tuple_get_item"
                and isinstance(node.args[0], GridRegionExpr))

    def _emit(self, node, indent: str, top: bool, direct: bool = True):
        """A generator (ir.trampoline): a body is deeper than Python's stack."""
        if id(node) in self.emitted:
            return
        if isinstance(node, Var):
            return
        if isinstance(node, Constant):
            if top or direct:
                self.emitted.add(id(node))
                self._line(node, f"{indent}{self.names[id(node)]} = {format_value(node.value)}",
                           [self.fmt.annotation(node.type, sugar=True)], label=False)
            return
        self.emitted.add(id(node))
        if isinstance(node, Tuple):
            for f in node.fields:
                yield self._emit(f, indent, top, direct=False)
            return
        if isinstance(node, GridRegionExpr):
            yield self._emit_loop(node, indent, top)
            return
        emitted = self.emitted
        for arg in node.args:
            if id(arg) not in emitted and not isinstance(arg, Var):  # most are: no generator
                yield self._emit(arg, indent, top, direct=True)
        if self._is_loop_projection(node):
            return
        self._emit_call(node, indent)

    def _emit_loop(self, loop: GridRegionExpr, indent: str, top: bool):
        for init in loop.inits:
            yield self._emit(init, indent, top)
        header = f"{indent}for {loop.induction_var.name} in {self._loop_iter(loop)}:"
        comment = [self.fmt.annotation(loop.type)]
        self._line(loop, header, comment, label=True, name=loop.induction_var.name)
        inner = indent + "    "
        for value in loop.yields:
            yield self._emit(value, inner, top=False)
        for var, value in zip(loop.carried, loop.yields):
            self.lines.append(f"{inner}{var.name} = {self._ref(value)}")

    def _loop_iter(self, loop: GridRegionExpr) -> str:
        start, end, step = (format_value(v) for v in (loop.start, loop.extent, loop.step))
        # the header is `tile` only where it is true: the body reads a window
        # [var, var + step) (companions §7.4); the authored spelling does not decide
        if id(loop.induction_var) in self.windows:
            return f"tile({end}, {step})"
        if loop.start == 0 and loop.step == 1:
            return f"range({end})"
        return f"range({start}, {end}, {step})"

    def _emit_call(self, node: Call, indent: str):
        name = self.names[id(node)]
        op = node.op
        if isinstance(op, Function):
            callee, _ = op_spelling(op)
            text = f"{callee}({', '.join(self._ref(a) for a in node.args)})"
        elif op.name == "reshard":
            text = self._reshard_text(node, indent)
        elif op.name == "slice" and self._subscript(node) is not None:
            text = f"{self._ref(node.args[0])}[{self._subscript(node)}]"
        elif getattr(op, "infix", None):  # dim arithmetic (ops.dims) prints as the operator it came from
            text = f" {op.infix} ".join(self._ref(a) for a in node.args)
        else:
            callee, attrs = self._spelled_attrs(op)
            args = [self._ref(a) for a in node.args]
            args += attrs
            text = f"{callee}({', '.join(args)})"
        self._line(node, f"{indent}{name} = {text}", [self.fmt.annotation(node.type)],
                   label=True, name=name)

    def _attr(self, value) -> str:
        if isinstance(value, TensorType):
            return self.fmt.annotation(value, sugar=False)
        if isinstance(value, ShardLayout):
            return format_shard_verbose(value, None)
        return format_value(value)

    def _reshard_text(self, node: Call, indent: str) -> str:
        # the layout and storage text is the op's and the indent's alone: a
        # layer's reshards repeat it across every copy of the layer
        key = (id(node.op), indent)
        found = self._reshards.get(key)
        if found is None:
            found = self._reshards[key] = (node.op, self._reshard_attrs(node.op, indent))
        return f"reshard({', '.join([self._ref(node.args[0]), *found[1]])})"

    def _reshard_attrs(self, op, indent: str) -> list[str]:
        layout = op.layout
        storage = op.storage
        pad = indent + "        "
        parts = []
        if layout is not None:
            mesh_var = self.meshes.name(layout.mesh)
            attrs = format_tuple(layout.attrs) if layout.attrs else "()"
            parts.append(
                f"layout=ShardLayout(\n{pad}layout={format_value(layout.layout)},\n"
                f"{pad}attrs={attrs},\n{pad}mesh={mesh_var},\n{indent}    )"
            )
        if storage is not None:
            parts.append(f"storage={storage}")
        return parts

    def _subscript(self, node: Call) -> str | None:
        starts = node.args[1] if len(node.args) > 1 else None
        source = node.args[0].type
        if not isinstance(starts, Tuple) or not isinstance(source, TensorType):
            return None
        sizes = node.op.sizes
        strides = getattr(node.op, "strides", None) or (1,) * len(sizes)
        items = []
        for start, size, stride, extent in zip(starts.fields, sizes, strides, source.shape):
            if isinstance(start, Constant):
                begin = start.value
                if begin == 0 and size == extent and stride == 1:
                    items.append(":")
                    continue
                stop = begin + (size - 1) * stride + 1
                items.append(f"{begin}:{stop}" + (f":{stride}" if stride != 1 else ""))
            elif isinstance(start, Var) and id(start) in self.names and stride == 1:
                name = self.names[id(start)]
                # `w` alone reads back as the tile window [w, w + step); any other
                # runtime start (a range induction variable) keeps its axis only
                # in the `s:s + K` form (`x[r]` would drop it)
                items.append(name if self.windows.get(id(start)) == size else f"{name}:{name} + {size}")
            else:
                return None
        return ", ".join(items)

    def _line(self, node, text: str, comment: list, *, label: bool, name: str | None = None):
        records = self.comments(node) if (self.comments and label) else []
        squeezed = self._squeezed
        parts = []
        for part in (*comment, *records):
            if part:
                one_line = squeezed.get(part)
                if one_line is None:
                    one_line = squeezed[part] = " ".join(part.split())
                parts.append(one_line)
        line_number = len(self.lines) + 1
        if label:
            self.labels[id(node)] = f"{name or self.names[id(node)]}:{line_number}"
        self._append(f"{text}  # {'; '.join(parts)}")

    def _append(self, text: str):
        """Keep one list entry per physical line, so line numbers stay exact."""
        self.lines.extend(text.split("\n"))


def _tile_window_vars(order) -> set[int]:
    """ids of loop variables some slice uses directly as a window start whose
    size is the loop step, with stride 1 (companions §7.4 `tile` headers)."""
    steps = {id(n.induction_var): n.step for n in order if isinstance(n, GridRegionExpr)}
    found: set[int] = set()
    for node in order:
        if not (isinstance(node, Call) and getattr(node.op, "name", None) == "slice"):
            continue
        if len(node.args) < 2 or not isinstance(node.args[1], Tuple):
            continue
        sizes = node.op.sizes
        strides = getattr(node.op, "strides", None) or (1,) * len(sizes)
        for start, size, stride in zip(node.args[1].fields, sizes, strides):
            if id(start) in steps and stride == 1 and size == steps[id(start)]:
                found.add(id(start))
    return found


def _sanitize(name: str) -> str:
    text = re.sub(r"\W", "_", name)
    return f"_{text}" if text[:1].isdigit() else text


def print_program(function: Function, **options) -> PrintedProgram:
    return ProgramPrinter(function, **options).run()


def module_text(module, function: Function, topologies: tuple, target) -> str:
    """The Module around a printed typed program: what makes the text a program
    ``tilefoundry analyze`` reads again (issue 21 item 7). It follows the function,
    so every line of the function part, and every label, is where it was; the
    function is collected by binding it in the class body (authoring §2.2).

    ``topologies`` are the effective ones under the binding the types were
    printed at (a DimVar extent bound by ``--dim`` prints as its number), and
    ``target`` the resolved one (``--target`` included; None prints none)."""
    imports = ["from tilefoundry import module  # noqa: E402"]
    options = [f'entry="{function.name}"']
    if target is not None:
        cls = type(target)
        from tilefoundry import target as targets

        home = "tilefoundry.target" if getattr(targets, cls.__name__, None) is cls else cls.__module__
        imports.append(f"from {home} import {cls.__name__}  # noqa: E402")
        options.append(f"target={target!r}")
    if topologies:
        listed = ", ".join(f'Topology("{t.name}", {format_value(t.size)})' for t in topologies)
        options.append(f"topologies=({listed}{',' if len(topologies) == 1 else ''})")
    name = _sanitize(module.name) or "Program"
    if keyword.iskeyword(name):
        name += "_"
    return "\n".join((
        "", "", "# the Module it is analysed in: `tilefoundry analyze` reads this file back",
        *imports, "", "",
        f"@module({', '.join(options)})",
        f"class {name}:",
        f"    {function.name} = {function.name}",
        "",
    ))

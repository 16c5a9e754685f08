"""The @func parser: an authored Python function read from its source (``ast``),
never traced (authoring.md §2.3–§5). Every construct is either built into IR or
refused with a one-line ``VerifyError`` naming ``file:line:col`` and the construct.

Signature, annotations and statements here; expressions in :mod:`exprs`
(subscripts in :mod:`subscripts`, layout sugar in :mod:`placement`), loops in
:mod:`loops`, ``with Mesh`` scopes in :mod:`scopes`.
"""
from __future__ import annotations

import ast
import inspect

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dim import free_dimvars, is_dim, is_static
from tilefoundry.ir.dtype import DTYPES, DType, resolve_dtype
from tilefoundry.ir.expr import Expr, Var
from tilefoundry.ir.metadata import ExecutionDomainMetadata, SourceSpanMetadata
from tilefoundry.ir.shard import ComposedLayout, Layout, ShardLayout
from tilefoundry.ir.storage import STORAGE_TOKENS, StorageKind, storage_hint
from tilefoundry.ir.tensor_type import TensorType, TupleType, tensor_leaves
from tilefoundry.dsl.env import Env, _MISSING
from tilefoundry.dsl.exprs import ExprParser
from tilefoundry.dsl.loops import LoopMixin
from tilefoundry.dsl.opcall import dim_tuple
from tilefoundry.dsl.scopes import MeshScopeMixin
from tilefoundry.dsl.sugar import MeshValue
from tilefoundry.dsl.window import Window


class Authored:
    """What the parser returns: the pieces of a Function."""

    def __init__(self, name, params, body, return_type, node, file):
        self.name = name
        self.params = params
        self.body = body
        self.return_type = return_type
        self.node = node
        self.file = file


_DEF_SPANS: dict = {}  # (file, text) -> {first line: def node} of every def in it


def note_source_tree(filename: str, text: str, tree: ast.Module) -> None:
    """Record the defs of a file the loader has already parsed (where each
    starts and ends, and its node), so that reading each @func's source parses
    nothing again."""
    _remember_spans((filename, text), tree)


def _def_spans(filename: str, lines: list) -> dict:
    """Each def of a file's text by the line it starts on (its first
    decorator), from one parse of the whole text; a start two defs share maps
    to None."""
    key = (filename, "".join(lines))
    found = _DEF_SPANS.get(key)
    if found is None:
        try:
            tree = ast.parse(key[1])
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = ast.Module(body=[], type_ignores=[])
        found = _remember_spans(key, tree)
    return found


def _remember_spans(key: tuple, tree: ast.Module) -> dict:
    found: dict = {}
    pending = list(tree.body)
    while pending:  # statements only: a def never hides inside an expression
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            found[first] = None if first in found else node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                pending.extend(block)
    if len(_DEF_SPANS) >= 64:
        _DEF_SPANS.clear()
    _DEF_SPANS[key] = found
    return found


def _file_def(fn):
    """(lines of the file, ``fn``'s def node in the file's own parse), or
    (lines, None) where that parse cannot place it."""
    import linecache

    code = getattr(fn, "__code__", None)
    if code is None:
        return [], None
    lines = linecache.getlines(code.co_filename, getattr(fn, "__globals__", None))
    node = _def_spans(code.co_filename, lines).get(code.co_firstlineno) if lines else None
    return lines, node


def _source_lines(fn):
    """(lines, first line number) of ``fn``'s definition, decorators included,
    as ``inspect.getsourcelines`` answers, which tokenises the file anew for
    every function (a tenth of a model file's load); a def the file's
    own parse cannot place is asked of inspect."""
    fn = inspect.unwrap(fn)  # as inspect does: a wrapper names the function it wraps
    lines, node = _file_def(fn)
    if node is not None:
        first = fn.__code__.co_firstlineno
        return lines[first - 1:node.end_lineno], first
    return inspect.getsourcelines(fn)


def _unreadable(fn, exc: Exception) -> VerifyError:
    """The one line for a def whose source no file or cache holds: typed at a
    plain Python prompt (``<stdin>``), or a file gone since it ran."""
    filename = getattr(getattr(inspect.unwrap(fn), "__code__", None), "co_filename", "")
    if filename.startswith("<") and filename.endswith(">"):
        return VerifyError(
            f"@tilefoundry.func '{fn.__name__}': its source cannot be read: it was defined in "
            f"{filename}, which keeps no source (a plain Python prompt, or exec of a string); "
            "the parser reads every @func from its source, so define it in a .py file "
            "(tilefoundry.analyze('file.py:Module')) or in a Jupyter/IPython notebook cell")
    return VerifyError(
        f"@tilefoundry.func '{fn.__name__}': its source cannot be read ({exc}); "
        "authored functions must live in a source file (or a notebook cell)")


def read_function_source(fn):
    """(FunctionDef node, file): the node's lines and columns are the file's own.

    The node is the one of the file's own parse (the loader's, or one parse of
    the file); a def that parse cannot place is parsed from the lines
    inspect gives, still in place and never dedented: a dedented text would
    count columns from the def's indentation (4 or 8 columns early for a kernel
    in a class body), and it cannot be parsed at all where a string in the
    body has a line less indented than the def."""
    fn = inspect.unwrap(fn)
    file = fn.__code__.co_filename
    _, node = _file_def(fn)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == fn.__code__.co_name:
        return node, file
    try:
        lines, first = _source_lines(fn)
    except (OSError, TypeError) as exc:
        raise _unreadable(fn, exc) from None
    indented = lines[0][:1].isspace()
    # an indented def parses in place as the body of `if 1:` (one line above it)
    text = ("if 1:\n" if indented else "") + "".join(lines)
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        line = (exc.lineno or 1) + first - 1 - indented
        raise VerifyError(f"{file}:{line}:{exc.offset or 0}: cannot parse @func source: {exc.msg}") from None
    ast.increment_lineno(tree, first - 1 - indented)
    body = tree.body[0].body if indented and tree.body else tree.body
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node, file
    raise VerifyError(f"{file}:{first}: no function definition found for '{fn.__name__}'")


class FuncParser(LoopMixin, MeshScopeMixin, ExprParser):
    def __init__(self, fn, *, frames, topologies, in_class: bool, role: str = "function"):
        self.fn = fn
        self.env = Env(fn, frames)
        self.topologies = topologies  # tuple of Topology, or None (undeclared)
        self.in_class = in_class
        self.role = role
        self.node, self.file = read_function_source(fn)
        self.locals: dict = {}
        self.scopes: list[MeshValue] = []
        self.loop_depth = 0
        self.result = None
        self.last_loop = None
        self.coordinate_cache: dict = {}
        self.signature_mode = False

    # ---------------------------------------------------------------- entry
    def parse(self) -> Authored:
        node = self.node
        if isinstance(node, ast.AsyncFunctionDef):
            self.error(node, "async def is not supported for @func")
        params = self.parse_params(node.args)
        return_type = None
        if node.returns is not None:
            return_type, _ = self.tensor_annotation(node.returns, signature=True)
        for param in params:
            self.locals[param.name] = param
        body = self.parse_body(node)
        if body is None and return_type is None:
            self.error(node, f"prototype '{node.name}' (a `pass` body) must annotate its return type")
        if body is not None and return_type is not None:
            self.check_return(node, body.type, return_type)
        return Authored(node.name, params, body, return_type, node, self.file)

    def check_return(self, node, produced, declared) -> None:
        """A declared return shape or dtype the body does not produce is refused
        at the return (issue 22: authoring §2.4 records the reference accepting
        it, and callers then read a type the value does not have). Layout and
        storage are not compared: a return annotation states the logical type."""
        from tilefoundry.ir.dim import format_dim
        from tilefoundry.ir.tensor_type import tensor_leaves

        def logical(type_):
            return [(tuple(leaf.shape), leaf.dtype) for leaf in tensor_leaves(type_)]

        if logical(produced) == logical(declared):
            return
        returns = [n for n in ast.walk(node) if isinstance(n, ast.Return)]
        where = returns[-1] if returns else node

        def shown(type_):
            parts = [f"Tensor[({', '.join(format_dim(d) for d in s)}{',' if len(s) == 1 else ''}), "
                     f"\"{d.name}\"]" for s, d in logical(type_)]
            return parts[0] if len(parts) == 1 else f"({', '.join(parts)})"

        self.error(where, f"'{node.name}' declares it returns {shown(declared)} but its body returns "
                          f"{shown(produced)}; correct the annotation (-> {shown(produced)}) or the "
                          "returned value")

    def parse_params(self, args: ast.arguments) -> list[Var]:
        if args.vararg or args.kwarg or args.kwonlyargs:
            bad = args.vararg or args.kwarg or args.kwonlyargs[0]
            self.error(bad, f"@tilefoundry.func parameter '{bad.arg}': only plain positional parameters are read (no *args, **kwargs or keyword-only)")
        # ref: default values are ignored (a parameter is always supplied by the caller)
        params, seen_dims = [], {}
        for arg in list(args.posonlyargs) + list(args.args):
            if arg.annotation is None:
                self.error(arg, f"@tilefoundry.func param '{arg.arg}' must be annotated")
            type_, is_const = self.tensor_annotation(arg.annotation, signature=True)
            for leaf in tensor_leaves(type_):
                for extent in leaf.shape:
                    for var in free_dimvars(extent):
                        other = seen_dims.setdefault(var.name, var)
                        if other is not var:
                            self.error(arg, f"inconsistent DimVar bounds for '{var.name}' within function signature: [{other.lo}, {other.hi}) and [{var.lo}, {var.hi})")
            params.append(Var(arg.arg, type_, is_const))
        return params

    # ---------------------------------------------------------------- annotations
    def tensor_annotation(self, node, *, signature: bool):
        """-> (TensorType, is_const) for ``Tensor[...]``/``ConstTensor[...]`` or a closure type."""
        head = node.value if isinstance(node, ast.Subscript) else None
        head_name = None
        if isinstance(head, ast.Name):
            head_name = head.id
        elif isinstance(head, ast.Attribute):
            head_name = head.attr
        if head_name in ("Tensor", "ConstTensor"):
            slots = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return self.tensor_slots(slots, node, signature=signature, head=head_name), head_name == "ConstTensor"
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.error(node, "string annotations are not read; write Tensor[...] (postponed annotations need no quotes)")
        value = self.static(node, "annotation")
        if isinstance(value, TensorType):
            return value, False
        self.error(node, f"annotation `{ast.unparse(node)}` is not a tensor type: write Tensor[shape, dtype] or ConstTensor[shape, dtype]")

    def tensor_slots(self, slots, node, *, signature: bool, head: str = "Tensor") -> TensorType:
        if not 2 <= len(slots) <= 4:
            self.error(node, f"{head}[...] takes 2 to 4 slots (shape, dtype[, layout_or_storage[, storage]]), got {len(slots)}")
        shape_node, dtype_node = slots[0], slots[1]
        layout = None
        storage = StorageKind.GMEM
        placed = isinstance(shape_node, ast.Tuple) and any(
            isinstance(e, ast.BinOp) and isinstance(e.op, ast.MatMult) for e in shape_node.elts
        )
        if placed:
            shape = tuple(self.dim_value(e.left if isinstance(e, ast.BinOp) and isinstance(e.op, ast.MatMult) else e)
                          for e in shape_node.elts)
            layout = self.layout_sugar(shape_node, materialize=True, signature=signature)
        else:
            shape = self.shape_value(shape_node)
        dtype = self.dtype_value(dtype_node)
        if len(slots) >= 3:
            third = slots[2]
            kind, value = self.third_slot(third, signature=signature)
            if kind == "storage":
                if len(slots) == 4:
                    self.error(slots[3], f"{head}[...]: a storage third slot cannot be followed by a fourth")
                storage = value
            elif kind == "layout":
                if placed:
                    self.error(third, f"{head}[...]: the shape already places the value (`@`); the third slot must be a storage token")
                layout = value
        if len(slots) == 4:
            storage = self.storage_value(slots[3])
        try:
            return TensorType(shape, dtype, layout, storage)
        except VerifyError as exc:
            self.error(node, str(exc))

    def shape_value(self, node) -> tuple:
        if isinstance(node, ast.Tuple):
            return tuple(self.dim_value(e) for e in node.elts)
        value, bad = dim_tuple(self.static(node, "shape"))
        if bad:
            self.error(node, f"shape entry {bad[0]!r} is not an int, DimVar or dim expression")
        return value

    def dim_value(self, node):
        value = self.static(node, "dimension")
        if isinstance(value, bool) or not is_dim(value):
            self.error(node, f"dimension `{ast.unparse(node)}` is {value!r}, not an int, DimVar or dim expression")
        return value

    def dtype_value(self, node) -> DType:
        if isinstance(node, ast.Name) and node.id not in self.locals and self.env.lookup(node.id) is _MISSING:
            if node.id in DTYPES:
                return DTYPES[node.id]
        value = self.static(node, "dtype")
        try:
            return resolve_dtype(value)
        except VerifyError as exc:
            self.error(node, f"unknown tensor dtype: {exc}")

    def storage_value(self, node) -> StorageKind:
        value = self.static(node, "storage")
        if isinstance(value, StorageKind):
            return value
        if isinstance(value, str) and value in STORAGE_TOKENS:
            return STORAGE_TOKENS[value]
        self.error(node, f"storage {value!r} is not one of {sorted(STORAGE_TOKENS)}{storage_hint(value)}")

    def third_slot(self, node, *, signature: bool):
        if isinstance(node, ast.Constant):
            if node.value is None:
                return "none", None
            if isinstance(node.value, str):
                return "storage", self.storage_value(node)
        if isinstance(node, (ast.Name, ast.Attribute, ast.Call)):
            try:
                value = self.static(node, "layout or storage")
            except VerifyError:
                value = _MISSING
            if isinstance(value, StorageKind) or (isinstance(value, str) and value in STORAGE_TOKENS):
                return "storage", self.storage_value(node)
            if isinstance(value, ShardLayout) and value.layout.strides is None:
                return "layout", value.with_strides(_c_order(value.layout.shape))
            if isinstance(value, (Layout, ComposedLayout, ShardLayout)):
                return "layout", value
            if value is None:
                return "none", None
        return "layout", self.layout_sugar(node, materialize=True, signature=signature)

    # ---------------------------------------------------------------- body
    def parse_body(self, fdef):
        stmts = fdef.body
        if len(stmts) == 1 and isinstance(stmts[0], ast.Pass):
            return None
        returned = self.block(stmts)
        if returned:
            return self.result
        if self.last_loop is not None and self.last_stmt_was_loop:
            return self.last_loop
        self.error(stmts[-1], f"@func '{fdef.name}' must end with a `return` (a function body is one expression)")

    def block(self, stmts) -> bool:
        for stmt in stmts:
            self.last_stmt_was_loop = False
            if self.statement(stmt):
                return True
        return False

    def statement(self, stmt) -> bool:
        if isinstance(stmt, ast.Assign):
            self.assign(stmt)
            return False
        if isinstance(stmt, ast.AnnAssign):
            self.ann_assign(stmt)
            return False
        if isinstance(stmt, ast.AugAssign):
            self.error(stmt, "augmented assignment (+= etc.) is not supported; rewrite as `x = x + ...`")
        if isinstance(stmt, ast.With):
            return self.with_stmt(stmt)
        if isinstance(stmt, ast.For):
            self.for_stmt(stmt)
            self.last_stmt_was_loop = True
            return False
        if isinstance(stmt, ast.Return):
            if stmt.value is None:
                self.error(stmt, "`return` needs a value")
            self.result = self.return_value(stmt.value)
            return True
        if isinstance(stmt, ast.Pass):
            self.error(stmt, "`pass` is accepted only as the entire body (a prototype)")
        if isinstance(stmt, ast.Expr):
            what = "docstring" if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str) else "bare expression statement"
            self.error(stmt, f"unsupported statement: {what} in an @func body (every statement must bind, loop, scope or return)")
        names = {ast.If: "if", ast.While: "while loop", ast.Try: "try", ast.FunctionDef: "nested def",
                 ast.AsyncFunctionDef: "nested def", ast.ClassDef: "class definition", ast.Delete: "del",
                 ast.Raise: "raise", ast.Assert: "assert", ast.Import: "import", ast.ImportFrom: "import",
                 ast.Global: "global", ast.Nonlocal: "nonlocal", ast.Break: "break", ast.Continue: "continue"}
        label = names.get(type(stmt), type(stmt).__name__)
        self.error(stmt, f"hir: unsupported statement {type(stmt).__name__} ({label}) in an @func body")

    def return_value(self, node):
        if isinstance(node, ast.Tuple):
            fields = [self.as_input(self.ev(e), e) for e in node.elts]
            from tilefoundry.dsl.opcall import tuple_expr

            return tuple_expr(fields)
        value = self.ev(node)
        if isinstance(value, Window):
            value = self.window_start(value, node)
        if not isinstance(value, Expr):
            value = self.as_input(value, node)
        return value

    # ---------------------------------------------------------------- assignments
    def assign(self, stmt):
        if len(stmt.targets) != 1:
            self.error(stmt, "multi-target assignment `a = b = ...` is not supported")
        target = stmt.targets[0]
        if isinstance(target, ast.Name):
            self.assign_name(target.id, stmt.value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.unpack(target, stmt.value)
        else:
            kind = {ast.Attribute: "attribute", ast.Subscript: "subscript", ast.Starred: "starred"}.get(type(target), type(target).__name__)
            self.error(target, f"unsupported assignment target: {kind} (only names and tuples of names bind)")

    def assign_name(self, name: str, value_node):
        if isinstance(value_node, ast.List):
            self.locals[name] = [self.as_input(self.ev(e), e) for e in value_node.elts]
            return
        if isinstance(value_node, ast.ListComp):
            self.locals[name] = self.list_comprehension(value_node)
            return
        if isinstance(value_node, ast.Name):
            value = self.name_value(value_node)
            self.locals[name] = value
            return
        self.locals[name] = self.ev(value_node, binding=name)

    def list_comprehension(self, node):
        if len(node.generators) != 1:
            self.error(node, "a list comprehension takes exactly one `for`")
        gen = node.generators[0]
        if gen.ifs or gen.is_async or not isinstance(gen.target, ast.Name):
            self.error(node, "a list comprehension takes one plain `for NAME in range(...)`, no `if`")
        it = gen.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            bounds = [self.static(a, "range bound") for a in it.args]
            if not all(is_static(b) for b in bounds):
                self.error(it, "the range of a list comprehension must be compile-time ints")
            values = list(range(*bounds))
        else:
            values = self.static(it, "comprehension iterable")
            if not isinstance(values, tuple):
                self.error(it, "a list comprehension iterates over range(...) of ints or a compile-time tuple")
        saved = self.locals.get(gen.target.id, _MISSING)
        items = []
        for value in values:
            self.locals[gen.target.id] = value
            items.append(self.as_input(self.ev(node.elt), node.elt))
        if saved is _MISSING:
            self.locals.pop(gen.target.id, None)
        else:
            self.locals[gen.target.id] = saved
        return items

    def unpack(self, target, value_node):
        names = []
        for elt in target.elts:
            if not isinstance(elt, ast.Name):
                self.error(elt, "tuple unpacking binds plain names only")
            names.append(elt.id)
        if isinstance(value_node, ast.Tuple):
            if len(value_node.elts) != len(names):
                self.error(value_node, f"cannot unpack {len(value_node.elts)} values into {len(names)} names")
            values = [self.ev(e, binding=n) for n, e in zip(names, value_node.elts)]
            for name, value in zip(names, values):
                self.locals[name] = value
            return
        value = self.ev(value_node)
        if isinstance(value, tuple):
            if len(value) != len(names):
                self.error(value_node, f"cannot unpack {len(value)} values into {len(names)} names")
            for name, item in zip(names, value):
                self.locals[name] = item
            return
        if not (isinstance(value, Expr) and isinstance(value.type, TupleType)):
            self.error(value_node, "tuple unpacking needs a tuple-typed value (a multi-result op or a function returning a tuple)")
        if len(value.type.fields) != len(names):
            self.error(value_node, f"cannot unpack a {len(value.type.fields)}-tuple into {len(names)} names")
        self.label_parent(value)
        for index, name in enumerate(names):
            self.locals[name] = self.tuple_item(value, index, value_node, binding=name)

    def label_parent(self, value):
        from tilefoundry.ir.metadata import BindingMetadata

        op = getattr(value, "op", None)
        if op is not None and value.get_metadata(BindingMetadata) is None:
            value.with_metadata(BindingMetadata(getattr(op, "name", None) or getattr(op, "class_name", "call")))

    # ---------------------------------------------------------------- where(...)
    def ann_assign(self, stmt):
        from tilefoundry.dsl.where import parse_where

        if not isinstance(stmt.target, ast.Name):
            self.error(stmt.target, "an annotated assignment binds a plain name")
        ann = stmt.annotation
        if not (isinstance(ann, ast.Call) and isinstance(ann.func, ast.Name) and ann.func.id == "where"):
            self.error(ann, f"only `where(...)` is accepted as a variable annotation, got `{ast.unparse(ann)}`")
        if stmt.value is not None:
            self.assign_name(stmt.target.id, stmt.value)
        value = self.locals.get(stmt.target.id, _MISSING)
        if value is _MISSING:
            self.error(stmt.target, f"where(...) annotates '{stmt.target.id}', which is not bound")
        if not (isinstance(value, Expr) and isinstance(value.type, TensorType)):
            self.error(stmt.target, f"where(...) annotates '{stmt.target.id}', which is not tensor-valued")
        parse_where(self, ann, value)

    # ---------------------------------------------------------------- metadata
    def stamp(self, node, ast_node, binding=None):
        from tilefoundry.ir.metadata import BindingMetadata

        line, col = self.position(ast_node)
        node.with_metadata(SourceSpanMetadata(self.file, line, col))
        node.with_metadata(ExecutionDomainMetadata(tuple(s.mesh for s in self.scopes),
                                                   tuple(s.site for s in self.scopes)))
        if binding:
            node.with_metadata(BindingMetadata(binding))
        return node


def _c_order(shape):
    from tilefoundry.ir.shard import c_order_strides

    return c_order_strides(tuple(shape)) if all(is_static(s) for s in shape) else None

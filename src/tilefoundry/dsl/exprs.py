"""Expressions of an authored body (authoring.md §5.2–§5.4, §6.1, §2.8).

Subscripts live in :mod:`subscripts`, layout sugar and mesh coordinates in
:mod:`placement`."""
from __future__ import annotations

import ast
import linecache
import operator

from tilefoundry.errors import VerifyError
from tilefoundry.text_input import char_column
from tilefoundry.ir.dim import is_dim, is_static
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Call, Expr
from tilefoundry.ir.function import Function
from tilefoundry.ir.module import AttachedCallMetadata, Module
from tilefoundry.ir.shard import Layout, ShardLayout
from tilefoundry.dsl import opcall
from tilefoundry.dsl.env import Names, _MISSING
from tilefoundry.dsl.loops import LoopLocal
from tilefoundry.dsl.layout_sugar import PlacementMixin
from tilefoundry.dsl.subscripts import SubscriptMixin
from tilefoundry.dsl.sugar import MeshValue
from tilefoundry.dsl.tf import TfOp
from tilefoundry.dsl.window import Window

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
           ast.FloorDiv: "floor_div", ast.Mod: "mod", ast.MatMult: "matmul"}
_FOLD = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
         ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
         ast.Pow: operator.pow}
_CMPOPS = {ast.Eq: "cmp_eq", ast.NotEq: "cmp_ne", ast.Lt: "cmp_lt", ast.LtE: "cmp_le",
           ast.Gt: "cmp_gt", ast.GtE: "cmp_ge"}
_CMPFOLD = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}
_REFUSED_EXPR = {ast.Lambda: "lambda", ast.IfExp: "conditional expression", ast.ListComp: "list comprehension",
                 ast.SetComp: "set comprehension", ast.DictComp: "dict comprehension",
                 ast.GeneratorExp: "generator expression", ast.Dict: "dict literal", ast.Set: "set literal",
                 ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield", ast.NamedExpr: "walrus",
                 ast.JoinedStr: "f-string", ast.Starred: "starred expression", ast.Slice: "slice"}


def _compile_time(value) -> bool:
    return not isinstance(value, (Expr, MeshValue, Window, list, LoopLocal))


def _is_static_number(value) -> bool:
    return opcall.is_number(value) or (is_dim(value) and not isinstance(value, bool))


class ExprParser(SubscriptMixin, PlacementMixin):
    # ---------------------------------------------------------------- locations
    def position(self, node) -> tuple[int, int]:
        """(line, column) of ``node`` in its file, both 1-based, the column in
        characters as an editor, Python's SyntaxError and every compiler count
        it: the parsed tree is the file's own (never a dedented copy), so a
        kernel in a class body counts its indentation too. The reference
        counts columns in the dedented function source (docs/authoring.md)."""
        line = node.lineno
        return line, char_column(linecache.getline(self.file, line), node.col_offset)

    def where(self, node) -> str:
        line, col = self.position(node)
        return f"{self.file}:{line}:{col}"

    def error(self, node, message: str):
        raise VerifyError(f"{self.where(node)}: {message}{self.shadow_note(node)}")

    def shadow_note(self, node) -> str:
        """Why a name may not mean what the author sees: §2.7 reads module
        globals before the enclosing class body / factory locals, so a star
        import's ``S``/``B``/``P``/``T`` hides a factory's ``S = DimVar(...)``."""
        env = getattr(self, "env", None)
        if env is None or not isinstance(node, ast.AST):
            return ""
        for sub in ast.walk(node):
            name = getattr(sub, "id", None)
            if (not isinstance(sub, ast.Name) or name in self.locals or name in env.closure
                    or name not in env.globals):
                continue
            hidden = next((scope[name] for scope in env.frames if name in scope), _MISSING)
            if hidden is not _MISSING and hidden is not env.globals[name]:
                shown = getattr(env.globals[name], "__qualname__", None) or type(env.globals[name]).__name__
                return (f" (note: '{name}' reads the module global {shown!s}, which hides the '{name}' bound in "
                        "the enclosing class body or factory function: module globals are read first, "
                        "authoring §2.7; rename one of them)")
        return ""

    # ---------------------------------------------------------------- static evaluation
    def static(self, node, what: str):
        """Evaluate ``node`` at authoring time (closure, globals, enclosing frames,
        compile-time locals)."""
        if isinstance(node, ast.Constant):
            return node.value
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(self.locals.get(sub.id), LoopLocal):
                self.error(sub, self.locals[sub.id].refusal())
        names = Names({k: v for k, v in self.locals.items() if _compile_time(v)}, self.env)
        try:
            code = compile(ast.Expression(body=node), self.file, "eval")
            return eval(code, self.env.globals, names)  # noqa: S307 -- authored compile-time value
        except VerifyError as exc:
            message = str(exc)
            if message.startswith(self.file):
                raise
            self.error(node, message)
        except NameError as exc:
            self.error(node, f"{what} `{ast.unparse(node)}` is not a compile-time value ({exc})")
        except Exception as exc:  # noqa: BLE001 -- the authored expression failed
            self.error(node, f"cannot evaluate {what} `{ast.unparse(node)}` at authoring time: {type(exc).__name__}: {exc}")

    def static_callee(self, node):
        """What a callee expression names, without building anything (None if unknown)."""
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                return self.locals[node.id]
            value = self.env.lookup(node.id, builtins_too=False)
            return None if value is _MISSING else value
        if isinstance(node, ast.Attribute):
            base = self.static_callee(node.value)
            if base is None or isinstance(base, (Expr, MeshValue, Window)):
                return None
            try:
                return getattr(base, node.attr)
            except Exception:  # noqa: BLE001
                return None
        return None

    # ---------------------------------------------------------------- values
    def ev(self, node, binding: str | None = None):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float)):
                return node.value
            what = type(node.value).__name__ if node.value is not None else "None"
            self.error(node, f"unsupported literal type {what}")
        if isinstance(node, ast.Name):
            return self.name_value(node)
        if isinstance(node, ast.Attribute):
            return self.attribute_value(node)
        if isinstance(node, ast.BinOp):
            return self.binop(node, binding)
        if isinstance(node, ast.UnaryOp):
            return self.unaryop(node, binding)
        if isinstance(node, ast.Compare):
            return self.compare(node, binding)
        if isinstance(node, ast.BoolOp):
            return self.boolop(node, binding)
        if isinstance(node, ast.Call):
            return self.call(node, binding)
        if isinstance(node, ast.Subscript):
            return self.subscript(node, binding)
        if isinstance(node, ast.Tuple):
            return tuple(self.ev(e) for e in node.elts)
        if isinstance(node, ast.List):
            self.error(node, "a list literal is accepted only as an assignment value (xs = [a, b])")
        label = _REFUSED_EXPR.get(type(node), type(node).__name__)
        self.error(node, f"unsupported expression: {label}")

    def name_value(self, node: ast.Name):
        if node.id in self.locals:
            value = self.locals[node.id]
            if isinstance(value, LoopLocal):
                self.error(node, value.refusal())
            return value
        value = self.env.lookup(node.id)
        if value is _MISSING:
            self.error(node, f"name '{node.id}' is not defined")
        return value

    def attribute_value(self, node: ast.Attribute):
        if isinstance(node.value, ast.Name) and isinstance(self.locals.get(node.value.id), MeshValue):
            return self.mesh_coordinate(self.locals[node.value.id], node)
        base_is_local = isinstance(node.value, ast.Name) and node.value.id in self.locals
        if base_is_local and not _compile_time(self.locals[node.value.id]):
            self.error(node, f"attribute access `.{node.attr}` on a value is not supported")
        value = self.static(node, "attribute")
        if _is_static_number(value) or isinstance(value, (tuple, TfOp, DType, Function, Module)):
            return value
        self.error(node, f"attribute `{ast.unparse(node)}` in an expression must fold to a number (got {type(value).__name__})")

    # ---------------------------------------------------------------- conversion to IR
    def as_input(self, value, node, float_dtype=None):
        if isinstance(value, Expr):
            return value
        if isinstance(value, Window):
            return self.window_start(value, node)
        if isinstance(value, bool):
            return opcall.constant(value)
        if isinstance(value, float):
            return opcall.constant(value, float_dtype or DType.f32)
        if isinstance(value, int) and not -2 ** 63 <= value < 2 ** 63:
            digits = str(value)
            shown = digits if len(digits) <= 24 else f"{digits[:12]}... ({len(digits.lstrip('-'))} digits)"
            self.error(node, f"the integer {shown} does not fit i64, the dtype of an integer "
                             "next to tensors ([-2**63, 2**63)); write a value in that range")
        if isinstance(value, int) or is_dim(value):
            return opcall.constant(value, DType.i64)
        if isinstance(value, tuple):
            return opcall.tuple_expr([self.as_input(v, node) for v in value])
        if isinstance(value, list):
            self.error(node, "a list literal as an op argument is refused; pass the items")
        if isinstance(value, MeshValue):
            self.error(node, f"the mesh '{value.name}' itself is not a value; use one of its axes (`{value.name}.axis`)")
        self.error(node, f"`{ast.unparse(node)}` ({type(value).__name__}) cannot be used as a tensor operand")

    def window_start(self, window: Window, node):
        if not window.offset:
            return window.var
        return self.build_named("add", [window.var, opcall.constant(window.offset)], {}, node, None)

    def tuple_item(self, value, index: int, node, binding=None):
        return self.build_named("tuple_get_item", [value], {"index": index}, node, binding)

    # ---------------------------------------------------------------- operators
    def binop(self, node, binding):
        left, right = self.ev(node.left), self.ev(node.right)
        if _is_static_number(left) and _is_static_number(right):
            try:
                return _FOLD[type(node.op)](left, right)
            except KeyError:
                self.error(node, f"operator {type(node.op).__name__} is not supported on numbers")
            except Exception as exc:  # noqa: BLE001
                self.error(node, f"cannot fold `{ast.unparse(node)}`: {exc}")
        if isinstance(left, Window) and is_static(right) and isinstance(node.op, (ast.Add, ast.Sub)):
            return left.moved(right if isinstance(node.op, ast.Add) else -right)
        if isinstance(right, Window) and is_static(left) and isinstance(node.op, ast.Add):
            return right.moved(left)
        if isinstance(right, Window) and isinstance(node.op, ast.Sub) and is_static(left):
            self.error(node, "`C - w` on a tile window is refused (only w + C moves a window)")
        name = _BINOPS.get(type(node.op))
        if name is None:
            what = "**" if isinstance(node.op, ast.Pow) else type(node.op).__name__
            self.error(node, f"operator {what} is not supported on tensors")
        return self.apply_op(name, [(left, node.left), (right, node.right)], node, binding)

    def unaryop(self, node, binding):
        operand = self.ev(node.operand)
        if isinstance(node.op, ast.USub):
            if _is_static_number(operand):
                return -operand
            return self.apply_op("neg", [(operand, node.operand)], node, binding)
        if isinstance(node.op, ast.Not):
            if opcall.is_number(operand):
                return not operand
            return self.apply_op("logical_not", [(operand, node.operand)], node, binding)
        what = {ast.UAdd: "unary +", ast.Invert: "~"}.get(type(node.op), type(node.op).__name__)
        self.error(node, f"operator {what} is not supported")

    def compare(self, node, binding):
        if len(node.ops) != 1:
            self.error(node, "chained comparisons are not supported; compare two values at a time")
        op = type(node.ops[0])
        if op not in _CMPOPS:
            self.error(node, f"comparison {op.__name__} is not supported")
        left, right = self.ev(node.left), self.ev(node.comparators[0])
        if _is_static_number(left) and _is_static_number(right):
            return _CMPFOLD[op](left, right)
        return self.apply_op(_CMPOPS[op], [(left, node.left), (right, node.comparators[0])], node, binding)

    def boolop(self, node, binding):
        if len(node.values) != 2:
            self.error(node, "`and`/`or` take exactly two operands here")
        name = "logical_and" if isinstance(node.op, ast.And) else "logical_or"
        left, right = self.ev(node.values[0]), self.ev(node.values[1])
        if opcall.is_number(left) and opcall.is_number(right):
            return (left and right) if name == "logical_and" else (left or right)
        return self.apply_op(name, [(left, node.values[0]), (right, node.values[1])], node, binding)

    def apply_op(self, name, operands, node, binding):
        """An operator spelled by Python syntax: inputs only, float rule applied."""
        values = [v for v, _ in operands]
        float_dtype = opcall.float_dtype_for(values)
        args = [self.as_input(v, n, float_dtype) for v, n in operands]
        from tilefoundry.ops.dims import DIM_OP_FOR_BINARY, is_dim_operand, is_dim_value

        # authoring §3.3 / companions §1.4: `i * 4` on a loop induction variable is dim
        # arithmetic (a rank-0 i64 umat Dim* call), not a tensor Binary
        if (name in DIM_OP_FOR_BINARY and any(is_dim_value(a) for a in args)
                and all(is_dim_operand(a) for a in args)):
            return self.emit(DIM_OP_FOR_BINARY[name](), args, node, binding)
        return self.build_named(name, args, {}, node, binding)

    # ---------------------------------------------------------------- op calls
    def build_named(self, name, args, attrs, node, binding):
        names = opcall.registry()
        schema = names.get(name)
        if schema is None:
            self.error(node, f"op '{name}' is not registered")
        fixed = dict(schema.fixed)
        kinds = getattr(schema.op_class, "attr_kinds", {}) or {}
        values = {k: self.coerce(kinds.get(k), v, k, node) for k, v in attrs.items()}
        return self.emit(self.make_op(schema.op_class, fixed, values, node), args, node, binding)

    def coerce(self, kind, value, attr, node):
        try:
            return opcall.coerce_attr(kind, value, attr)
        except VerifyError as exc:
            self.error(node, str(exc))

    def make_op(self, op_class, fixed, attrs, node):
        missing = [f.name for f in opcall.attr_fields(op_class, fixed) if opcall.is_required(f) and f.name not in attrs]
        if missing:
            self.error(node, f"{op_class.__name__}: missing attribute(s) {missing}")
        try:
            return op_class(**fixed, **attrs)
        except VerifyError as exc:
            self.error(node, str(exc))
        except (TypeError, ValueError) as exc:
            self.error(node, f"{op_class.__name__}: {exc}")

    def emit(self, op, args, node, binding):
        from tilefoundry.semantics.typeinfer import build_call

        scopes = tuple(s.mesh for s in self.scopes)
        call = build_call(op, tuple(args), location=self.where(node), binding=binding, scopes=scopes)
        return self.stamp(call, node, binding)

    def call(self, node, binding):
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("tile", "range") and func.id not in self.locals:
            self.error(node, f"{func.id}(...) is valid only as the iterator of a `for` loop")
        callee = self.static_callee(func)
        text = ast.unparse(func)
        if callee is None and isinstance(func, ast.Name):
            schema = opcall.registry().get(func.id)
            if schema is not None and not schema.fixed:
                callee = TfOp(schema)  # ref: a bare unbound callee falls back to a real op by name
        if isinstance(callee, TfOp):
            return self.tf_call(callee, node, binding)
        if isinstance(func, ast.Attribute) and isinstance(self.static_callee(func.value), Module):
            # §2.8: a child is called by its bare name and runs its entry, with
            # its weights filled from its own ConstTensor declarations
            self.error(node, f"calling a Module's member by attribute (`{text}(...)`) is refused; attach the "
                             f"child in this class body and call it as `{ast.unparse(func.value)}(...)` (it runs its entry)")
        if isinstance(callee, Function):
            return self.function_call(callee, node, binding)
        if isinstance(callee, Module):
            return self.module_call(callee, node, binding, text)
        self.error(node, f"unknown Op name '{text}'{self.callee_hint(func)}")

    def callee_hint(self, func) -> str:
        """The nearest op of the tf namespace (written as the callee's own
        namespace: ``tf.addd`` -> ``tf.add``) or, for a bare name, the nearest
        op or Function / Module in scope (a sibling kernel, a child)."""
        import types

        from tilefoundry.errors import did_you_mean

        ops = sorted(opcall.registry())
        if isinstance(func, ast.Attribute):
            namespace = self.static_callee(func.value)
            if not (isinstance(namespace, types.ModuleType) and namespace.__name__ == "tilefoundry.dsl.tf"):
                return ""
            where = ast.unparse(func.value)
            return did_you_mean(func.attr, ops, shown=lambda name: f"{where}.{name}")
        if not isinstance(func, ast.Name):
            return ""
        shown = {name: f"tf.{name}" for name in ops}
        for scope in (self.env.globals, *self.env.frames, self.env.closure, self.locals):
            for name, value in scope.items():
                if isinstance(value, (Function, Module)) and not name.startswith("_"):
                    shown[name] = name  # what a bare name resolves to first
        return did_you_mean(func.id, shown, shown=shown)

    def loc_label(self, node):
        label = None
        for kw in node.keywords:
            if kw.arg == "loc":
                label = self.static(kw.value, "loc=")
                if not isinstance(label, str):
                    self.error(kw.value, "loc= takes a string label")
        return label

    def tf_call(self, tfop, node, binding):
        schema = tfop._op_schema
        op_class = schema.op_class
        fixed = dict(schema.fixed)
        inputs = tuple(getattr(op_class, "inputs", ()))
        variadic = bool(getattr(op_class, "variadic", False))
        kinds = getattr(op_class, "attr_kinds", {}) or {}
        fields = opcall.attr_fields(op_class, fixed)
        field_names = [f.name for f in fields]
        label = self.loc_label(node) or binding
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                self.error(arg, f"tf.{schema.name}: starred arguments are not supported")
        for kw in node.keywords:
            if kw.arg in inputs:
                self.error(kw.value, f"{op_class.__name__}: input '{kw.arg}' must be passed positionally (keywords name attributes only)")
        if variadic:
            input_nodes, attr_nodes = list(node.args), []
        else:
            input_nodes, attr_nodes = list(node.args[: len(inputs)]), list(node.args[len(inputs):])
            if len(input_nodes) < len(inputs):
                missing = list(inputs[len(input_nodes):])
                self.error(node, f"{op_class.__name__}: missing input(s) {missing}")
            if len(attr_nodes) > len(fields):
                self.error(node, f"{op_class.__name__}: {len(node.args)} positional arguments, but it takes {len(inputs)} input(s) and {len(fields)} attribute(s)")
        given = dict(zip(field_names, attr_nodes))
        for kw in node.keywords:
            if kw.arg == "loc":
                continue
            if kw.arg is None:
                self.error(node, f"tf.{schema.name}: **kwargs are not supported")
            if kw.arg in inputs:
                self.error(kw.value, f"{op_class.__name__}: input '{kw.arg}' must be passed positionally (keywords name attributes only)")
            if kw.arg in fixed:
                self.error(kw.value, f"tf.{schema.name} fixes attribute '{kw.arg}'")
            if kw.arg not in field_names:
                self.error(kw.value, f"{op_class.__name__}: unknown attribute '{kw.arg}'; attributes are {field_names}")
            if kw.arg in given:
                self.error(kw.value, f"{op_class.__name__}: attribute '{kw.arg}' given twice")
            given[kw.arg] = kw.value
        attrs = {name: self.attr_value(kinds.get(name), name, value_node) for name, value_node in given.items()}
        op = self.make_op(op_class, fixed, attrs, node)
        values = [self.ev(n) for n in input_nodes]
        for value, n in zip(values, input_nodes):
            if isinstance(value, list):
                self.error(n, f"tf.{schema.name}: a list literal as an op argument is refused; pass the items")
        float_dtype = opcall.float_dtype_for(values)
        args = [self.as_input(v, n, float_dtype) for v, n in zip(values, input_nodes)]
        return self.emit(op, args, node, label)

    def attr_value(self, kind, name, node):
        if kind == "layout":
            if isinstance(node, ast.Constant) and node.value is None:
                return None
            if isinstance(node, (ast.Name, ast.Attribute, ast.Call)) and not self.names_mesh(node):
                # a layout object (a closure name, or a constructor call as the
                # printer writes it); sugar is always a tuple
                value = self.static(node, f"attribute '{name}'")
                if value is None or isinstance(value, (ShardLayout, Layout)):
                    return value
            return self.layout_sugar(node, materialize=False, signature=False)
        if kind == "type":
            if isinstance(node, ast.Subscript):
                type_, _ = self.tensor_annotation(node, signature=False)
                return type_
            return self.coerce(kind, self.static(node, f"attribute '{name}'"), name, node)
        value = self.static(node, f"attribute '{name}'")
        return self.coerce(kind, value, name, node)

    def names_mesh(self, node) -> bool:
        base = node
        while isinstance(base, ast.Attribute):
            base = base.value
        return isinstance(base, ast.Name) and isinstance(self.locals.get(base.id), MeshValue)

    # ---------------------------------------------------------------- calls between functions
    def function_args(self, node, what):
        for kw in node.keywords:
            if kw.arg != "loc":
                self.error(kw.value if kw.value else node, f"{what}: arguments are positional only (keyword '{kw.arg}')")
        values = [self.ev(a) for a in node.args]
        return [self.as_input(v, a) for v, a in zip(values, node.args)]

    def function_call(self, function, node, binding):
        args = self.function_args(node, f"call of '{function.name}'")
        if len(args) != len(function.params):
            self.error(node, f"'{function.name}' takes {len(function.params)} argument(s) (ConstTensor parameters included), got {len(args)}")
        return self.finish_function_call(function, args, node, self.loc_label(node) or binding)

    def module_call(self, module, node, binding, text):
        if not self.in_class:
            self.error(node, f"calling Module '{module.name}' is allowed only from an @func authored in a @module class body")
        class_body = self.env.frames[0] if self.env.frames else {}
        if not any(value is module for value in class_body.values()):
            self.error(node, f"Module '{text}' is not attached in this class body; attach it as a class attribute (`{text.lower()} = {text}`) above the caller and call it by that name")
        if module.entry is None:
            self.error(node, f"Module '{module.name}' declares no entry, so it cannot be called")
        found = module.function_named(module.entry)
        if len(found) != 1 or not isinstance(found[0], Function):
            self.error(node, f"Module '{module.name}': entry '{module.entry}' is not one HIR function")
        function = found[0]
        args = self.function_args(node, f"call of Module '{text}'")
        activations = [p for p in function.params if not p.is_const]
        if len(args) != len(activations):
            self.error(node, f"Module '{text}' (entry '{function.name}') takes {len(activations)} activation(s); its ConstTensor parameters come from its own weights; got {len(args)} argument(s)")
        supplied = iter(args)
        full = [p if p.is_const else next(supplied) for p in function.params]
        call = self.finish_function_call(function, full, node, self.loc_label(node) or binding)
        return call.with_metadata(AttachedCallMetadata(text))  # which copy it calls (§2.8)

    def finish_function_call(self, function, args, node, binding):
        scopes = tuple(s.mesh for s in self.scopes)
        try:
            from tilefoundry.semantics.elaborate import build_function_call
        except ImportError:
            build_function_call = None
        if build_function_call is not None:
            call = build_function_call(function, tuple(args), location=self.where(node), binding=binding, scopes=scopes)
        else:
            call = Call(function, tuple(args), function.result_type)
        return self.stamp(call, node, binding)

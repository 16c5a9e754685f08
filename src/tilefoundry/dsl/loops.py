"""``for v in tile(E, step)`` / ``for v in range(...)`` loops (authoring.md §5.6):
one ``GridRegionExpr`` each, with loop-carried rebinding."""
from __future__ import annotations

import ast

from tilefoundry.ir.dim import is_dim, is_static
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Expr, GridRegionExpr, Var
from tilefoundry.ir.tensor_type import TensorType, TupleType, umat_scalar
from tilefoundry.dsl.window import Window

_LOOP_ALLOWED = (ast.Assign, ast.For)


class LoopMixin:
    # ---------------------------------------------------------------- loops
    def for_stmt(self, stmt):
        if stmt.orelse:
            self.error(stmt, "for ... else is not supported")
        if not isinstance(stmt.target, ast.Name):
            self.error(stmt.target, "the loop target must be a single name")
        it = stmt.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in ("tile", "range")):
            self.error(it, "a loop iterates over tile(extent, step) or range(...) only")
        kind = it.func.id
        if it.keywords:
            self.error(it, f"{kind}(...) takes positional arguments only")
        bounds = [self.loop_bound(a) for a in it.args]
        if kind == "tile":
            if len(bounds) != 2:
                self.error(it, "tile(extent, step) takes exactly two arguments (use range(...) for a unit step)")
            start, extent, step = 0, bounds[0], bounds[1]
        else:
            if not 1 <= len(bounds) <= 3:
                self.error(it, "range(...) takes 1 to 3 arguments")
            if len(bounds) == 1:
                start, extent, step = 0, bounds[0], 1
            else:
                start, extent = bounds[0], bounds[1]
                step = bounds[2] if len(bounds) == 3 else 1
        if not is_static(step) or step <= 0:
            self.error(it, f"the loop step must be a positive int, got {step!r}")
        for sub in stmt.body:
            if not isinstance(sub, _LOOP_ALLOWED):
                self.loop_refusal(sub, kind)
        assigned = []
        _assigned_names(stmt.body, assigned)
        carries = [n for n in assigned if isinstance(self.locals.get(n), Expr) and isinstance(self.locals[n].type, (TensorType, TupleType))]
        induction = Var(stmt.target.id, umat_scalar(DType.i64))
        saved = dict(self.locals)
        phis = [Var(name, self.locals[name].type) for name in carries]
        inits = [self.locals[name] for name in carries]
        for phi in phis:
            self.locals[phi.name] = phi
        self.locals[stmt.target.id] = Window(induction, step, extent) if kind == "tile" else induction
        self.loop_depth += 1
        try:
            for sub in stmt.body:
                if isinstance(sub, ast.For):
                    self.for_stmt(sub)
                else:
                    self.assign(sub)
        finally:
            self.loop_depth -= 1
        yields = []
        for name in carries:
            value = self.locals.get(name)
            if isinstance(value, Window) or not isinstance(value, Expr):
                self.error(stmt, f"loop-carried '{name}' must stay a tensor in the loop body")
            yields.append(value)
        self.locals = saved
        if len(phis) == 1:
            type_ = phis[0].type
        else:
            type_ = TupleType(tuple(p.type for p in phis))
        grid = GridRegionExpr(induction, phis, inits, yields, start, extent, step, kind, type_)
        self.stamp(grid, stmt, binding=carries[0] if len(carries) == 1 else None)
        if len(carries) == 1:
            self.locals[carries[0]] = grid
        else:
            for index, name in enumerate(carries):
                self.locals[name] = self.tuple_item(grid, index, stmt, binding=name)
        self.last_loop = grid

    def loop_bound(self, node):
        value = self.static(node, "loop bound")
        if isinstance(value, bool) or not is_dim(value):
            self.error(node, f"a loop bound must be an int, DimVar or dim expression, got {value!r}")
        return value

    def loop_refusal(self, stmt, kind):
        where = f"hir {kind}-for body"
        if isinstance(stmt, ast.AugAssign):
            self.error(stmt, f"{where}: augmented assignment (+= etc.) not supported; rewrite as `x = x + ...`")
        if isinstance(stmt, ast.With):
            self.error(stmt, f"{where}: a `with` inside a loop body is refused")
        what = {ast.Return: "return", ast.With: "with", ast.Pass: "pass", ast.Expr: "bare expression",
                ast.AnnAssign: "annotated assignment", ast.If: "if", ast.While: "while"}.get(type(stmt), type(stmt).__name__)
        self.error(stmt, f"{where}: unsupported statement {what} (only assignments and nested for loops)")


def _assigned_names(stmts, out: list):
    for stmt in stmts:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
                for elt in elts:
                    if isinstance(elt, ast.Name) and elt.id not in out:
                        out.append(elt.id)
        elif isinstance(stmt, ast.For):
            _assigned_names(stmt.body, out)

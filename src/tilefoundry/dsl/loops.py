"""``for v in tile(E, step)`` / ``for v in range(...)`` loops (authoring.md §5.6):
one ``GridRegionExpr`` each, with loop-carried rebinding."""
from __future__ import annotations

import ast

from tilefoundry.ir.dim import is_dim, is_static
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Expr, GridRegionExpr, Var
from tilefoundry.ir.shard import ShardLayout
from tilefoundry.ir.tensor_type import TensorType, TupleType, umat_scalar
from tilefoundry.ir.tile_windows import tile_overhang_refusal
from tilefoundry.dsl.window import Window

_LOOP_ALLOWED = (ast.Assign, ast.For)
_UNBOUND = object()


class LoopLocal:
    """A name the loop body bound that does not outlive the loop; reading it
    afterwards is refused (see ``LoopMixin.after_loop``)."""

    __slots__ = ("name", "line", "why")

    def __init__(self, name: str, line: int, why: str):
        self.name, self.line, self.why = name, line, why

    def refusal(self) -> str:
        return (f"'{self.name}' is {self.why} of line {self.line} and does not exist after it: only "
                "names bound to a tensor before the loop are carried out of it (authoring §5.6); bind it before the loop")


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
        if kind == "tile" and is_static(extent):
            overhang = tile_overhang_refusal(extent, step)
            if overhang:
                self.error(stmt, overhang)
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
        for name, phi in zip(carries, phis):
            value = self.locals.get(name)
            if isinstance(value, Window) or not isinstance(value, Expr):
                self.error(stmt, f"loop-carried '{name}' must stay a tensor in the loop body")
            if _distribution(value.type) != _distribution(phi.type):
                self.error(stmt, f"loop-carried '{name}' enters the loop as {_show(phi.type)} but the body "
                                 f"rebinds it to {_show(value.type)}; a carry keeps its shape, dtype, storage "
                                 "and layout across trips (cast/reshard before the loop or bind a new name)")
            yields.append(value)
        after = self.after_loop(stmt, assigned, carries, saved)
        self.locals = saved
        self.locals.update(after)
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

    def after_loop(self, stmt, assigned, carries, saved) -> dict:
        """What the non-carried names of the loop denote after it (§5.6).

        The body is read once for every trip, so a name that is not a carry
        cannot hold "the last trip's value" afterwards. Python would give it
        one, so reading it later must not silently fall back to the value
        before the loop (or to a global of the same name)."""
        line, _ = self.position(stmt)
        after = {stmt.target.id: LoopLocal(stmt.target.id, line, "the loop variable")}
        for name in assigned:
            if name in carries:
                continue
            before, now = saved.get(name, _UNBOUND), self.locals.get(name, _UNBOUND)
            if before is not _UNBOUND:
                if now is before or (_is_number(now) and _is_number(before) and now == before):
                    continue
                what = "a list" if isinstance(before, list) else f"the compile-time value {before!r}"
                self.error(stmt, f"'{name}' is {what} before the loop and is rebound inside it, so it "
                                 "cannot be carried (only tensors are carried; the body is not unrolled): "
                                 f"start it as a tensor, e.g. {name} = tf.zeros(Tensor[...]) or "
                                 "tf.full_like(x, 0.0), or use a new name inside the loop")
            if now is _UNBOUND:
                continue
            if isinstance(now, (Expr, Window, LoopLocal)):
                after[name] = LoopLocal(name, line, "bound only inside the loop")
            else:
                after[name] = now  # a compile-time value is the same on every trip
        return after

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


def _is_number(value) -> bool:
    return isinstance(value, (int, float))  # bool included


def _distribution(type_):
    """A type without its physical strides: what a carry must keep across trips."""
    if isinstance(type_, TupleType):
        return TupleType(tuple(_distribution(f) for f in type_.fields))
    shard = getattr(type_, "layout", None)
    if isinstance(shard, ShardLayout) and shard.layout.strides is not None:
        return type_.with_(layout=shard.with_strides(None))
    return type_


def _show(type_) -> str:
    if isinstance(type_, TensorType):
        layout = "" if type_.layout is None else f", layout {type_.layout}"
        return f"{type_.dtype}{list(type_.shape)} in {type_.storage}{layout}"
    return str(type_)

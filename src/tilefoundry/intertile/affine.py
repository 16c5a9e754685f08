"""Integer sets (`affine_set<(dims)[syms] : (constraints)>`) read exactly with isl.

The AST is kept (not only the isl object) because the writer must print the
set back in MLIR form and errors must point at the offending constraint.
Membership is always decided by isl enumeration, never by sampling.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from tilefoundry.intertile.lexer import TokenStream, describe, tokenize

# Expression nodes are plain tuples: ("var", name) ("const", k) ("add", a, b)
# ("neg", a) ("mul", k, a) ("floordiv"|"ceildiv"|"mod", a, k).
Expr = tuple


@dataclass(frozen=True)
class Constraint:
    lhs: Expr
    op: str  # ">=", "<=", "=="
    rhs: Expr


@dataclass(frozen=True)
class AffineSet:
    dims: tuple[str, ...]
    syms: tuple[str, ...]
    constraints: tuple[Constraint, ...]

    @staticmethod
    def parse(text: str, filename: str = "<set>") -> "AffineSet":
        ts = TokenStream(tokenize(text, filename), filename)
        result = parse_affine_set(ts)
        if ts.peek().kind != "eof":
            ts.fail(ts.peek(), f"unexpected {describe(ts.peek())} after the set")
        return result

    def isl_text(self, extra: str = "", order: tuple[str, ...] | None = None) -> str:
        """isl form with every identifier as a set dimension (params none)."""
        names = order or (self.syms + self.dims)
        rename = {n: f"v{k}" for k, n in enumerate(names)}
        body = " and ".join(
            f"{_isl(c.lhs, rename)} {'=' if c.op == '==' else c.op} {_isl(c.rhs, rename)}"
            for c in self.constraints)
        if extra:
            body = f"({body}) and {extra.format(**rename)}"
        return "{ [" + ", ".join(rename[n] for n in names) + "] : " + body + " }"

    def constraints_text(self, rename: dict[str, str]) -> str:
        """The constraints in isl syntax over the names ``rename`` gives (a
        guard to conjoin with another set's isl_text ``extra``)."""
        return " and ".join(
            f"{_isl(c.lhs, rename)} {'=' if c.op == '==' else c.op} {_isl(c.rhs, rename)}"
            for c in self.constraints)

    def to_text(self) -> str:
        dims = "(" + ", ".join(self.dims) + ")"
        syms = "[" + ", ".join(self.syms) + "]" if self.syms else ""
        cons = ", ".join(f"{expr_text(c.lhs)} {c.op} {expr_text(c.rhs)}"
                         for c in self.constraints)
        return f"affine_set<{dims}{syms} : ({cons})>"


def _isl(e: Expr, rename: dict[str, str]) -> str:
    kind = e[0]
    if kind == "var":
        return rename[e[1]]
    if kind == "const":
        return str(e[1])
    if kind == "add":
        return f"({_isl(e[1], rename)} + {_isl(e[2], rename)})"
    if kind == "neg":
        return f"(-{_isl(e[1], rename)})"
    if kind == "mul":
        return f"({e[1]} * {_isl(e[2], rename)})"
    if kind == "floordiv":
        return f"floor(({_isl(e[1], rename)})/{e[2]})"
    if kind == "ceildiv":
        return f"ceil(({_isl(e[1], rename)})/{e[2]})"
    return f"(({_isl(e[1], rename)}) mod {e[2]})"


def expr_text(e: Expr) -> str:
    kind = e[0]
    if kind == "var":
        return e[1]
    if kind == "const":
        return str(e[1])
    if kind == "add":
        right = e[2]
        if right[0] == "neg":
            return f"{expr_text(e[1])} - {_paren(right[1])}"
        return f"{expr_text(e[1])} + {_paren(right) if right[0] == 'add' else expr_text(right)}"
    if kind == "neg":
        return f"-{_paren(e[1])}"
    if kind == "mul":
        return f"{e[1]} * {_paren(e[2])}"
    return f"{_paren(e[1])} {kind} {e[2]}"


def _paren(e: Expr) -> str:
    return expr_text(e) if e[0] in ("var", "const") else f"({expr_text(e)})"


# ---------------------------------------------------------------- parsing

def parse_affine_set(ts: TokenStream) -> AffineSet:
    start = ts.expect("affine_set", "(an integer set)")
    ts.expect("<")
    dims = _ident_list(ts, "(", ")")
    syms = _ident_list(ts, "[", "]") if ts.at("[") else ()
    names = dims + syms
    if len(set(names)) != len(names):
        ts.fail(start, f"integer set repeats an identifier among {list(names)}",
                "give every dimension and symbol its own name")
    ts.expect(":")
    ts.expect("(")
    constraints = [_constraint(ts, names)]
    while ts.accept(","):
        constraints.append(_constraint(ts, names))
    ts.expect(")")
    ts.expect(">", "to close the integer set")
    return AffineSet(dims, syms, tuple(constraints))


def _ident_list(ts: TokenStream, open_: str, close: str) -> tuple[str, ...]:
    ts.expect(open_)
    names: list[str] = []
    if not ts.at(close):
        names.append(ts.expect_kind("ident", "an identifier").text)
        while ts.accept(","):
            names.append(ts.expect_kind("ident", "an identifier").text)
    ts.expect(close)
    return tuple(names)


def _constraint(ts: TokenStream, names: tuple[str, ...]) -> Constraint:
    lhs = _expr(ts, names)
    tok = ts.peek()
    if tok.text not in (">=", "<=", "=="):
        ts.fail(tok, f"expected '>=', '<=' or '==' in a constraint, found {describe(tok)}",
                "write each constraint as EXPR >= 0 or EXPR == 0")
    ts.next()
    return Constraint(lhs, tok.text, _expr(ts, names))


def _expr(ts: TokenStream, names) -> Expr:
    if ts.accept("-"):
        e = ("neg", _term(ts, names))
    else:
        e = _term(ts, names)
    while ts.at("+") or ts.at("-"):
        op = ts.next().text
        t = _term(ts, names)
        e = ("add", e, t if op == "+" else ("neg", t))
    return e


def _term(ts: TokenStream, names) -> Expr:
    e = _factor(ts, names)
    while True:
        tok = ts.peek()
        if tok.text == "*":
            ts.next()
            rhs = _factor(ts, names)
            if e[0] == "const":
                e = ("mul", e[1], rhs)
            elif rhs[0] == "const":
                e = ("mul", rhs[1], e)
            else:
                ts.fail(tok, "product of two non-constant terms is not affine",
                        "multiply by an integer constant only")
        elif tok.kind == "ident" and tok.text in ("floordiv", "ceildiv", "mod"):
            ts.next()
            k = _factor(ts, names)
            if k[0] != "const" or k[1] <= 0:
                ts.fail(tok, f"'{tok.text}' needs a positive integer constant on its right",
                        "divide only by a positive literal")
            e = (tok.text, e, k[1])
        else:
            return e


def _factor(ts: TokenStream, names) -> Expr:
    tok = ts.peek()
    if tok.kind == "int":
        ts.next()
        return ("const", int(tok.text))
    if tok.kind == "ident" and tok.text not in ("floordiv", "ceildiv", "mod"):
        ts.next()
        if tok.text not in names:
            ts.fail(tok, f"identifier '{tok.text}' is not declared in the set's "
                         f"dimensions or symbols {list(names)}",
                    "declare it in (dims) or [symbols]")
        return ("var", tok.text)
    if tok.text == "(":
        ts.next()
        with ts.nest(tok):
            e = _expr(ts, names)
        ts.expect(")")
        return e
    if tok.text == "-":
        ts.next()
        with ts.nest(tok):
            return ("neg", _factor(ts, names))
    ts.fail(tok, f"expected an affine expression, found {describe(tok)}")
    raise AssertionError  # unreachable


# ------------------------------------------------------------ enumeration

def count(isl_text: str) -> int:
    """How many integer points a bounded isl set holds (counted, not listed)."""
    import islpy as isl

    return isl.Set(isl_text).count_val().to_python()


@lru_cache(maxsize=4096)
def points(isl_text: str) -> tuple[tuple[int, ...], ...]:
    """All integer points of a bounded isl set, sorted; cached by text. Callers
    bound the count first (model.enumerate_points): listing is linear in it."""
    import islpy as isl

    s = isl.Set(isl_text)
    if not s.is_bounded():
        raise ValueError("unbounded")
    texts: list[str] = []
    # a point's text `{ [1, 2, 2] }` is one C call; reading each coordinate as
    # an isl Val costs several per point (twice the time on 100k-point sets)
    s.foreach_point(lambda pt: texts.append(pt.to_str()))
    n = s.dim(isl.dim_type.set)
    numbers = iter(map(int, re.findall(r"-?\d+", " ".join(texts))))  # no params: only coordinates
    return tuple(sorted(zip(*[numbers] * n))) if n else tuple(() for _ in texts)


def is_bounded(isl_text: str) -> bool:
    import islpy as isl

    return bool(isl.Set(isl_text).is_bounded())


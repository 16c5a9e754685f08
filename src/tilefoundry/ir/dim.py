"""Shape dimensions: half-open DimVars and dim expressions in one normal form.

Affine combinations of DimVars are kept as ``DimExpr`` in a canonical sorted
form (companions §1.4); non-affine results (floordiv, mod, min, max, products of
two symbolic dims) stay as ``DimOp`` nodes over normalised operands. Every
all-constant expression collapses to a plain ``int``.
"""
from __future__ import annotations

from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.immutable import ImmutableValue

import math
import operator
from typing import Union

from tilefoundry.errors import VerifyError
from tilefoundry.ir.declared import located, remember

Dim = Union[int, "DimVar", "DimExpr", "DimOp"]


class _DimArith(ImmutableValue):
    """Python operators on symbolic dims build normalised dim expressions."""

    def __add__(self, other):
        return dim_add(self, other)

    def __radd__(self, other):
        return dim_add(other, self)

    def __sub__(self, other):
        return dim_sub(self, other)

    def __rsub__(self, other):
        return dim_sub(other, self)

    def __mul__(self, other):
        return dim_mul(self, other)

    def __rmul__(self, other):
        return dim_mul(other, self)

    def __floordiv__(self, other):
        return dim_floordiv(self, other)

    def __rfloordiv__(self, other):
        return dim_floordiv(other, self)

    def __mod__(self, other):
        return dim_mod(self, other)

    def __rmod__(self, other):
        return dim_mod(other, self)

    def __neg__(self):
        return dim_mul(-1, self)


_DIMVAR_CACHE: dict[tuple, "DimVar"] = {}


class DimVar(_DimArith):
    """A named symbolic extent ranging over the half-open ``[lo, hi)``.

    One canonical instance per ``(name, lo, hi, default)``, so identity is value
    identity. ``default`` (an int inside the range, or None) is the extent the
    declaration states for a caller that binds none: a kernel's run-time
    quantity priced at a stated value (the zoo's attended length ``kv_len``,
    default the last position) is bound like any dim when the caller states it
    and takes the author's value otherwise, as a fixed ``[k, k + 1)`` takes ``k``.
    """

    __slots__ = ("name", "lo", "hi", "default")

    def __new__(cls, name: str, lo: int, hi: int, default: int | None = None):
        _check_dimvar_fields(name, lo, hi)
        _check_default(name, lo, hi, default)
        remember(("DimVar", name))  # where a refusal of its binding points (issue 40 item 7)
        key = (name, lo, hi, default)
        cached = _DIMVAR_CACHE.get(key)
        if cached is not None:
            return cached
        self = super().__new__(cls)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)
        object.__setattr__(self, "default", default)
        _DIMVAR_CACHE[key] = self
        return self

    def __setattr__(self, key, value):
        raise AttributeError("DimVar is immutable")

    def __reduce__(self):
        return (DimVar, (self.name, self.lo, self.hi, self.default))

    def __repr__(self) -> str:
        tail = "" if self.default is None else f", default={self.default}"
        return f"DimVar({self.name!r}, {self.lo}, {self.hi}{tail})"

    def __str__(self) -> str:
        return self.name

    def __hash__(self) -> int:
        return hash(("DimVar", self.name, self.lo, self.hi, self.default))

    def __eq__(self, other) -> bool:
        return self is other

    @property
    def is_fixed(self) -> bool:
        return self.hi == self.lo + 1

    @property
    def unbound_extent(self) -> int | None:
        """The extent a caller that states none gets: a fixed size's one value, the
        declared default, else None (the caller must bind it)."""
        return self.lo if self.is_fixed else self.default


def _check_dimvar_fields(name, lo, hi) -> None:
    if not isinstance(name, str) or not name:
        raise VerifyError(f"DimVar: name must be a non-empty str, got {name!r}")
    for label, bound in (("lo", lo), ("hi", hi)):
        if isinstance(bound, bool) or not isinstance(bound, int):
            raise VerifyError(f"DimVar {name!r}: {label} must be an int, got {bound!r}")
    if not lo < hi:
        raise VerifyError(f"DimVar {name!r}: needs lo < hi (half-open), got [{lo}, {hi})")


def _check_default(name, lo, hi, default) -> None:
    if default is None:
        return
    if isinstance(default, bool) or not isinstance(default, int):
        raise VerifyError(f"DimVar {name!r}: default must be an int extent or None, got {default!r}")
    if not lo <= default < hi:
        raise VerifyError(f"DimVar {name!r}: default {default} lies outside its range [{lo}, {hi}); "
                          f"state a default inside it")


@frozen_record
class DimExpr(_DimArith):
    """``const + Σ coeff·atom`` with atoms sorted; atoms are DimVars or DimOps."""

    terms: tuple  # ((atom, coeff), ...) sorted by atom key, coeff != 0
    const: int = 0

    def __repr__(self) -> str:
        return format_dim(self)

    __str__ = __repr__


@frozen_record
class DimOp(_DimArith):
    """A non-affine dim operation kept symbolic: floordiv, exactdiv (a division
    every binding must make exact), mod, min, max, mul."""

    kind: str
    lhs: object
    rhs: object

    def __repr__(self) -> str:
        return format_dim(self)

    __str__ = __repr__


def is_dim(value: object) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(
        value, (DimVar, DimExpr, DimOp)
    )


def is_static(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_operand(value: object) -> object:
    if isinstance(value, bool) or not is_dim(value):
        raise VerifyError(f"dim arithmetic: unsupported operand {value!r}")
    return value


def _atom_key(atom) -> str:
    return format_dim(atom)


def _linear(value) -> tuple[dict, int]:
    """Read a dim as (atom -> coeff, const)."""
    if isinstance(value, int):
        return {}, value
    if isinstance(value, DimExpr):
        return dict(value.terms), value.const
    return {value: 1}, 0


def _from_linear(terms: dict, const: int):
    if any(type(atom) is DimOp and atom.kind == "exactdiv" for atom in terms):
        terms, const = _fold_exact(terms, const)
    kept = [(atom, coeff) for atom, coeff in terms.items() if coeff != 0]
    if not kept:
        return const
    if len(kept) == 1 and kept[0][1] == 1 and const == 0:
        return kept[0][0]
    kept.sort(key=lambda item: _atom_key(item[0]))
    return DimExpr(tuple(kept), const)


def _fold_exact(terms: dict, const: int) -> tuple[dict, int]:
    """``c * (x exactdiv d)`` with ``d | c`` is ``(c / d) * x``: the units' shares
    of an evenly split extent multiply back to the extent."""
    folded: dict = {}
    for atom, coeff in terms.items():
        if type(atom) is DimOp and atom.kind == "exactdiv" and isinstance(atom.rhs, int) \
                and coeff % atom.rhs == 0:
            inner, inner_const = _linear(atom.lhs)
            for part, c in inner.items():
                folded[part] = folded.get(part, 0) + c * (coeff // atom.rhs)
            const += inner_const * (coeff // atom.rhs)
        else:
            folded[atom] = folded.get(atom, 0) + coeff
    return folded, const


def dim_add(lhs, rhs):
    lhs, rhs = _check_operand(lhs), _check_operand(rhs)
    lterms, lconst = _linear(lhs)
    rterms, rconst = _linear(rhs)
    for atom, coeff in rterms.items():
        lterms[atom] = lterms.get(atom, 0) + coeff
    return _from_linear(lterms, lconst + rconst)


def dim_sub(lhs, rhs):
    return dim_add(lhs, dim_mul(-1, _check_operand(rhs)))


def dim_mul(lhs, rhs):
    lhs, rhs = _check_operand(lhs), _check_operand(rhs)
    if isinstance(lhs, int) and isinstance(rhs, int):
        return lhs * rhs
    if isinstance(rhs, int):
        lhs, rhs = rhs, lhs
    if isinstance(lhs, int):
        terms, const = _linear(rhs)
        return _from_linear({a: c * lhs for a, c in terms.items()}, const * lhs)
    return _symbolic("mul", lhs, rhs)


def dim_floordiv(lhs, rhs):
    lhs, rhs = _check_operand(lhs), _check_operand(rhs)
    if isinstance(rhs, int):
        if rhs == 0:
            raise VerifyError("dim arithmetic: division by zero")
        if isinstance(lhs, int):
            return lhs // rhs
        terms, const = _linear(lhs)
        if all(c % rhs == 0 for c in terms.values()) and const % rhs == 0:
            return _from_linear({a: c // rhs for a, c in terms.items()}, const // rhs)
        if rhs == 1:
            return lhs
    return _symbolic("floordiv", lhs, rhs)


def dim_exactdiv(lhs, rhs):
    """``lhs / rhs`` where ``lhs`` must be a multiple of ``rhs``: the extent one
    unit holds of a symbolic extent split evenly over a mesh axis of ``rhs``
    units (issue 40 item 2). Affine when the coefficients show the division is
    exact (``16 * chunk`` over 16 is ``chunk``); otherwise kept symbolic, and a
    binding that makes ``lhs`` a number which is no multiple of ``rhs`` is
    refused (``substitute`` names the binding)."""
    lhs, rhs = _check_operand(lhs), _check_operand(rhs)
    if isinstance(rhs, int):
        if rhs <= 0:
            raise VerifyError(f"dim arithmetic: an exact division by {rhs}; split over a positive extent")
        if isinstance(lhs, int):
            if lhs % rhs:
                raise VerifyError(f"{lhs} is not a multiple of {rhs}, which splits it evenly")
            return lhs // rhs
        terms, const = _linear(lhs)
        if all(c % rhs == 0 for c in terms.values()) and const % rhs == 0:
            return _from_linear({a: c // rhs for a, c in terms.items()}, const // rhs)
    if isinstance(lhs, DimVar) and isinstance(rhs, int):
        _EXACT_DIVISORS[lhs] = math.lcm(_EXACT_DIVISORS.get(lhs, 1), rhs)
    return _symbolic("exactdiv", lhs, rhs)


#: DimVar -> the divisor its exact divisions ask of a binding (the lcm), so an
#: advice of extents to bind names only multiples of it
_EXACT_DIVISORS: dict = {}


def exact_divisor(var: "DimVar") -> int:
    """What every binding of ``var`` must be a multiple of (1: nothing asked)."""
    return _EXACT_DIVISORS.get(var, 1)


def dim_mod(lhs, rhs):
    lhs, rhs = _check_operand(lhs), _check_operand(rhs)
    if isinstance(lhs, int) and isinstance(rhs, int):
        return lhs % rhs
    if isinstance(rhs, int) and rhs == 1:
        return 0
    return _symbolic("mod", lhs, rhs)


def dim_min(lhs, rhs):
    lhs, rhs = _check_operand(lhs), _check_operand(rhs)
    if isinstance(lhs, int) and isinstance(rhs, int):
        return min(lhs, rhs)
    if lhs == rhs:
        return lhs
    return _symbolic("min", lhs, rhs)


def dim_max(lhs, rhs):
    lhs, rhs = _check_operand(lhs), _check_operand(rhs)
    if isinstance(lhs, int) and isinstance(rhs, int):
        return max(lhs, rhs)
    if lhs == rhs:
        return lhs
    return _symbolic("max", lhs, rhs)


def ceildiv(lhs, rhs):
    """``(a + b - 1) // b`` composed from existing dim ops (no op of its own)."""
    return dim_floordiv(dim_add(lhs, dim_sub(rhs, 1)), rhs)


def _symbolic(kind: str, lhs, rhs) -> DimOp:
    if kind in ("mul", "min", "max") and _atom_key(rhs) < _atom_key(lhs):
        lhs, rhs = rhs, lhs  # commutative: one normal form
    return DimOp(kind, lhs, rhs)


_EVAL = {
    "mul": operator.mul,
    "floordiv": operator.floordiv,
    "exactdiv": operator.floordiv,
    "mod": operator.mod,
    "min": min,
    "max": max,
}
_BUILD = {
    "mul": dim_mul,
    "floordiv": dim_floordiv,
    "exactdiv": dim_exactdiv,
    "mod": dim_mod,
    "min": dim_min,
    "max": dim_max,
}


def substitute(value, bindings: dict[str, int]):
    """Replace every DimVar bound by name; returns an int when all are bound."""
    if isinstance(value, int):
        return value
    if isinstance(value, DimVar):
        return bindings.get(value.name, value)
    if isinstance(value, DimExpr):
        result = value.const
        for atom, coeff in value.terms:
            result = dim_add(result, dim_mul(coeff, substitute(atom, bindings)))
        return result
    if isinstance(value, DimOp):
        lhs, rhs = substitute(value.lhs, bindings), substitute(value.rhs, bindings)
        if value.kind == "exactdiv" and isinstance(lhs, int) and isinstance(rhs, int) and lhs % rhs:
            raise _not_a_multiple(value, lhs, rhs, bindings)
        return _BUILD[value.kind](lhs, rhs)
    return value


def _not_a_multiple(value: "DimOp", lhs: int, rhs: int, bindings: dict):
    """A binding under which a symbolic extent split evenly over ``rhs`` units
    is no multiple of ``rhs``: named, with the nearest multiples."""
    from tilefoundry.errors import DimBindingError, binding_text

    names = [var.name for var in free_dimvars(value.lhs) if var.name in bindings]
    bound = ", ".join(binding_text(name, bindings[name]) for name in names)
    extent = format_dim(value.lhs)
    said = f"{extent} = {lhs}" if extent not in names else f"{extent}"
    below, above = lhs - lhs % rhs, lhs - lhs % rhs + rhs
    fix = f"e.g. {binding_text(names[0], below)} or {above}" if len(names) == 1 and extent == names[0] \
        else f"so that {extent} is a multiple of {rhs}"
    message = (f"{bound}: {said} is split evenly over a mesh axis of {rhs}, but {lhs} is not a "
               f"multiple of {rhs}; bind a multiple of {rhs} ({fix})")
    # led by where the dimension is declared (ir/declared.py), as every refusal of a binding
    return DimBindingError(located(("DimVar", names[0]), message) if len(names) == 1 else message)


def free_dimvars(value) -> tuple[DimVar, ...]:
    """The DimVars a dim mentions, in first-occurrence order."""
    found: list[DimVar] = []

    def walk(item):
        if isinstance(item, DimVar):
            if item not in found:
                found.append(item)
        elif isinstance(item, DimExpr):
            for atom, _ in item.terms:
                walk(atom)
        elif isinstance(item, DimOp):
            walk(item.lhs)
            walk(item.rhs)

    walk(value)
    return tuple(found)


def is_affine(value) -> bool:
    if isinstance(value, (int, DimVar)):
        return True
    if isinstance(value, DimExpr):
        return all(isinstance(atom, DimVar) for atom, _ in value.terms)
    return False


def is_quasi_affine(value) -> bool:
    """Affine, or built with floor division / modulo / min / max by constants
    and affine pieces: what an isl parameter expression can state."""
    if is_affine(value):
        return True
    if isinstance(value, DimExpr):
        return all(is_quasi_affine(atom) for atom, _ in value.terms)
    if isinstance(value, DimOp):
        if value.kind in ("floordiv", "exactdiv", "mod"):
            return isinstance(value.rhs, int) and is_quasi_affine(value.lhs)
        if value.kind in ("min", "max"):
            return is_quasi_affine(value.lhs) and is_quasi_affine(value.rhs)
    return False


def format_dim(value) -> str:
    """Python source spelling of a dim (DimVars by name)."""
    if isinstance(value, int):
        return str(value)
    if isinstance(value, DimVar):
        return value.name
    if isinstance(value, DimExpr):
        parts = []
        for atom, coeff in value.terms:
            text = format_dim(atom)
            if isinstance(atom, DimOp):
                text = f"({text})"
            if coeff == 1:
                parts.append(text)
            else:
                parts.append(f"{coeff} * {text}")
        if value.const:
            parts.append(str(value.const))
        return " + ".join(parts).replace("+ -", "- ")
    if isinstance(value, DimOp):
        # an exact division reads as the floor division it equals (the binding is checked)
        symbol = {"mul": "*", "floordiv": "//", "exactdiv": "//", "mod": "%"}.get(value.kind)
        lhs, rhs = format_dim(value.lhs), format_dim(value.rhs)
        if symbol is None:
            return f"dim_{value.kind}({lhs}, {rhs})"
        wrap = lambda s, v: f"({s})" if isinstance(v, (DimExpr, DimOp)) else s
        return f"{wrap(lhs, value.lhs)} {symbol} {wrap(rhs, value.rhs)}"
    return repr(value)


def simplify_dim(value):
    """Normalise any dim-like value (ints stay ints)."""
    return substitute(_check_operand(value), {})

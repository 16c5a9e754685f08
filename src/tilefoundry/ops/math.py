"""Elementwise math: Binary, Unary, Clamp, activations, Where.

Each op: the class, its typeinfer (dtype/shape rules, storage anchoring, its own
commuting judgment for Partial inputs, layout through the shared propagation
service) and its access relation, side by side.
"""
from __future__ import annotations

from enum import Enum
from math import ceil, floor
from math import erf as _erf
from math import pi as _pi
from typing import ClassVar

from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Op
from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.tensor_type import TensorType, numel
from tilefoundry.ops._common import (
    broadcast_relations,
    broadcast_shapes,
    elementwise_relations,
    plain_layout_for,
    propagate,
)
from tilefoundry.semantics.cost import (
    Cost,
    all_read_write,
    elementwise_flops,
    kind_name,
    leaf_dtype,
    register_cost,
)
from tilefoundry.semantics.op_numerics import f32, np
from tilefoundry.semantics.op_registry import (
    register_access_relation,
    register_alias,
    register_cost_evaluator,
    register_evaluator,
    register_op,
    register_typeinfer,
)
from tilefoundry.semantics.shard_propagation import check_partials
from tilefoundry.semantics.storage_anchor import anchor_storage


class BinaryKind(str, Enum):
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    FLOOR_DIV = "floor_div"
    MOD = "mod"
    MIN = "min"
    MAX = "max"
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    AND = "and"
    OR = "or"

    def __str__(self) -> str:
        return self.value


class UnaryKind(str, Enum):
    NEG = "neg"
    ABS = "abs"
    RSQRT = "rsqrt"
    CAST = "cast"
    NOT = "not"
    RELU = "relu"
    SQUARE = "square"
    EXP = "exp"
    LOG = "log"
    CEIL = "ceil"
    ROUND = "round"
    EXP2 = "exp2"
    LOG2 = "log2"

    def __str__(self) -> str:
        return self.value


_COMPARISONS = {BinaryKind.EQ, BinaryKind.NE, BinaryKind.LT, BinaryKind.LE, BinaryKind.GT, BinaryKind.GE}
_LOGICAL = {BinaryKind.AND, BinaryKind.OR}
_INTEGER_ONLY = {BinaryKind.FLOOR_DIV, BinaryKind.MOD}
_FLOAT_UNARY = {UnaryKind.RSQRT, UnaryKind.EXP, UnaryKind.LOG, UnaryKind.EXP2, UnaryKind.LOG2,
                UnaryKind.CEIL, UnaryKind.ROUND}
# monotone non-decreasing: f(max(x_i)) == max(f(x_i)), likewise for min
_MONOTONE_UNARY = {UnaryKind.EXP, UnaryKind.EXP2, UnaryKind.LOG, UnaryKind.LOG2, UnaryKind.CEIL,
                   UnaryKind.ROUND, UnaryKind.RELU}


# ---------------------------------------------------------------- Binary


@register_op
@frozen_record
class Binary(Op):
    """An elementwise arithmetic, comparison or logical op of two broadcast operands, chosen by
    ``kind``."""

    kind: BinaryKind

    name: ClassVar[str] = "binary"
    inputs: ClassVar[tuple] = ("lhs", "rhs")
    attr_kinds: ClassVar[dict] = {"kind": "kind:BinaryKind"}


for _alias, _kind in (
    ("add", "ADD"), ("sub", "SUB"), ("mul", "MUL"), ("div", "DIV"), ("floor_div", "FLOOR_DIV"),
    ("mod", "MOD"), ("min", "MIN"), ("minimum", "MIN"), ("max", "MAX"), ("maximum", "MAX"),
    ("cmp_eq", "EQ"), ("cmp_ne", "NE"), ("cmp_lt", "LT"), ("cmp_le", "LE"), ("cmp_gt", "GT"),
    ("cmp_ge", "GE"), ("logical_and", "AND"), ("logical_or", "OR"),
):
    register_alias(_alias, Binary, kind=BinaryKind[_kind])


def _binary_partial_rule(kind: BinaryKind, types):
    """The Binary commuting judgment, per mesh axis (spec §3.2 rule 4).

    - ADD/SUB: both operands Partial("sum") on that axis;
    - MUL: one Partial("sum") operand, the other not Partial (replicated there);
    - DIV: a Partial("sum") dividend over a non-Partial divisor;
    - MAX/MIN: Partial("max"/"min") of the same kind on both, or one of them with
      the other not Partial.
    """
    def reductions(m):
        out = []
        for t in types:
            shard = t.shard if isinstance(t, TensorType) else None
            attr = shard.attrs[m] if shard is not None else None
            out.append(getattr(attr, "reduction", None))
        return out

    def allowed(i, m, reduction):
        rs = reductions(m)
        other = rs[1 - i]
        if kind in (BinaryKind.ADD, BinaryKind.SUB):
            return reduction == "sum" and other == "sum"
        if kind == BinaryKind.MUL:
            return reduction == "sum" and other is None
        if kind == BinaryKind.DIV:
            return reduction == "sum" and i == 0 and other is None
        if kind == BinaryKind.MAX:
            return reduction == "max" and other in (None, "max")
        if kind == BinaryKind.MIN:
            return reduction == "min" and other in (None, "min")
        return False

    return allowed


def _mismatch_remedy(ctx) -> str:
    """Name the number the user wrote, when one side is a literal."""
    for position in (0, 1):
        value = ctx.constant_value(position)
        if value is not None and not isinstance(value, bool):
            dtype = ctx.arg_types[position].dtype
            return (f"The number {value!r} you wrote (operand {position}) is {dtype} -- "
                    "tf.full_like(x, value=...) gives it x's dtype; otherwise tf.cast one side explicitly.")
    return "tf.cast one side explicitly."


@register_typeinfer(Binary)
def _binary_typeinfer(op: Binary, ctx):
    label = f"Binary {op.kind.name}: "
    lhs = ctx.tensor(0, "lhs")
    rhs = ctx.tensor(1, "rhs")
    if lhs.dtype != rhs.dtype:
        ctx.error(f"{label}dtype mismatch ({lhs.dtype} vs {rhs.dtype}); tensor operands are never "
                  f"promoted for you. {_mismatch_remedy(ctx)}")
    kind = op.kind
    if kind in _LOGICAL and not lhs.dtype.is_bool:
        ctx.error(f"{label}lhs (operand 0) is {lhs.dtype}; {kind.value} needs bool operands; "
                  "compare first (tf.cmp_ne(x, 0)) to get a bool tensor")
    if kind in _INTEGER_ONLY and not lhs.dtype.is_int:
        ctx.error(f"{label}lhs (operand 0) is {lhs.dtype}; {kind.value} needs i32/i64 operands; "
                  "use div for floats, or tf.cast to an integer dtype")
    shape = broadcast_shapes(ctx, (lhs.shape, rhs.shape), label)
    dtype = DType.bool if (kind in _COMPARISONS or kind in _LOGICAL) else lhs.dtype
    storage = anchor_storage(ctx, (lhs, rhs))
    check_partials(ctx, _binary_partial_rule(kind, (lhs, rhs)), roles=("lhs", "rhs"),
                   what=kind.value, prefix=label)
    relations = broadcast_relations((lhs, rhs), shape)
    layout = propagate(ctx, relations, shape, prefix=label, roles=("lhs", "rhs"))
    if layout is None:
        layout = plain_layout_for(shape, storage, (lhs, rhs))
    return TensorType(shape, dtype, layout, storage)


@register_access_relation(Binary)
def _binary_relation(op, ctx):
    lhs, rhs = ctx.arg_types
    shape = _broadcast_plain(lhs.shape, rhs.shape)
    return broadcast_relations((lhs, rhs), shape)


def _broadcast_plain(*shapes):
    rank = max(len(s) for s in shapes)
    out = []
    for k in range(rank):
        e = 1
        for s in shapes:
            j = k - (rank - len(s))
            if j >= 0 and s[j] != 1:
                e = s[j]
        out.append(e)
    return tuple(out)


@register_cost_evaluator(Binary)
def _binary_cost(call, ctx):
    """Comparisons and logical kinds: predicate service; an integer result:
    integer service; otherwise one flop per output element (companions §5.2)."""
    return _classified_cost(call, ctx, _PREDICATE_BINARY, set())


_PREDICATE_BINARY = {"eq", "ne", "lt", "le", "gt", "ge", "and", "or"}


def _classified_cost(call, ctx, predicate: set, special: set) -> Cost:
    out = ctx.selected_output_type
    count = numel(out)
    kind = kind_name(call.op)
    traffic = all_read_write(call)
    if kind in predicate:
        return Cost({}, traffic, {"predicate": count})
    if kind in special:
        return Cost({}, traffic, {"special": count})
    dtype = leaf_dtype(out)
    if dtype.is_int:
        return Cost({}, traffic, {"integer": count})
    return Cost({dtype: count}, traffic, {})


# numpy ufunc per kind (int DIV excepted: it truncates, see _binary_eval)
_BINARY_UFUNCS = {
    BinaryKind.ADD: "add", BinaryKind.SUB: "subtract", BinaryKind.MUL: "multiply",
    BinaryKind.DIV: "divide", BinaryKind.FLOOR_DIV: "floor_divide", BinaryKind.MOD: "mod",
    BinaryKind.MIN: "minimum", BinaryKind.MAX: "maximum", BinaryKind.EQ: "equal",
    BinaryKind.NE: "not_equal", BinaryKind.LT: "less", BinaryKind.LE: "less_equal",
    BinaryKind.GT: "greater", BinaryKind.GE: "greater_equal", BinaryKind.AND: "logical_and",
    BinaryKind.OR: "logical_or",
}
_DIVISIONS = {BinaryKind.DIV, BinaryKind.FLOOR_DIV, BinaryKind.MOD}


@register_evaluator(Binary)
def _binary_eval(op, args, ctx):
    """Floats in f32 (IEEE: x/0 is inf or NaN), rounded once by the runner; integers exact in
    their dtype, wrapping as two's complement. Integer ``div`` truncates toward zero, as C and a
    GPU's integer division do; ``floor_div``/``mod`` floor as Python's; a zero divisor is refused.
    Arithmetic on bool (add, sub, mul, div), which typeinfer lets through, is refused."""
    kind = op.kind
    lhs, rhs = f32(args[0]), f32(args[1])
    if lhs.dtype.kind == "b" and kind in (BinaryKind.ADD, BinaryKind.SUB, BinaryKind.MUL,
                                          BinaryKind.DIV):
        ctx.error(f"Binary {kind.name} of bool operands is no arithmetic; use logical_and/"
                  "logical_or, or tf.cast to i32 first")
    integer = lhs.dtype.kind in "iu"
    if integer and kind in _DIVISIONS and not np.all(rhs != 0):
        ctx.error(f"Binary {kind.name}: integer division by zero (rhs holds a 0)")
    with np.errstate(all="ignore"):
        if integer and kind == BinaryKind.DIV:
            return _trunc_div(lhs, rhs)
        return getattr(np, _BINARY_UFUNCS[kind])(lhs, rhs)


def _trunc_div(lhs, rhs):
    """Integer quotient rounded toward zero (C), from numpy's floor quotient: one up where the
    division is inexact and the signs differ."""
    quotient = np.floor_divide(lhs, rhs)
    return quotient + ((quotient * rhs != lhs) & ((lhs < 0) != (rhs < 0))).astype(quotient.dtype)


# ---------------------------------------------------------------- Unary and activations


def _elementwise_type(ctx, x: TensorType, *, what: str, commutes) -> TensorType:
    check_partials(ctx, lambda i, m, r: commutes(r), roles=("x",), what=what)
    relations = elementwise_relations((x,))
    layout = propagate(ctx, relations, x.shape, roles=("x",))
    if layout is None:
        layout = plain_layout_for(x.shape, x.storage, (x,))
    return TensorType(x.shape, x.dtype, layout, x.storage)


@register_op
@frozen_record
class Unary(Op):
    """An elementwise one-operand op chosen by ``kind`` (neg, exp, rsqrt, cast-like kinds, ...)."""

    kind: UnaryKind

    name: ClassVar[str] = "unary"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {"kind": "kind:UnaryKind"}


register_alias("logical_not", Unary, kind=UnaryKind.NOT)
for _alias in ("neg", "abs", "rsqrt", "exp", "log", "square", "ceil", "round", "exp2", "log2"):
    register_alias(_alias, Unary, kind=UnaryKind[_alias.upper()])


@register_typeinfer(Unary)
def _unary_typeinfer(op: Unary, ctx):
    x = ctx.tensor(0, "x")
    kind = op.kind
    if kind == UnaryKind.CAST:
        ctx.error("x (operand 0): Unary kind cast has no target dtype; use tf.cast(x, dtype)")
    if kind == UnaryKind.NOT and not x.dtype.is_bool:
        ctx.error(f"x (operand 0) is {x.dtype}; Unary NOT needs a bool operand; compare first "
                  "(tf.cmp_ne(x, 0))")
    if kind in _FLOAT_UNARY and not x.dtype.is_float:
        ctx.error(f"x (operand 0) is {x.dtype}; Unary {kind.name} needs a float operand; "
                  "tf.cast(x, 'f32') first")

    def commutes(reduction):
        if kind == UnaryKind.NEG:
            return reduction == "sum"
        return kind in _MONOTONE_UNARY and reduction in ("max", "min")

    return _elementwise_type(ctx, x, what=kind.value, commutes=commutes)


@register_op
@frozen_record
class Clamp(Op):
    """Elementwise clamp of ``x`` into ``[min_val, max_val]``."""

    min_val: float
    max_val: float

    name: ClassVar[str] = "clamp"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {"min_val": "float", "max_val": "float"}


@register_typeinfer(Clamp)
def _clamp_typeinfer(op: Clamp, ctx):
    x = ctx.tensor(0, "x")
    if op.min_val > op.max_val:
        ctx.error(f"attribute min_val {op.min_val} is greater than max_val {op.max_val}; "
                  "swap them")
    return _elementwise_type(ctx, x, what="clamp", commutes=lambda r: r in ("max", "min"))


@register_evaluator(Clamp)
def _clamp_eval(op, args, ctx):
    """``min(max(x, min_val), max_val)``: floats in f32 against the bounds rounded to f32 (NaN
    stays NaN; the runner's rounding may step past a bound the dtype cannot hold); integers
    exactly, against ceil(min_val) and floor(max_val) held to the dtype's range."""
    x = f32(args[0])
    if x.dtype.kind == "b":
        ctx.error("clamp of a bool operand has no order to clamp in; tf.cast to i32 first")
    if op.min_val != op.min_val or op.max_val != op.max_val:
        ctx.error(f"clamp bounds ({op.min_val}, {op.max_val}) hold a NaN; every element would be one")
    if x.dtype.kind == "f":
        return np.minimum(np.maximum(x, np.float32(op.min_val)), np.float32(op.max_val))
    info = np.iinfo(x.dtype)
    low = ceil(min(max(op.min_val, info.min), info.max))
    high = floor(min(max(op.max_val, info.min), info.max))
    return np.clip(x, x.dtype.type(low), x.dtype.type(high))


def _activation(cls_name: str, tf_name: str, monotone: bool, doc: str):
    """Declare a one-input float activation (Softplus, Silu, Sigmoid, Tanh, ReLU)."""
    namespace = {
        "__doc__": doc,  # stated, so that dataclass need not build one from the signature
        "__annotations__": {},
        "name": tf_name,
        "inputs": ("x",),
        "attr_kinds": {},
        "__module__": __name__,
        "__qualname__": cls_name,
    }
    namespace["__annotations__"] = {"name": ClassVar[str], "inputs": ClassVar[tuple],
                                    "attr_kinds": ClassVar[dict]}
    cls = frozen_record(type(cls_name, (Op,), namespace))
    register_op(cls)

    @register_typeinfer(cls)
    def _typeinfer(op, ctx):
        x = ctx.tensor(0, "x")
        if not x.dtype.is_float:
            ctx.error(f"x (operand 0) is {x.dtype}; {tf_name} needs a float operand; "
                      "tf.cast(x, 'f32') first")
        return _elementwise_type(ctx, x, what=tf_name,
                                 commutes=lambda r: monotone and r in ("max", "min"))

    register_access_relation(cls)(_elementwise_relation)
    return cls


def _elementwise_relation(op, ctx):
    return elementwise_relations(ctx.arg_types)


@register_cost_evaluator(Unary)
def _unary_cost(call, ctx):
    """`not`: predicate; rsqrt/exp/log/exp2/log2: special service (§5.2)."""
    return _classified_cost(call, ctx, {"not"}, {"rsqrt", "exp", "log", "exp2", "log2"})


_UNARY_UFUNCS = {
    UnaryKind.NEG: "negative", UnaryKind.ABS: "absolute", UnaryKind.NOT: "logical_not",
    UnaryKind.SQUARE: "square", UnaryKind.EXP: "exp", UnaryKind.LOG: "log",
    UnaryKind.CEIL: "ceil", UnaryKind.ROUND: "rint", UnaryKind.EXP2: "exp2", UnaryKind.LOG2: "log2",
}


@register_evaluator(Unary)
def _unary_eval(op, args, ctx):
    """Floats in f32 (rsqrt as 1/sqrt there; ``round`` is half to even, as numpy and torch;
    log of 0 is -inf, of a negative NaN), rounded once by the runner; integers exact, wrapping as
    two's complement: neg and abs of the dtype's minimum (INT_MIN, -2^31 for i32) are INT_MIN itself,
    as a GPU's integer negate gives. neg/abs/square/relu of bool, which typeinfer lets through, are
    refused."""
    kind = op.kind
    x = f32(args[0])
    if kind == UnaryKind.CAST:
        ctx.error("Unary kind cast has no target dtype; use tf.cast(x, dtype)")
    if x.dtype.kind == "b" and kind != UnaryKind.NOT:
        ctx.error(f"Unary {kind.name} of a bool operand is no arithmetic; tf.cast to i32 first")
    with np.errstate(all="ignore"):
        if kind == UnaryKind.RSQRT:
            return np.float32(1) / np.sqrt(x)
        if kind == UnaryKind.RELU:
            return np.maximum(x, x.dtype.type(0))
        return getattr(np, _UNARY_UFUNCS[kind])(x)


Softplus = _activation("Softplus", "softplus", True, "Elementwise ``log(1 + exp(x))``.")


@register_evaluator(Softplus)
def _softplus_eval(op, args, ctx):
    """``log(1 + exp(x))`` in f32 as ``logaddexp(0, x)``: exp never overflows for large x (the
    result is x there) and small results keep their precision."""
    return np.logaddexp(np.float32(0), f32(args[0]))


def _sigmoid(x):
    """``1 / (1 + exp(-x))`` in f32 through ``e = exp(-|x|)``, which never overflows: ``1/(1+e)``
    for x >= 0, ``e/(1+e)`` below, so a large negative x keeps its tiny value instead of 0."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, np.float32(1) / (np.float32(1) + e), e / (np.float32(1) + e))


Silu = _activation("Silu", "silu", False, "Elementwise ``x * sigmoid(x)``.")


@register_evaluator(Silu)
def _silu_eval(op, args, ctx):
    """``x * sigmoid(x)`` in f32, sigmoid as for Sigmoid."""
    x = f32(args[0])
    return x * _sigmoid(x)


Sigmoid = _activation("Sigmoid", "sigmoid", True, "Elementwise logistic ``1 / (1 + exp(-x))``.")


@register_evaluator(Sigmoid)
def _sigmoid_eval(op, args, ctx):
    """``1 / (1 + exp(-x))`` in f32, in the form that cannot overflow (``_sigmoid``)."""
    return _sigmoid(f32(args[0]))


Tanh = _activation("Tanh", "tanh", True, "Elementwise hyperbolic tangent.")


@register_evaluator(Tanh)
def _tanh_eval(op, args, ctx):
    """numpy's tanh in f32, rounded once by the runner."""
    return np.tanh(f32(args[0]))


ReLU = _activation("ReLU", "relu", True, "Elementwise ``max(x, 0)``.")


@register_evaluator(ReLU)
def _relu_eval(op, args, ctx):
    """``max(x, 0)``, exact (NaN stays NaN, as numpy's maximum and torch's relu)."""
    return np.maximum(f32(args[0]), np.float32(0))


@register_op
@frozen_record
class Gelu(Op):
    """Elementwise GELU, exact or with the ``approximate`` form."""

    approximate: str = "tanh"

    name: ClassVar[str] = "gelu"
    inputs: ClassVar[tuple] = ("x",)
    attr_kinds: ClassVar[dict] = {"approximate": "str"}


@register_typeinfer(Gelu)
def _gelu_typeinfer(op: Gelu, ctx):
    x = ctx.tensor(0, "x")
    if not x.dtype.is_float:
        ctx.error(f"x (operand 0) is {x.dtype}; gelu needs a float operand; tf.cast(x, 'f32') first")
    return _elementwise_type(ctx, x, what="gelu", commutes=lambda r: False)


_GELU_TANH_SCALE = (2 / _pi) ** 0.5


@register_evaluator(Gelu)
def _gelu_eval(op, args, ctx):
    """``approximate="tanh"``: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` in f32;
    ``"none"`` (exact, torch's spelling): ``0.5 x (1 + erf(x / sqrt 2))``, erf from ``math.erf``
    in f64 rounded to f32 (numpy has none), the rest in f32. Any other string is refused."""
    x = f32(args[0])
    if op.approximate == "tanh":
        inner = np.float32(_GELU_TANH_SCALE) * (x + np.float32(0.044715) * (x * x * x))
        return np.float32(0.5) * x * (np.float32(1) + np.tanh(inner))
    if op.approximate != "none":
        ctx.error(f"approximate={op.approximate!r} is no gelu form; use \"tanh\" or \"none\" (exact)")
    erf = np.vectorize(_erf, otypes=[np.float64])(x.astype(np.float64) * 0.5 ** 0.5)
    return np.float32(0.5) * x * (np.float32(1) + erf.astype(np.float32))


for _cls in (Unary, Clamp, Gelu):
    register_access_relation(_cls)(_elementwise_relation)


register_cost(Clamp, ReLU, Sigmoid, Tanh, Silu, Gelu, Softplus)(elementwise_flops)


# ---------------------------------------------------------------- Where


@register_op
@frozen_record
class Where(Op):
    """Elementwise select: ``input`` where ``condition`` holds, else ``other``."""

    name: ClassVar[str] = "where"
    inputs: ClassVar[tuple] = ("condition", "input", "other")
    attr_kinds: ClassVar[dict] = {}


@register_typeinfer(Where)
def _where_typeinfer(op: Where, ctx):
    cond = ctx.tensor(0, "condition")
    a = ctx.tensor(1, "input")
    b = ctx.tensor(2, "other")
    if not cond.dtype.is_bool:
        ctx.error(f"condition (operand 0) is {cond.dtype}; it must be bool; compare first "
                  "(tf.cmp_ne(c, 0))")
    if a.dtype != b.dtype:
        ctx.error(f"other (operand 2) is {b.dtype} but input (operand 1) is {a.dtype}; no implicit "
                  "promotion; tf.cast one side explicitly")
    shape = broadcast_shapes(ctx, (cond.shape, a.shape, b.shape))
    storage = anchor_storage(ctx, (None, a, b))  # only the data branches vote; slot 0 abstains
    roles = ("condition", "input", "other")
    check_partials(ctx, lambda i, m, r: False, roles=roles, what="where")
    layout = propagate(ctx, broadcast_relations((cond, a, b), shape), shape, roles=roles)
    if layout is None:
        layout = plain_layout_for(shape, storage, (a, b, cond))
    return TensorType(shape, a.dtype, layout, storage)


@register_access_relation(Where)
def _where_relation(op, ctx):
    types = ctx.arg_types
    return broadcast_relations(types, _broadcast_plain(*(t.shape for t in types)))


@register_cost_evaluator(Where)
def _where_cost(call, ctx):
    return Cost({}, all_read_write(call), {"select": numel(ctx.selected_output_type)})


@register_evaluator(Where)
def _where_eval(op, args, ctx):
    """``input`` where ``condition`` holds, else ``other``, broadcast as numpy: a selection,
    exact in the data's own dtype."""
    condition, a, b = args
    return np.where(condition, a, b)

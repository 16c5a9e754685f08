"""Dim arithmetic left as a body Call: DimAdd, DimSub, DimMul, DimFloorDiv,
DimMod, DimMin, DimMax (companions §1.4, authoring §3.3).

Dim arithmetic on DimVars folds into dim expressions (``ir.dim``) and never
reaches the IR as a call. What does reach it is arithmetic on a run-time dim
value -- a ``range``/``tile`` induction variable, or another dim call -- such as
``base = i * 4``: a rank-0 ``i64`` ``umat`` Call of one of these ops.

They are not ``tf`` names (the 72 names of authoring §1.3 stay 72). They have no
cost evaluator on purpose: compute-cost refuses them with ``DimMul: no cost
evaluator registered for DimMul`` (companions §1.4).
"""
from __future__ import annotations

import operator
from typing import ClassVar

from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Call, Constant, Op, Var
from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.tensor_type import TensorType, umat_scalar
from tilefoundry.semantics.op_numerics import np
from tilefoundry.semantics.op_registry import (
    register_access_relation,
    register_evaluator,
    register_typeinfer,
)
from tilefoundry.semantics.relations import DomainBuilder


@frozen_record
class _DimBinary(Op):
    """Shared shape of the seven dim ops: two rank-0 i64 operands, no attributes."""

    inputs: ClassVar[tuple] = ("lhs", "rhs")
    attr_kinds: ClassVar[dict] = {}
    infix: ClassVar[str | None] = None  # the Python operator that spells it, if any


def _dim_op(cls_name: str, name: str, infix: str | None, what: str):
    namespace = {
        # stated, so that dataclass need not build one from the signature
        "__doc__": f"The {what} of two run-time dims (rank-0 i64 umat), kept as a body call.",
        "__annotations__": {"name": ClassVar[str], "infix": ClassVar[str | None]},
        "name": name,
        "infix": infix,
        "__module__": __name__,
        "__qualname__": cls_name,
    }
    return frozen_record(type(cls_name, (_DimBinary,), namespace))


DimAdd = _dim_op("DimAdd", "dim_add", "+", "sum")
DimSub = _dim_op("DimSub", "dim_sub", "-", "difference")
DimMul = _dim_op("DimMul", "dim_mul", "*", "product")
DimFloorDiv = _dim_op("DimFloorDiv", "dim_floordiv", "//", "floor quotient")
DimMod = _dim_op("DimMod", "dim_mod", "%", "remainder")
DimMin = _dim_op("DimMin", "dim_min", None, "smaller")
DimMax = _dim_op("DimMax", "dim_max", None, "larger")

DIM_OPS = (DimAdd, DimSub, DimMul, DimFloorDiv, DimMod, DimMin, DimMax)
# the front end's operator names -> dim op (authoring §3.3: + - * // %)
DIM_OP_FOR_BINARY = {"add": DimAdd, "sub": DimSub, "mul": DimMul, "floor_div": DimFloorDiv, "mod": DimMod}

_DIM_TYPE = umat_scalar(DType.i64)


def is_dim_value(expr) -> bool:
    """A run-time dim value: a rank-0 i64 umat Var (loop induction variable) or
    the result of a dim op. A plain i64 tensor scalar is data, not a dim."""
    if isinstance(expr, Var):
        return expr.type == _DIM_TYPE
    return isinstance(expr, Call) and isinstance(expr.op, _DimBinary)


def is_dim_operand(expr) -> bool:
    """What may sit next to a dim value in dim arithmetic: a dim value or an
    i64 literal (``i * 4``)."""
    return is_dim_value(expr) or (isinstance(expr, Constant) and expr.type == _DIM_TYPE)


def _dim_typeinfer(op, ctx):
    for i, role in enumerate(op.inputs):
        t = ctx.arg_types[i]
        if not isinstance(t, TensorType) or t.rank != 0 or t.dtype != DType.i64:
            got = f"{t.dtype}{list(t.shape)}" if isinstance(t, TensorType) else type(t).__name__
            ctx.error(f"{role} (operand {i}) is {got}; dim arithmetic takes rank-0 i64 dim values "
                      "(loop induction variables, dim results, int literals); use tf.cast or "
                      "tf.reshape to make one, or a tensor op for tensor arithmetic")
        # a dim is umat and layout-free: there is no mesh axis to carry a Partial or Split on
        if t.layout is not None:
            ctx.error(f"{role} (operand {i}) carries layout {t.layout!r}; a dim value has none; "
                      "reshard it away or use a tensor op")
    return umat_scalar(DType.i64)


def _dim_relation(op, ctx):
    """Rank-0 in, rank-0 out: each operand is read at its one point."""
    builder = DomainBuilder(())
    return builder.relations([builder.access(()) for _ in op.inputs], [builder.access(())])


_DIM_ARITHMETIC = {DimAdd: operator.add, DimSub: operator.sub, DimMul: operator.mul,
                   DimFloorDiv: operator.floordiv, DimMod: operator.mod, DimMin: min, DimMax: max}


def _dim_eval(op, args, ctx):
    """The op on the two values as Python ints: exact, floor division and mod as Python's (the
    remainder takes the divisor's sign). A zero divisor, or a result outside i64, is refused: a dim
    is an extent or an index, never a wrapped number."""
    lhs, rhs = (int(a) for a in args)
    if rhs == 0 and type(op) in (DimFloorDiv, DimMod):
        ctx.error(f"{op.name}({lhs}, 0): division by zero")
    value = _DIM_ARITHMETIC[type(op)](lhs, rhs)
    if not -2 ** 63 <= value < 2 ** 63:
        ctx.error(f"{op.name}({lhs}, {rhs}) = {value} is outside i64")
    return np.array(value, dtype=np.int64)


for _cls in DIM_OPS:
    register_typeinfer(_cls)(_dim_typeinfer)
    register_access_relation(_cls)(_dim_relation)
    register_evaluator(_cls)(_dim_eval)

"""Building typed op calls from the ``tf`` registry (authoring.md §6.1, §5.4)."""
from __future__ import annotations

import dataclasses
import enum

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dim import is_dim, simplify_dim
from tilefoundry.ir.dtype import DType, resolve_dtype
from tilefoundry.ir.expr import Constant, Expr, Tuple
from tilefoundry.ir.storage import StorageKind, resolve_storage
from tilefoundry.ir.tensor_type import TensorType, TupleType


def registry():
    """The ``tf`` names; the front end loads the op set that fills them."""
    import tilefoundry.ops  # noqa: F401
    from tilefoundry.semantics.op_registry import TF_NAMES

    return TF_NAMES


def attr_fields(op_class, fixed: dict) -> list:
    return [f for f in dataclasses.fields(op_class) if f.name not in fixed]


def is_required(field) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def _enum_class(name: str):
    import tilefoundry.ops as ops

    found = getattr(ops, name, None)
    if found is None:
        raise VerifyError(f"attribute kind names an unknown enum {name!r}")
    return found


def coerce_attr(kind: str | None, value, attr: str):
    """Annotation-driven coercion of one evaluated attribute value (§6.1)."""
    if kind is None:
        return value
    if kind == "dtype":
        return None if value is None else resolve_dtype(value)
    if kind.startswith("kind:"):
        enum_class = _enum_class(kind[5:])
        if isinstance(value, enum_class):
            return value
        if isinstance(value, str):
            for member in enum_class:
                if member.value == value:
                    return member
        valid = [m.value for m in enum_class]
        raise VerifyError(f"{enum_class.__name__}: unknown value {value!r}; valid values are {valid}")
    if kind == "storage":
        return resolve_storage(value)
    if kind == "int":
        if isinstance(value, bool) or not is_dim(value):
            raise VerifyError(f"attribute '{attr}' must be an int, got {value!r}")
        return simplify_dim(value)
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise VerifyError(f"attribute '{attr}' must be a number, got {value!r}")
        return float(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise VerifyError(f"attribute '{attr}' must be True or False, got {value!r}")
        return value
    if kind == "str":
        if not isinstance(value, str):
            raise VerifyError(f"attribute '{attr}' must be a string, got {value!r}")
        return value
    if kind in ("shape", "ints", "axes", "tuple"):
        value, bad = dim_tuple(value)
        if bad:
            raise VerifyError(f"attribute '{attr}' must be a tuple of ints or dims, got {value!r}")
        return tuple(simplify_dim(v) for v in value)
    if kind == "type":
        if not isinstance(value, (TensorType, TupleType)):
            raise VerifyError(f"attribute '{attr}' must be a Tensor[...] type, got {value!r}")
        return value
    return value


def dim_tuple(value) -> tuple:
    """``(value as a tuple, its entries that are no int/DimVar/dim expression)``:
    a list reads as a tuple, a single dim as a rank-1 shape."""
    if isinstance(value, list):
        value = tuple(value)
    if not isinstance(value, tuple):
        value = (value,)
    return value, [item for item in value if isinstance(item, bool) or not is_dim(item)]


def constant(value, dtype=None) -> Constant:
    if isinstance(value, bool):
        dtype = DType.bool
    elif dtype is None:
        dtype = DType.f32 if isinstance(value, float) else DType.i64
    return Constant(value, TensorType((), dtype, None, StorageKind.UMAT))


def float_dtype_for(values: list) -> DType:
    """§5.4: a float literal takes the one float dtype of the other operands."""
    floats = set()
    for value in values:
        if isinstance(value, Expr) and isinstance(value.type, TensorType) and value.type.dtype.is_float:
            floats.add(value.type.dtype)
    return floats.pop() if len(floats) == 1 else DType.f32


def tuple_expr(fields: list) -> Tuple:
    return Tuple(tuple(fields), TupleType(tuple(f.type for f in fields)))


def is_number(value) -> bool:
    return isinstance(value, (int, float, bool)) and not isinstance(value, enum.Enum)

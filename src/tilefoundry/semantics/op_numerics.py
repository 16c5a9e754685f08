"""The per-op evaluator contract and the numerics every evaluator shares
(numpy dtypes, the one rounding to a declared dtype, the exact integer mean):
what an op computes over numpy arrays (issue 20). It runs nothing itself:
``tilefoundry.execute`` (the room) runs a program, ``tilefoundry.execution``
(the facade) is ``run``/``check``, and ``tilefoundry.evaluator`` is only the
authoring surface's ``to_torch_dtype``.

An op section registers ``@register_evaluator(OpClass)`` beside its typeinfer:

    handler(op, args, ctx) -> value

- ``op``: the op (attributes bound: every dimension is an int).
- ``args``: one numpy array per operand (a tuple of arrays for a tuple-typed
  operand), each already in its declared dtype's numpy form (``numpy_dtype``).
  A rank-0 value is a 0-d array.
- ``ctx``: an ``EvalContext``: the operand and result types (in a placed run
  the participant's local types: their shapes are the box it holds), and
  ``ctx.error(...)`` for a refusal that names the statement.
- value: an array (a tuple of arrays for a tuple result) in any dtype; the
  runner rounds each result to its declared dtype, once. An evaluator computes
  floating point in f32 (``f32(x)`` upcasts bf16/f16/fp8/fp4 operands; special
  functions are computed there and rounded by the runner); an op that
  accumulates does so in f32 unless its attributes name the accumulator;
  integer ops stay exact in their integer dtype.

numpy and ml_dtypes are imported on first use, not when the op set is imported
(``import tilefoundry`` stays fast: bench/typecheck_speed.py).
"""
from __future__ import annotations

from tilefoundry.errors import EvaluationError

__all__ = ["np", "EvalContext", "numpy_dtype", "to_dtype", "f32", "is_float", "dtype_name", "int_mean"]


class _LazyNumpy:
    """``numpy``, imported on the first attribute read; each name is then kept
    on the instance, so later reads are plain attribute lookups."""

    def __getattr__(self, name: str):
        import numpy

        value = getattr(numpy, name)
        setattr(self, name, value)
        return value


np = _LazyNumpy()

# DType name -> (module, attribute) of its numpy scalar type
_NUMPY_NAMES = {
    "f32": ("numpy", "float32"), "f16": ("numpy", "float16"), "bf16": ("ml_dtypes", "bfloat16"),
    "fp8e4m3": ("ml_dtypes", "float8_e4m3fn"), "f8e8m0": ("ml_dtypes", "float8_e8m0fnu"),
    "f4e2m1": ("ml_dtypes", "float4_e2m1fn"), "i32": ("numpy", "int32"), "i64": ("numpy", "int64"),
    "bool": ("numpy", "bool_"),
}
_NUMPY_DTYPES: dict = {}


def numpy_dtype(dtype):
    """The numpy dtype that holds ``dtype`` exactly (ml_dtypes for bf16 and the
    fp8/fp4 types)."""
    found = _NUMPY_DTYPES.get(dtype.name)
    if found is None:
        import importlib

        module, attribute = _NUMPY_NAMES[dtype.name]
        found = _NUMPY_DTYPES[dtype.name] = np.dtype(getattr(importlib.import_module(module), attribute))
    return found


def to_dtype(value, dtype):
    """``value`` rounded to ``dtype`` (round to nearest even, as ml_dtypes and
    numpy convert); an array already of that dtype is returned as is."""
    target = numpy_dtype(dtype)
    array = np.asarray(value)
    if array.dtype == target:
        return array
    if dtype.is_bool:
        return array.astype(target)
    if dtype.is_int and array.dtype.kind == "f":
        # a float reaching an integer result is a bug in the evaluator, not a rounding
        raise EvaluationError(f"internal: an evaluator returned floats for an {dtype.name} result")
    return array.astype(target)


#: numpy names of the float types narrower than f32 (ml_dtypes' report kind "V")
_LOW_PRECISION = {attribute for name, (_, attribute) in _NUMPY_NAMES.items()
                  if name not in ("f32", "i32", "i64", "bool")}
#: numpy name -> DType name (bool_'s dtype is named "bool")
_DTYPE_NAMES = {("bool" if attribute == "bool_" else attribute): name
                for name, (_, attribute) in _NUMPY_NAMES.items()}


def is_float(dtype) -> bool:
    """Whether a numpy dtype holds floating point (ml_dtypes' types included)."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype.name in _LOW_PRECISION


def dtype_name(dtype) -> str:
    """The DType spelling (``bf16``) of a numpy dtype, else numpy's own name."""
    name = np.dtype(dtype).name
    return _DTYPE_NAMES.get(name, name)


def f32(array):
    """A floating-point operand as f32 (low-precision types widen exactly);
    integer and bool operands are returned unchanged."""
    array = np.asarray(array)
    if array.dtype == np.float32:
        return array
    return array.astype(np.float32) if is_float(array.dtype) else array


def int_mean(x, axes, count: int, keepdim: bool):
    """The integer mean over ``axes``, exact and rounded toward zero (as integer division), with no
    sum wider than i64: x = q·n + r (floor, 0 <= r < n), so mean = sum(q) + sum(r) / n, where sum(q)
    stays within the inputs' range and sum(r) < n^2. It never leaves the range of its inputs."""
    n = max(count, 1)
    wide = np.asarray(x).astype(np.int64)
    q = np.sum(np.floor_divide(wide, n), axis=axes, keepdims=keepdim)
    r = np.sum(np.mod(wide, n), axis=axes, keepdims=keepdim)
    floor = q + r // n
    inexact = (r % n) != 0
    return (floor + ((floor < 0) & inexact)).astype(x.dtype)  # floor -> toward zero when negative


class EvalContext:
    """What an evaluator may read besides its operands.

    Attributes:
        op: the op being evaluated.
        arg_types: the operands' types (local to the participant in a placed run).
        result_type: the result's type (likewise local in a placed run).
        location: ``file:line:col`` of the authored statement, or None.
        binding: the name the user bound the result to, or None.
    """

    __slots__ = ("op", "arg_types", "result_type", "location", "binding")

    def __init__(self, op, arg_types: tuple, result_type, *, location=None, binding=None):
        self.op = op
        self.arg_types = tuple(arg_types)
        self.result_type = result_type
        self.location = location
        self.binding = binding

    @property
    def result_shape(self) -> tuple:
        return tuple(self.result_type.shape)

    def error(self, message: str):
        where = f"{self.location}: " if self.location else ""
        name = f" ('{self.binding}')" if self.binding else ""
        raise EvaluationError(f"{where}{self.op.name}{name}: {message}")

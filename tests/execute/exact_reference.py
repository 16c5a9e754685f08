"""A right reference for any program: the program itself in float64 with no
rounding to its dtypes (every evaluator's f32 widening made f64, the runner's
rounding and the MMA accumulator's made identities). It approximates the
exact result the error bound is about, so ``check`` against it tests that the
bound holds; a mutation of it (scaled, transposed, a K tile short) tests that
the bound is tight enough to catch a wrong kernel."""
from __future__ import annotations

import contextlib
import sys

import numpy as np

from tilefoundry.semantics.op_numerics import is_float


def _f64(array):
    array = np.asarray(array)
    return array.astype(np.float64) if is_float(array.dtype) else array


@contextlib.contextmanager
def wide_arithmetic():
    """Every op module's ``f32`` and ``to_dtype`` read as f64 / identity for the block."""
    import tilefoundry.ops  # noqa: F401  (the op families, loaded below)
    from tilefoundry.execute import logical
    from tilefoundry.semantics.op_registry import EVALUATORS

    list(EVALUATORS)  # enumerating loads every family
    patched = []

    def keep(value, dtype):
        value = np.asarray(value)
        return value if dtype.is_float and value.dtype.kind == "f" else _orig_to_dtype(value, dtype)

    from tilefoundry.semantics.op_numerics import to_dtype as _orig_to_dtype

    for name, module in list(sys.modules.items()):
        if name.startswith("tilefoundry.ops") and module is not None:
            for attribute, value in (("f32", _f64), ("to_dtype", keep)):
                if hasattr(module, attribute):
                    patched.append((module, attribute, getattr(module, attribute)))
                    setattr(module, attribute, value)

    def no_rounding(value, type_):
        return value

    def exact_constant(self, node):
        return np.asarray(node.value, dtype=np.float64 if node.type.dtype.is_float else None)

    patched.append((logical, "round_to_type", logical.round_to_type))
    logical.round_to_type = no_rounding
    patched.append((logical.LogicalDomain, "constant", logical.LogicalDomain.constant))
    logical.LogicalDomain.constant = exact_constant
    try:
        yield
    finally:
        for owner, attribute, value in reversed(patched):
            setattr(owner, attribute, value)


def exact_twin(prepared):
    """A Python twin computing ``prepared``'s program in float64."""
    from tilefoundry.execute import run_logical

    params = [param for param, _, _ in prepared.names]

    def reference(*arrays):
        with wide_arithmetic():
            outputs = run_logical(prepared.function, dict(zip(params, arrays)))
        return {k: np.asarray(v, dtype=np.float64) if is_float(np.asarray(v).dtype) else v
                for k, v in outputs.items()}

    return reference

"""``to_torch_dtype`` (authoring.md §1.1): the torch dtype of a DType, which a
model file may call at import time (a public authoring path; execution is
``tilefoundry.execution``, not this package). ``torch`` is imported only when
the function is called, so a machine without it can still load the file (the
loader sets aside the failing statement unless it binds the selected root).
"""
from __future__ import annotations

from tilefoundry.ir.dtype import DType, resolve_dtype

# DType name -> torch attribute (None: torch has no such dtype)
_TORCH_NAMES = {
    "f32": "float32", "f16": "float16", "bf16": "bfloat16", "fp8e4m3": "float8_e4m3fn",
    "f8e8m0": "float8_e8m0fnu", "f4e2m1": None, "i32": "int32", "i64": "int64", "bool": "bool",
}


def to_torch_dtype(dtype: DType | str):
    dtype = resolve_dtype(dtype)
    attribute = _TORCH_NAMES.get(dtype.name)
    try:
        import torch
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            f"to_torch_dtype({dtype.name}) needs torch, which is not installed; TileFoundry's analysis does not"
        ) from None
    if attribute is None or not hasattr(torch, attribute):
        raise ValueError(f"to_torch_dtype: torch {torch.__version__} has no dtype for {dtype.name}")
    return getattr(torch, attribute)


__all__ = ["to_torch_dtype"]

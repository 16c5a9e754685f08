"""Element types: a closed set of immutable descriptors (companions §1.1)."""
from __future__ import annotations

from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.immutable import ImmutableValue

from tilefoundry.errors import VerifyError, did_you_mean


@frozen_record
class DType(ImmutableValue):
    """One element type. ``name`` is its DSL spelling and its only output form."""

    name: str
    family: str  # "float" | "int" | "bool"
    bits: int
    exponent_bits: int = 0
    mantissa_bits: int = 0

    @property
    def is_float(self) -> bool:
        return self.family == "float"

    @property
    def is_int(self) -> bool:
        return self.family == "int"

    @property
    def is_bool(self) -> bool:
        return self.family == "bool"

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"DType.{self.name}"

    @staticmethod
    def from_name(name: object) -> "DType":
        return resolve_dtype(name)


_BUILTINS = (
    DType("f32", "float", 32, 8, 23),
    DType("f16", "float", 16, 5, 10),
    DType("bf16", "float", 16, 8, 7),
    DType("fp8e4m3", "float", 8, 4, 3),
    DType("f8e8m0", "float", 8, 8, 0),
    DType("f4e2m1", "float", 4, 2, 1),
    DType("i32", "int", 32),
    DType("i64", "int", 64),
    DType("bool", "bool", 1),
)
DTYPES: dict[str, DType] = {d.name: d for d in _BUILTINS}
for _d in _BUILTINS:
    setattr(DType, _d.name, _d)

f32, f16, bf16 = DTYPES["f32"], DTYPES["f16"], DTYPES["bf16"]
fp8e4m3, f8e8m0, f4e2m1 = DTYPES["fp8e4m3"], DTYPES["f8e8m0"], DTYPES["f4e2m1"]
i32, i64, boolean = DTYPES["i32"], DTYPES["i64"], DTYPES["bool"]


#: Other spellings of the dtypes (numpy, PyTorch, MLIR, the OCP formats): a
#: refusal of one suggests the DSL spelling; none is accepted in its place, so
#: every program and every printed type spells a dtype one way.
DTYPE_ALIASES = {
    "float32": "f32", "fp32": "f32", "float": "f32", "single": "f32", "torch.float32": "f32",
    "float16": "f16", "fp16": "f16", "half": "f16", "torch.float16": "f16",
    "bfloat16": "bf16", "torch.bfloat16": "bf16",
    "fp8": "fp8e4m3", "f8": "fp8e4m3", "f8e4m3": "fp8e4m3", "e4m3": "fp8e4m3", "f8e4m3fn": "fp8e4m3",
    "float8_e4m3": "fp8e4m3", "float8_e4m3fn": "fp8e4m3", "fp8_e4m3": "fp8e4m3",
    "torch.float8_e4m3fn": "fp8e4m3",
    "fp8e8m0": "f8e8m0", "e8m0": "f8e8m0", "float8_e8m0fnu": "f8e8m0", "f8e8m0fnu": "f8e8m0",
    "fp4": "f4e2m1", "f4": "f4e2m1", "fp4e2m1": "f4e2m1", "e2m1": "f4e2m1", "float4_e2m1fn": "f4e2m1",
    "int32": "i32", "int": "i32", "torch.int32": "i32",
    "int64": "i64", "long": "i64", "torch.int64": "i64",
    "boolean": "bool", "bool_": "bool", "i1": "bool", "torch.bool": "bool",
    # no 64-bit float exists: the nearest spelling ('i64', 'f16') would mislead
    "f64": None, "fp64": None, "float64": None, "double": None, "torch.float64": None,
}


def dtype_hint(value: object) -> str:
    """``; did you mean 'bf16'?`` for a dtype spelled another way, or ``''``."""
    return did_you_mean(value, DTYPES, aliases=DTYPE_ALIASES) if isinstance(value, str) else ""


def resolve_dtype(value: object) -> DType:
    """The one resolver from a spelling (or a DType) to the singleton. Only
    the DSL spellings are accepted; another one is refused with the spelling
    to write."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in DTYPES:
        return DTYPES[value]
    raise VerifyError(
        f"DType: unknown value {value!r}{dtype_hint(value) or ';'} valid: {sorted(DTYPES)}"
    )

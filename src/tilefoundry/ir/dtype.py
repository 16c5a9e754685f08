"""Element types: a closed set of immutable descriptors (companions §1.1)."""
from __future__ import annotations

from tilefoundry.ir.immutable import ImmutableValue

from dataclasses import dataclass

from tilefoundry.errors import VerifyError


@dataclass(frozen=True)
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


def resolve_dtype(value: object) -> DType:
    """The one resolver from a spelling (or a DType) to the singleton."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in DTYPES:
        return DTYPES[value]
    raise VerifyError(
        f"DType: unknown value {value!r}; valid: {sorted(DTYPES)}"
    )

"""The parsed form of a KTIR file: module, functions, ops.

Inter-tile ops carry their model object (`Produce` / `Delivery`); the
neighbouring ops the fixtures use (constants, memory views, loads, stores,
slices, elementwise arith) are kept generic with their static data in
`extra`, enough for the SPMD interpreter and the writer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tilefoundry.intertile.model import Delivery, Produce

# The neighbouring ops we read (anything else is refused by name and place).
ELEMENTWISE = {
    "arith.addf": "add", "arith.subf": "subtract", "arith.mulf": "multiply",
    "arith.divf": "divide", "arith.maximumf": "maximum", "arith.minimumf": "minimum",
    "arith.maxf": "maximum", "arith.minf": "minimum", "arith.addi": "add",
    "arith.muli": "multiply", "arith.subi": "subtract",
}
# Ops with no effect beyond their results; anything else in a combiner is R10.
PURE_PREFIXES = ("arith.", "math.", "tensor.", "linalg.")


@dataclass
class Op:
    name: str
    results: tuple[str, ...] = ()
    operands: tuple[str, ...] = ()
    loc: str = ""
    extra: dict = field(default_factory=dict)
    text: str = ""  # the op's source text, kept for the writer


@dataclass
class ProduceOp(Op):
    model: Produce | None = None
    block_arg: str = "%gid"
    region: list[Op] = field(default_factory=list)


@dataclass
class DeliveryOp(Op):
    model: Delivery | None = None
    block_args: tuple[str, ...] = ()
    region: list[Op] = field(default_factory=list)


@dataclass
class Function:
    name: str
    args: list[tuple[str, object]]
    result_types: list[object]
    ops: list[Op]
    loc: str = ""

    def produces(self) -> list[ProduceOp]:
        return [op for op in self.ops if isinstance(op, ProduceOp)]

    def uses_of(self, name: str) -> list[Op]:
        found = []
        for op in self.ops:
            if name in op.operands:
                found.extend([op] * op.operands.count(name))
            for inner in getattr(op, "region", []):
                if name in inner.operands:
                    found.append(op)
        return found


@dataclass
class Module:
    filename: str
    aliases: dict[str, tuple[str, object, str]]  # name -> (kind, value, text)
    functions: list[Function]
    alias_order: list[str] = field(default_factory=list)

    def function(self, name: str) -> Function:
        key = name if name.startswith("@") else "@" + name
        for f in self.functions:
            if f.name == key:
                return f
        from tilefoundry.errors import SelectionError
        raise SelectionError(f"{self.filename}: no function {key}; functions are "
                             f"{[f.name for f in self.functions]}")

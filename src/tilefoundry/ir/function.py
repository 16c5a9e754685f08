"""Functions: parameters, one body expression, DimVar-range variants."""
from __future__ import annotations

import copy

from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.immutable import ImmutableValue

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dim import DimVar, free_dimvars
from tilefoundry.ir.metadata import MetadataHolder
from tilefoundry.ir.tensor_type import tensor_leaves


@frozen_record
class DimVarRangePat(ImmutableValue):
    """Selects a variant when ``dim_var`` lies in ``[lo, hi)``."""

    dim_var: str
    lo: int
    hi: int

    def __post_init__(self):
        for label, bound in (("lo", self.lo), ("hi", self.hi)):
            if isinstance(bound, bool) or not isinstance(bound, int):
                raise TypeError(f"DimVarRangePat: {label} must be an int, got {bound!r}")
        if not isinstance(self.dim_var, str) or not self.dim_var:
            raise TypeError("DimVarRangePat: dim_var must be a non-empty str")
        if not self.lo < self.hi:
            raise VerifyError(f"DimVarRangePat {self.dim_var!r}: needs lo < hi, got [{self.lo}, {self.hi})")

    def covers(self, value: int) -> bool:
        return self.lo <= value < self.hi


class Pattern:
    """Base of specialisation patterns (only DimVarRangePat exists)."""


class Function(MetadataHolder):
    """An HIR function. ``body`` is None for a prototype."""

    __slots__ = ("name", "params", "body", "return_type", "variants", "converters",
                 "source", "_metadata", "owner", "label")

    def __init__(self, name, params, body, return_type, *, source=None, label=None):
        self.name = name
        self.params = tuple(params)
        self.body = body
        self.return_type = return_type
        self.variants: list[tuple[DimVarRangePat, "Function"]] = []
        self.converters: dict[str, "Function"] = {}
        self.source = source  # the authoring record (dsl), or None
        self._metadata = {}
        self.owner = None  # the Module this function belongs to, once attached
        self.label = label or name

    def __repr__(self) -> str:
        return f"Function({self.name})"

    # ---------------------------------------------------------------- copies
    def copy_shell(self) -> "Function":
        """A copy of this Function (same class and fields, its own records and
        no owner) that ``relink`` fills when a Module tree is copied."""
        shell = copy.copy(self)
        shell._metadata = dict(self._metadata)
        shell.owner = None
        return shell

    def relink(self, original: "Function", part) -> None:
        """Fill this shell of ``original``: ``part(x)`` is the copy of each of its
        params, its body and each related Function (variants, converters)."""
        self.params = tuple(part(p) for p in original.params)
        self.body = part(original.body) if original.body is not None else None
        self.variants = [(pattern, part(variant)) for pattern, variant in original.variants]
        self.converters = {weight: part(fn) for weight, fn in original.converters.items()}

    @property
    def is_prototype(self) -> bool:
        return self.body is None

    @property
    def result_type(self):
        return self.body.type if self.body is not None else self.return_type

    def dimvars(self) -> tuple[DimVar, ...]:
        """DimVars stated by the signature, in first-occurrence order."""
        found: list[DimVar] = []
        for param in self.params:
            for leaf in tensor_leaves(param.type):
                for extent in leaf.shape:
                    for var in free_dimvars(extent):
                        if var not in found:
                            found.append(var)
        return tuple(found)

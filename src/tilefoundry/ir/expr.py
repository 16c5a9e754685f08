"""Expressions: Var, Constant, Call, Tuple, GridRegionExpr, and the Op base.

Nodes are graph vertices compared by identity; their checked type is fixed when
they are built (every builder runs type inference at once).
"""
from __future__ import annotations

from tilefoundry.ir.immutable import ImmutableValue

import dataclasses
from typing import ClassVar

from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.metadata import MetadataHolder


class Expr(MetadataHolder):
    __slots__ = ("type", "_metadata")

    def __init__(self, type_):
        self.type = type_
        self._metadata = {}


class Var(Expr):
    """A function parameter, loop induction variable or loop-carried value."""

    __slots__ = ("name", "is_const")

    def __init__(self, name: str, type_, is_const: bool = False):
        super().__init__(type_)
        self.name = name
        self.is_const = is_const

    def __repr__(self) -> str:
        return f"Var({self.name})"


def authored_label(node) -> str | None:
    """The user's name for ``node``: a parameter's or loop variable's own name,
    the authored binding of an analysed view's call (``AuthoredNameMetadata``),
    or None for an expression the program never named."""
    from tilefoundry.ir.metadata import AuthoredNameMetadata

    if isinstance(node, Var):
        return node.name
    authored = node.get_metadata(AuthoredNameMetadata) if isinstance(node, Expr) else None
    return authored.name if authored is not None else None


class Constant(Expr):
    """A rank-0 literal (int, float or bool) with its typed dtype."""

    __slots__ = ("value",)

    def __init__(self, value, type_):
        super().__init__(type_)
        self.value = value

    def __repr__(self) -> str:
        return f"Constant({self.value!r})"


class Call(Expr):
    """An op (or Function) applied to arguments.

    ``structure``: what typed a primitive call (``typeinfer.build_call``), one
    object per distinct op, operand types, literals, aliasing and Mesh scopes,
    or None (a Function call, a hand-built node). Two calls with the same
    structure object agree on everything an answer keyed by those reads, so
    an analysis may key its memo on it without building that key again."""

    __slots__ = ("op", "args", "structure")

    def __init__(self, op, args: tuple, type_, structure=None):
        super().__init__(type_)
        self.op = op
        self.args = tuple(args)
        self.structure = structure

    def __repr__(self) -> str:
        name = getattr(self.op, "name", type(self.op).__name__)
        return f"Call({name})"


class Tuple(Expr):
    __slots__ = ("fields",)

    def __init__(self, fields: tuple, type_):
        super().__init__(type_)
        self.fields = tuple(fields)


class GridRegionExpr(Expr):
    """One authored loop: ``for induction_var in [start, extent) step step``.

    ``carried`` are the phi Vars seen in the body, ``inits`` their pre-loop values,
    ``yields`` the values last bound at the end of the body. The node's value is
    the final carried value (one) or a tuple of them (several).
    """

    __slots__ = ("induction_var", "carried", "inits", "yields", "start", "extent", "step", "kind")

    def __init__(self, induction_var, carried, inits, yields, start, extent, step, kind, type_):
        super().__init__(type_)
        self.induction_var = induction_var
        self.carried = tuple(carried)
        self.inits = tuple(inits)
        self.yields = tuple(yields)
        self.start = start
        self.extent = extent
        self.step = step
        self.kind = kind  # "tile" | "range" (authored form, for printing)

    @property
    def trips(self):
        """How many times the body runs: Python's ``len(range(start, extent,
        step))``, so an empty loop (``range(5, 0)``, ``tile(-64, 16)``, or a
        bound ``range(100, N)`` with N = 10) runs 0 times, never a negative
        count. Symbolic bounds keep the expression until they are bound."""
        from tilefoundry.ir.dim import ceildiv, dim_sub, is_static

        count = ceildiv(dim_sub(self.extent, self.start), self.step)
        return max(count, 0) if is_static(count) else count


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}  # Op class -> its attribute names, in order


@frozen_record
class Op(ImmutableValue):
    """Base of every HIR primitive. Subclasses are frozen records
    (``@frozen_record``: frozen dataclasses with shared eq/hash/repr) whose
    fields are the op's attributes, in declaration order."""

    name: ClassVar[str] = ""  # printed / tf name
    inputs: ClassVar[tuple] = ()  # input parameter names
    variadic: ClassVar[bool] = False  # every positional argument is an input

    @property
    def class_name(self) -> str:
        return type(self).__name__

    def attributes(self) -> list[tuple[str, object]]:
        names = _FIELD_NAMES.get(type(self))
        if names is None:  # dataclasses.fields walks the class each call: kept per class
            names = _FIELD_NAMES[type(self)] = tuple(f.name for f in dataclasses.fields(self))
        return [(name, getattr(self, name)) for name in names]

    @classmethod
    def attribute_fields(cls):
        return dataclasses.fields(cls)


# ---------------------------------------------------------------- walking a body


def body_children(node) -> tuple:
    if isinstance(node, Call):
        return node.args
    if isinstance(node, Tuple):
        return node.fields
    if isinstance(node, GridRegionExpr):
        return node.inits + node.yields
    return ()


_OPERANDS_DONE = object()  # pushed over a node: its operands are out, it is next


def postorder(root, skip=(), children=body_children):
    """Every node under ``root`` once, operands first (a loop's inits and yields
    are its operands); iterative, since an authored chain can be deeper than
    Python's recursion limit. Nodes whose id is in ``skip`` are not entered;
    ``children(node)`` names what a node's operands are."""
    seen: set[int] = set()
    stack = [root]
    pop = stack.pop
    while stack:
        node = pop()
        if node is _OPERANDS_DONE:
            yield pop()  # the node the marker was pushed over
            continue
        key = id(node)
        if key in seen or key in skip:
            continue
        seen.add(key)
        stack += (node, _OPERANDS_DONE)
        stack.extend(reversed(children(node)))

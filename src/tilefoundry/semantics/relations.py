"""The access-relation carrier (companions §4.1, spec §1.1, §2).

A relation is held in a cheap structural form — per image axis an ``AxisMap``
(which domain dim, with which coefficient and offset, or a constant, a floor
division, a data-dependent "any" coordinate, or a general quasi-affine isl
expression) — and turned into an isl map only when ``.relation`` is asked for.
isl maps are memoised by their structural key (the isl text), never built per
occurrence; islpy is imported lazily.

Every boundary maps the op's whole iteration space (domain dims ``i0..i{n-1}``
bounded by the domain extents) to the index space of one tensor. Symbolic
extents are isl parameters bound to their dims; run-time coordinates (slice
starts, insert offsets, cache position) are parameters bound to the operand
expression they are read from.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from functools import lru_cache

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dim import DimExpr, DimVar, is_static
from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.semantics.op_registry import ACCESS_RELATIONS
from tilefoundry.semantics.structural_key import operand_structure

__all__ = [
    "AxisMap",
    "AffineAccess",
    "BoundaryRelation",
    "AccessRelations",
    "DomainBuilder",
    "identity_maps",
    "access_relations",
    "relations_of_call",
    "RelationFacts",
    "relation_facts",
    "isl_map",
    "clear_isl_cache",
]

# ---------------------------------------------------------------- structural form


@dataclass(frozen=True)
class AxisMap:
    """One image coordinate.

    ``dim`` set: ``floor((offset + coeff * i_dim) / div)``; ``dim`` None: the
    constant ``offset`` (an int or a parameter name); ``free``: any coordinate
    (data decides, e.g. the selected axis of IndexSelect); ``expr``: a general
    quasi-affine isl expression over ``i0..`` and parameters.
    """

    dim: int | None = None
    coeff: int = 1
    offset: object = 0
    div: int = 1
    free: bool = False
    expr: str | None = None

    @property
    def is_projection(self) -> bool:
        """A zero-offset unit-coefficient access of one domain dim (spec §3.2)."""
        return (self.dim is not None and self.coeff == 1 and self.offset == 0 and self.div == 1
                and not self.free and self.expr is None)

    @property
    def is_constant(self) -> bool:
        return self.dim is None and not self.free and self.expr is None

    def dims_used(self) -> tuple:
        if self.dim is not None:
            return (self.dim,)
        if self.expr is not None:
            return tuple(sorted({int(x) for x in re.findall(r"\bi(\d+)\b", self.expr)}))
        return ()

    def isl_text(self) -> str | None:
        if self.free:
            return None
        if self.expr is not None:
            return self.expr
        if self.dim is None:
            return str(self.offset)
        term = f"i{self.dim}" if self.coeff == 1 else f"{self.coeff}i{self.dim}"
        if self.offset != 0:
            term = f"{self.offset} + {term}"
        if self.div != 1:
            term = f"floor(({term})/{self.div})"
        return term


def proj(dim: int) -> AxisMap:
    return AxisMap(dim=dim)


def const(value=0) -> AxisMap:
    return AxisMap(dim=None, offset=value)


FREE = AxisMap(free=True)


_PARAM = re.compile(r"\b(p_[A-Za-z0-9_]+)\b")


@lru_cache(maxsize=8192)
def _params_in(text: str) -> frozenset:
    # the same few texts recur in every access of every call: read each once
    return frozenset(_PARAM.findall(text))


@dataclass(frozen=True)
class AffineAccess:
    """An access map plus, for each isl parameter in it, the program value it
    stands for (companions §4.1). Built from a structural pattern; the isl map is
    made on first use and shared by structural key."""

    axes: tuple  # AxisMap per image axis
    domain: tuple  # isl text of each domain extent
    parameters: tuple = ()  # ((name, value), ...)
    guards: tuple = ()  # extra isl constraints (domain dims / image ``o<k>`` / parameters)
    param_guards: tuple = ()  # constraints on parameters only
    _relation: object = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        names = [name for name, _ in self.parameters]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise VerifyError(f"AffineAccess: parameter {dup[0]!r} bound twice")
        used = set()
        for text in self._texts():
            used |= _params_in(text)
        unbound = used - set(names)
        if unbound:
            raise VerifyError(f"AffineAccess: map parameter {sorted(unbound)[0]!r} has no binding")
        unused = set(names) - used
        if unused:
            raise VerifyError(f"AffineAccess: binding {sorted(unused)[0]!r} is not used by the map")

    def _texts(self):
        yield from self.domain
        for axis in self.axes:
            text = axis.isl_text()
            if text:
                yield text
        yield from self.guards
        yield from self.param_guards

    @property
    def rank(self) -> int:
        return len(self.axes)

    @property
    def key(self) -> str:
        return self.isl_text()

    def isl_text(self) -> str:
        params = sorted({p for t in self._texts() for p in _params_in(t)})
        ins = ", ".join(f"i{k}" for k in range(len(self.domain)))
        outs = ", ".join(f"o{k}" for k in range(len(self.axes)))
        cons = [f"0 <= i{k} < {ext}" for k, ext in enumerate(self.domain)]
        for k, axis in enumerate(self.axes):
            text = axis.isl_text()
            if text is not None:
                cons.append(f"o{k} = {text}")
        cons.extend(self.guards)
        cons.extend(self.param_guards)
        body = " and ".join(cons) if cons else ""
        return f"[{', '.join(params)}] -> {{ [{ins}] -> [{outs}]{' : ' + body if body else ''} }}"

    @property
    def relation(self):
        """The isl map (built lazily, memoised by structural key)."""
        return isl_map(self.isl_text())

    def binding(self, name: str):
        for n, value in self.parameters:
            if n == name:
                return value
        raise KeyError(name)


@dataclass(frozen=True)
class BoundaryRelation:
    """One boundary: its access pattern (no amount field)."""

    pattern: AffineAccess


@dataclass(frozen=True)
class AccessRelations:
    """One input boundary per call argument, one output per result field."""

    inputs: tuple
    outputs: tuple
    domain: tuple = ()  # domain extents as dims (ints / DimVars / dim exprs)

    def __post_init__(self):
        if not self.outputs:
            raise VerifyError("AccessRelations: at least one output boundary is required")

    @property
    def domain_rank(self) -> int:
        return len(self.domain)


# ---------------------------------------------------------------- isl cache

# isl objects are values (every operation returns a new one), so one parsed
# object serves every use of its text; parsing is most of what relations cost.
_ISL_CACHE: dict[str, object] = {}
_ISL_SET_CACHE: dict[str, object] = {}


def isl_map(text: str):
    cached = _ISL_CACHE.get(text)
    if cached is None:
        import islpy as isl  # lazy: keep ``import tilefoundry`` light

        cached = isl.Map(text)
        _ISL_CACHE[text] = cached
    return cached


def isl_set(text: str):
    """The parsed isl Set of ``text``, parsed once (as ``isl_map``)."""
    cached = _ISL_SET_CACHE.get(text)
    if cached is None:
        import islpy as isl

        cached = _ISL_SET_CACHE[text] = isl.Set(text)
    return cached


def clear_isl_cache() -> None:
    _ISL_CACHE.clear()
    _ISL_SET_CACHE.clear()


def isl_cache_size() -> int:
    return len(_ISL_CACHE)


# ---------------------------------------------------------------- builder


class DomainBuilder:
    """Collects a domain's extents and the parameters bound along the way."""

    def __init__(self, extents=()):
        self.params: dict[str, object] = {}
        self._by_value: dict = {}
        self.extents = tuple(extents)
        self.domain = tuple(self.dim_text(e) for e in self.extents)
        self.param_guards: list[str] = []

    def dim_text(self, value) -> str:
        """isl spelling of a dim: ints as is, DimVars as parameters, affine
        combinations over parameters, anything else one fresh parameter."""
        if is_static(value):
            return str(value)
        if isinstance(value, DimVar):
            return self.param(value, f"p_{_ident(value.name)}")
        if isinstance(value, DimExpr) and all(isinstance(a, DimVar) for a, _ in value.terms):
            parts = [f"{c}{self.dim_text(a)}" if c != 1 else self.dim_text(a) for a, c in value.terms]
            text = " + ".join(parts)
            if value.const:
                text += f" + {value.const}"
            return f"({text})".replace("+ -", "- ")
        return self.param(value, f"p_dim{len(self.params)}")

    def param(self, value, name: str | None = None) -> str:
        key = ("v", id(value)) if not _hashable(value) else ("h", value)
        if key in self._by_value:
            return self._by_value[key]
        name = name or f"p_v{len(self.params)}"
        while name in self.params:
            name = name + "_"
        self.params[name] = value
        self._by_value[key] = name
        return name

    def access(self, axes, guards=(), param_guards=()) -> BoundaryRelation:
        texts = [a.isl_text() or "" for a in axes] + list(guards) + list(param_guards) + list(self.domain)
        used = set()
        for t in texts:
            used |= _params_in(t)
        params = tuple((n, v) for n, v in self.params.items() if n in used)
        return BoundaryRelation(AffineAccess(tuple(axes), self.domain, params, tuple(guards),
                                             tuple(param_guards)))

    def relations(self, inputs, outputs) -> AccessRelations:
        return AccessRelations(tuple(inputs), tuple(outputs), self.extents)


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    from tilefoundry.ir.expr import Expr

    return not isinstance(value, Expr)


def _ident(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def identity_maps(rank: int) -> tuple:
    return tuple(proj(k) for k in range(rank))


# ---------------------------------------------------------------- registry access


class _RelationContext:
    """The view a relation handler reads: op, argument nodes and their types."""

    def __init__(self, op, args, arg_types=None, error=None):
        self.op = op
        self.args = tuple(args)
        self.arg_types = tuple(arg_types) if arg_types is not None else tuple(a.type for a in self.args)
        self._error = error

    def error(self, message: str):
        if self._error is not None:
            self._error(message)
        raise VerifyError(f"{self.op.class_name}: {message}")


def access_relations(op, args, arg_types=None, *, ctx=None) -> AccessRelations:
    """The op's AccessRelations for these arguments (fail closed without a handler).

    Each boundary's image rank is held to the type it describes. Answered from
    the structural memo when a call of the same structure was asked before."""
    if ctx is not None:
        return _derive_relations(op, args, arg_types, ctx)
    operands, nodes = operand_structure(args)
    # the handler in the key: one registered anew (a test's, a plug-in's) is asked afresh
    key = (ACCESS_RELATIONS.get(type(op)), type(op), op, operands,
           None if arg_types is None else tuple(arg_types))
    try:
        template = _MEMO.get(key)
    except TypeError:  # an unhashable attribute or literal: derived afresh
        return _derive_relations(op, args, arg_types, None)
    if template is not None:
        return template.bound(nodes)
    relations = _derive_relations(op, args, arg_types, None)
    template = _Template.of(relations, nodes)
    if template is not None:
        if len(_MEMO) >= _MEMO_LIMIT:
            _MEMO.clear()
        _MEMO[key] = template
    return relations


def _derive_relations(op, args, arg_types, ctx) -> AccessRelations:
    handler = ACCESS_RELATIONS.get(type(op))
    view = ctx if ctx is not None else _RelationContext(op, args, arg_types)
    if handler is None:
        raise VerifyError(
            f"{op.class_name}: no access relation registered for {op.class_name}; "
            "the relation-derived services refuse it (fail closed)"
        )
    relations = handler(op, view)
    _check_ranks(op, view.arg_types, relations)
    return relations


# ---------------------------------------------------------------- structural memo
#
# A whole model repeats its layers: the same op over operands of the same types,
# thousands of times. A handler reads of an operand its type, a literal's value
# and, for a run-time coordinate, the node itself as a parameter binding -- so
# one call's relations serve every call of the same structure, their bindings
# moved to that call's operands. The memo holds no program node: a binding is
# kept as the operand position it came from.

_MEMO: dict = {}
_MEMO_LIMIT = 8192


@dataclass(frozen=True)
class _Operand:
    """A binding to the operand node at ``slot`` (of ``operand_structure``'s nodes)."""

    slot: int


class _Template:
    """One call's relations with their node bindings replaced by positions."""

    def __init__(self, relations: AccessRelations, bound: tuple):
        self.relations = relations
        self.bound_boundaries = bound  # (side, index) of every boundary with a node binding

    @classmethod
    def of(cls, relations: AccessRelations, nodes: list) -> "_Template | None":
        """The template, or None when a binding is a node that is no operand."""
        from tilefoundry.ir.expr import Expr

        slots = {id(n): k for k, n in enumerate(nodes)}

        def place(value):
            if isinstance(value, Expr):
                return _Operand(slots[id(value)])
            if isinstance(value, tuple) and any(isinstance(v, Expr) for v in value):
                return tuple(place(v) for v in value)
            return value

        sides = {"inputs": list(relations.inputs), "outputs": list(relations.outputs)}
        bound = []
        try:
            for side, boundaries in sides.items():
                for k, boundary in enumerate(boundaries):
                    if boundary is None:
                        continue
                    params = tuple((n, place(v)) for n, v in boundary.pattern.parameters)
                    if params != boundary.pattern.parameters:
                        boundaries[k] = _with_parameters(boundary, params)
                        bound.append((side, k))
        except KeyError:
            return None
        if not bound:
            return cls(relations, ())
        return cls(AccessRelations(tuple(sides["inputs"]), tuple(sides["outputs"]),
                                   relations.domain), tuple(bound))

    def bound(self, nodes: list) -> AccessRelations:
        """The relations with every binding moved to ``nodes``."""
        if not self.bound_boundaries:
            return self.relations

        def resolve(value):
            if isinstance(value, _Operand):
                return nodes[value.slot]
            if isinstance(value, tuple):
                return tuple(resolve(v) for v in value)
            return value

        sides = {"inputs": list(self.relations.inputs), "outputs": list(self.relations.outputs)}
        for side, k in self.bound_boundaries:
            boundary = sides[side][k]
            sides[side][k] = _with_parameters(
                boundary, tuple((n, resolve(v)) for n, v in boundary.pattern.parameters))
        return AccessRelations(tuple(sides["inputs"]), tuple(sides["outputs"]),
                               self.relations.domain)


def _with_parameters(boundary: BoundaryRelation, parameters: tuple) -> BoundaryRelation:
    """``boundary`` with other parameter values under the same names: the maps
    are unchanged, so the carrier's checks need not run again."""
    access = copy.copy(boundary.pattern)
    object.__setattr__(access, "parameters", parameters)
    return BoundaryRelation(access)


def clear_relation_memo() -> None:
    _MEMO.clear()


def relations_of_call(call) -> AccessRelations:
    """Relations of a built Call. The handler never reads the call's own type;
    the carrier then holds every output boundary's image rank to it (§1.2)."""
    relations = access_relations(call.op, call.args)
    check_output_ranks(call.op, relations, call.type)
    return relations


def _boundary_rank(type_) -> int | None:
    if isinstance(type_, TensorType):
        return type_.rank
    if isinstance(type_, TupleType):
        ranks = {_boundary_rank(f) for f in type_.fields}
        if len(ranks) == 1:
            r = ranks.pop()
            return None if r is None else 1 + r
        return None
    return None


def _check_ranks(op, arg_types, relations: AccessRelations) -> None:
    if len(relations.inputs) != len(arg_types):
        raise VerifyError(
            f"{op.class_name}: relation has {len(relations.inputs)} input boundaries for "
            f"{len(arg_types)} arguments"
        )
    for k, (boundary, type_) in enumerate(zip(relations.inputs, arg_types)):
        want = _boundary_rank(type_)
        if boundary is not None and want is not None and boundary.pattern.rank != want:
            raise VerifyError(
                f"{op.class_name}: input boundary {k} has image rank {boundary.pattern.rank} but its "
                f"type has rank {want}"
            )


def check_output_ranks(op, relations: AccessRelations, result_type) -> None:
    if isinstance(result_type, TupleType) and len(relations.outputs) == 1 and len(result_type.fields) != 1:
        return  # a whole tuple moved as one value (tuple_get_item of a nested tuple): no one rank
    fields = result_type.fields if isinstance(result_type, TupleType) else (result_type,)
    if len(fields) != len(relations.outputs):
        raise VerifyError(
            f"{op.class_name}: relation has {len(relations.outputs)} output boundaries for "
            f"{len(fields)} result fields"
        )
    for k, (boundary, type_) in enumerate(zip(relations.outputs, fields)):
        want = _boundary_rank(type_)
        if want is not None and boundary.pattern.rank != want:
            raise VerifyError(
                f"{op.class_name}: output boundary {k} has image rank {boundary.pattern.rank} but "
                f"its type has rank {want}"
            )


# ---------------------------------------------------------------- relation-derived facts (§1.1)


@dataclass(frozen=True)
class RelationFacts:
    """What an op's relation states beyond its maps: reduced dims, broadcast axes, symbolic
    sizes and output extents."""

    reduction_dims: frozenset  # domain dims read by an input but absent from every output
    broadcast_axes: tuple  # per input: the axes read at a constant
    symbolic_sizes: tuple  # ((param name, dim), ...)
    output_extents: tuple  # per output: per axis the extent reached, or None


def relation_facts(relations: AccessRelations) -> RelationFacts:
    """Read reduction dims, broadcast axes and symbolic sizes off the affine
    structure (size-agnostic; identical for static and dynamic shapes)."""
    out_dims = set()
    for boundary in relations.outputs:
        for axis in boundary.pattern.axes:
            out_dims.update(axis.dims_used())
    in_dims = set()
    broadcast = []
    for boundary in relations.inputs:
        if boundary is None:
            broadcast.append(())
            continue
        axes = boundary.pattern.axes
        broadcast.append(tuple(k for k, a in enumerate(axes) if a.is_constant))
        for a in axes:
            in_dims.update(a.dims_used())
    symbolic = []
    seen = set()
    for boundary in list(relations.inputs) + list(relations.outputs):
        if boundary is None:
            continue
        for name, value in boundary.pattern.parameters:
            if name not in seen and not hasattr(value, "type"):
                seen.add(name)
                symbolic.append((name, value))
    extents = []
    for boundary in relations.outputs:
        row = []
        for axis in boundary.pattern.axes:
            if axis.is_projection:
                row.append(relations.domain[axis.dim])
            elif axis.is_constant:
                row.append(1)
            else:
                row.append(None)
        extents.append(tuple(row))
    return RelationFacts(frozenset(in_dims - out_dims), tuple(broadcast), tuple(symbolic), tuple(extents))


def derive_output_shape(relations: AccessRelations, index: int = 0) -> tuple:
    """The extents the output relation reaches (projections and constants only)."""
    row = relation_facts(relations).output_extents[index]
    if any(e is None for e in row):
        raise VerifyError("derive_output_shape: the output relation is not a projection on every axis")
    return row

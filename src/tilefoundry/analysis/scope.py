"""Shared Scope and Access (analysis §2.1).

The normalized HIR is visited once per ``analyze`` call. That visit produces a
Scope tree parallel to Function / GridRegionExpr nesting: every primitive Call
is placed in the scope whose body first reaches it (the printer's placement),
``domain`` accumulates the authored loop domain outermost first, and the
Access relations of the narrow (one unit of the level) and device (as written)
views are derived on first request, once per call, from the op's registered
access relation. A call whose op states no relation is recorded in
``refused`` and makes its owning scopes unknown for that view.

Families read ``Scope.accesses(view)`` and ``Scope.refused(view)`` only; the
relation composition with positions (companions §4.3) is the consuming family's
business and is memoised by structural key there.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tilefoundry.ir.expr import Call, Constant, GridRegionExpr, Tuple, Var
from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.function import Function

__all__ = ["Access", "LoopDomain", "Scope", "build_scopes", "VIEWS"]

VIEWS = ("narrow", "device")


@frozen_record
class Access:
    """One boundary of one call: its relation and the allocation expression it
    reaches (an argument, or the call itself for an output). Storage level and
    element width are read from the allocation's type."""

    relation: object  # BoundaryRelation
    allocation: object  # the Expr whose storage the relation indexes
    call: object = None
    output: bool = False
    index: int = 0  # argument position, or result field


@frozen_record
class LoopDomain:
    """One authored loop of the accumulated domain."""

    induction_var: object
    start: object
    extent: object
    step: object
    trips: object


@dataclass(eq=False)
class Scope:
    """A Function body or one authored loop body."""

    node: object  # Function or GridRegionExpr
    parent: "Scope | None" = None
    domain: tuple = ()  # LoopDomain, outermost first
    children: list = field(default_factory=list)
    calls: list = field(default_factory=list)  # primitive Calls placed here, postorder
    _accesses: dict = field(default_factory=dict, repr=False)
    _refused: dict = field(default_factory=dict, repr=False)
    _relations: object = field(default=None, repr=False)  # shared per-call cache

    @property
    def kind(self) -> str:
        return "function" if isinstance(self.node, Function) else "loop"

    @property
    def loop(self):
        return None if isinstance(self.node, Function) else self.node

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()

    def scope_of(self, node) -> "Scope | None":
        """The scope a call (or loop) is placed in."""
        return self._relations.placement.get(id(node)) if self._relations else None

    # ---------------------------------------------------------------- accesses
    def _derive(self, view: str) -> None:
        _check_view(view)
        if view in self._accesses:
            return
        accesses: list = []
        refused: list = []
        for call in self.calls:
            answer = self._relations.of(call, view)
            if isinstance(answer, str):
                refused.append((call, answer))
            else:
                accesses.extend(answer)
        for child in self.children:
            child._derive(view)
            refused.extend(child._refused[view])
        self._accesses[view] = tuple(accesses)
        self._refused[view] = tuple(refused)

    def accesses(self, view: str = "device") -> tuple:
        """Accesses of the calls placed directly in this scope."""
        self._derive(view)
        return self._accesses[view]

    def all_accesses(self, view: str = "device") -> tuple:
        found = list(self.accesses(view))
        for child in self.children:
            found.extend(child.all_accesses(view))
        return tuple(found)

    def refused(self, view: str = "device") -> tuple:
        """(call, reason) for every call here or below with no representable relation."""
        self._derive(view)
        return self._refused[view]

    def known(self, view: str = "device") -> bool:
        return not self.refused(view)

    def refuses(self, call, view: str = "device") -> bool:
        """Whether one call placed here or below states no relation in ``view``
        (``refused`` asked of one call: the others' relations are not derived)."""
        _check_view(view)
        return isinstance(self._relations.of(call, view), str)


def _check_view(view: str) -> None:
    if view not in VIEWS:
        raise ValueError(f"Scope: unknown view {view!r}; views are {VIEWS}")


class _Relations:
    """Per-analyze cache: one relation derivation per call and view."""

    def __init__(self, level, topologies):
        self.level = level
        self.topologies = topologies
        self.cache: dict = {}
        self.placement: dict[int, Scope] = {}

    def of(self, call, view: str):
        key = (id(call), view if self.level is not None else "device")
        if key in self.cache:
            return self.cache[key]
        from tilefoundry.semantics.relations import access_relations
        from tilefoundry.errors import TileFoundryError

        try:
            if view == "narrow" and self.level is not None:
                from tilefoundry.semantics.cost import logical_local_type

                types = [logical_local_type(a.type, self.level, self.topologies) for a in call.args]
                relations = access_relations(call.op, call.args, types)
            else:
                relations = access_relations(call.op, call.args)
        except TileFoundryError as exc:
            answer = exc.reason
        else:
            answer = [Access(b, arg, call, False, i) for i, (b, arg) in
                      enumerate(zip(relations.inputs, call.args))]
            answer += [Access(b, call, call, True, i) for i, b in enumerate(relations.outputs)]
        self.cache[key] = answer
        return answer


def build_scopes(function: Function, level: str | None = None, topologies: tuple = ()) -> Scope:
    """One visit of the normalized Function: the Scope tree with every call placed."""
    relations = _Relations(level, tuple(topologies))
    root = Scope(function, None, (), _relations=relations)
    seen: set[int] = set()
    stack: list = [(function.body, root, False)] if function.body is not None else []
    # iterative postorder so deep programs do not hit the recursion limit
    while stack:
        node, scope, expanded = stack.pop()
        if expanded:
            if isinstance(node, Call):
                scope.calls.append(node)
                relations.placement[id(node)] = scope
            continue
        if id(node) in seen or isinstance(node, (Var, Constant)):
            continue
        seen.add(id(node))
        if isinstance(node, GridRegionExpr):
            relations.placement[id(node)] = scope
            domain = scope.domain + (LoopDomain(node.induction_var, node.start, node.extent,
                                                node.step, node.trips),)
            child = Scope(node, scope, domain, _relations=relations)
            scope.children.append(child)
            # inits in the enclosing scope, then yields in the body (pushed reversed)
            for value in reversed(node.yields):
                stack.append((value, child, False))
            for value in reversed(node.inits):
                stack.append((value, scope, False))
            continue
        stack.append((node, scope, True))
        children = node.args if isinstance(node, Call) else node.fields if isinstance(node, Tuple) else ()
        for value in reversed(children):
            stack.append((value, scope, False))
    return root

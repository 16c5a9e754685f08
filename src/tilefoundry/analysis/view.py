"""The analysed view: one entry Function with every reachable call inlined
(companions §3.1). The authored module is never written; the view's nodes are
new, carry the authored spans and execution domains, and are the only nodes
analyses attach records to.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tilefoundry.errors import AnalysisError, VerifyError
from tilefoundry.ir.expr import Call, Constant, GridRegionExpr, Tuple, Var
from tilefoundry.ir.frozen import frozen_dataclass, frozen_record
from tilefoundry.ir.function import Function
from tilefoundry.ir.metadata import (
    AuthoredNameMetadata,
    BindingMetadata,
    CallPathMetadata,
    IRMetadata,
    ExecutionDomainMetadata,
    SourceSpanMetadata,
)
from tilefoundry.ir.module import AttachedCallMetadata, Module, dotted_tree
from tilefoundry.ir.substitute import bind_dims
from tilefoundry.ir.shard import ShardLayout
from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.analysis.dim_binding import select_variant
from tilefoundry.ir.dim import is_static
from tilefoundry.semantics.elaborate import match_parameters
from tilefoundry.semantics.structural_key import literal_key
from tilefoundry.semantics.typeinfer import build_call

DEFAULT_NODE_BUDGET = 200_000
_PENDING = object()  # the walk's marker: this node's operands are still to visit
_CARRIED = (SourceSpanMetadata, ExecutionDomainMetadata)
_INTERNED = (TensorType, TupleType)  # what ``_bound`` shares by value: an op is not (1 == 1.0)


@frozen_dataclass
class DerivedFunctionMetadata(IRMetadata):
    """What an analysed view was derived from, on the view's Function.

    Attributes:
        origin: the authored Function (variant resolved) the view inlines.
        extents: (dimension, extent) bound when it was derived, sorted by name.
            These, not the signature, say which size the view is at: a dimension
            used only in a loop bound or a callee leaves the signature unchanged.
        call_sites: ``ProgramView.call_sites``, so whatever reads the view alone
            (a rendering's execution counts) finds the recomputation factors the
            families used; not compared, hashed or shown.
    """

    origin: object
    extents: tuple = ()
    call_sites: dict = field(default_factory=dict, compare=False, repr=False)


@frozen_record(eq=False)
class CallSite:
    """One Function call site a primitive was inlined through: the site's view
    arguments and the site it was itself inlined through. Sites are shared by
    every primitive under them, so a call chain d deep costs d sites, not d per
    primitive."""

    args: tuple
    outer: "CallSite | None" = None
    # the calls from the entry down to this one, as CallPathMetadata states them
    path: tuple = ()


@dataclass
class ProgramView:
    """The inlined entry and what names its parameters."""

    module: Module
    function: Function  # record-bearing, inlined
    authored: Function  # the entry as authored (variant resolved)
    promoted: dict = field(default_factory=dict)  # view Var -> dotted weight name
    node_count: int = 0
    # id(view primitive Call) -> the innermost Function call site (CallSite) it
    # was inlined through (compute-cost's Function-call rule)
    call_sites: dict = field(default_factory=dict)
    # the effective topologies under the same binding as the types and meshes
    # (set by the program check: one binding pass for all three, analysis §2)
    topologies: tuple = ()

    def parameter_name(self, var: Var) -> str:
        return self.promoted.get(var, var.name)


def weight_owners(module: Module) -> dict[int, tuple[int, str]]:
    """id(param Var) -> (declaration ordinal, dotted module path relative to
    ``module``). Ordinals follow the tree owner-before-children, then function
    and parameter order: the order promoted weights take (analysis §2)."""
    owners: dict[int, tuple[int, str]] = {}
    for node, prefix in dotted_tree(module):
        for function in node.functions:
            for declared in (function, *(variant for _, variant in function.variants)):
                for param in declared.params:
                    owners.setdefault(id(param), (len(owners), prefix))
    return owners


@dataclass
class _Scope:
    """One inlined function body: authored Var -> view node, and the dims bound
    there (the analysis bindings plus what this call site's shapes fix)."""

    env: dict
    bindings: dict
    memo: dict = field(default_factory=dict)

    def inner(self) -> "_Scope":
        """A loop body: its own carried Vars, the same dims and memo."""
        return _Scope(dict(self.env), self.bindings, self.memo)


class _Inliner:
    def __init__(self, module: Module, bindings: dict[str, int], budget: int, entry_name: str):
        self.bindings = bindings
        self.budget = budget
        self.entry_name = entry_name
        self.owners = weight_owners(module)
        self.counter = 0
        self.nodes = 0
        self.taken: set[str] = set()
        self.promoted: dict[int, Var] = {}  # id(authored const Var) -> view Var
        self.promoted_order: list[tuple[str, Var]] = []
        self.promoted_ordinals: dict[str, int] = {}
        self.promoted_by_name: dict[str, Var] = {}  # dotted weight name -> its view Var
        self.site: CallSite | None = None  # the call site being inlined
        self.call_sites: dict[int, CallSite] = {}
        # Past the budget the view is only counted, so that the refusal can state
        # the exact size: a callee expansion is then built once per (callee,
        # argument types) and reused, keeping an exponential blow-up cheap to count.
        self.oversize = False
        self.expansions: dict = {}
        self.bound_memo: dict = {}  # (id(authored object), id(bindings)) -> (object, bound)
        self.bindings_by_items: dict = {frozenset(bindings.items()): bindings}
        self.records: dict = {}  # (record class, value) -> the one record (``_shared``)
        self.types: dict = {}  # type -> the one equal type object the view uses (``_type``)
        self.calls: dict = {}  # ``_call_key`` -> (type, Structure, op, scopes) of a primitive built

    # ---------------------------------------------------------------- entry
    def run(self, function: Function) -> tuple[list[Var], object]:
        params = [Var(p.name, bind_dims(p.type, self.bindings), p.is_const) for p in function.params]
        self.taken = {p.name for p in params}
        env = {id(p): v for p, v in zip(function.params, params)}
        body = self._inline_body(function, _Scope(env, self.bindings))
        return params, body

    def _inline_body(self, function: Function, scope: _Scope):
        return self._visit(_body_of(function), scope)

    # ---------------------------------------------------------------- walk
    # A body can chain more nodes than Python's recursion limit (a whole-model
    # step inlines thousands), so the walk is a trampoline: each node's rebuild
    # is a generator that yields (child, scope) for every operand it needs, in
    # authored order, and receives the child's view node back. The order of
    # visits, and so the view's names v0, v1, ..., is that of a recursive walk.
    def _visit(self, node, scope: _Scope):
        done = self._settled(node, scope)
        if done is not _PENDING:
            return done
        stack = [(self._rebuild(node, scope), node, scope)]
        answer = None
        while stack:
            rebuild, current, current_scope = stack[-1]
            try:
                child, child_scope = rebuild.send(answer)
            except StopIteration as finished:
                stack.pop()
                current_scope.memo[id(current)] = answer = finished.value
                continue
            answer = self._settled(child, child_scope)
            if answer is _PENDING:
                stack.append((self._rebuild(child, child_scope), child, child_scope))
                answer = None
        return answer

    def _settled(self, node, scope: _Scope):
        """The view node of ``node`` if it needs no operands (memoised, or a
        leaf), else _PENDING."""
        key = id(node)
        if key in scope.memo:
            return scope.memo[key]
        if isinstance(node, Var):
            result = self._resolve_var(node, scope)
        elif isinstance(node, Constant):
            result = self._count(Constant(node.value, self._bound(node.type, scope.bindings)), node, scope)
        else:
            return _PENDING
        scope.memo[key] = result
        return result

    def _rebuild(self, node, scope: _Scope):
        if isinstance(node, Tuple):
            fields = []
            for f in node.fields:
                fields.append((yield f, scope))
            return self._count(Tuple(tuple(fields), self._type(TupleType(tuple(f.type for f in fields)))), node, scope)
        if isinstance(node, GridRegionExpr):
            return (yield from self._rebuild_loop(node, scope))
        if isinstance(node, Call):
            args = []
            for a in node.args:
                args.append((yield a, scope))
            if isinstance(node.op, Function):
                return (yield from self._inline_call(node, tuple(args)))
            return self._primitive(node, tuple(args), scope)
        raise VerifyError(f"analysis view: unexpected node {type(node).__name__}")

    def _resolve_var(self, var: Var, scope: _Scope):
        if id(var) in scope.env:
            return scope.env[id(var)]
        if var.is_const:
            return self._promote(var)
        raise VerifyError(f"analysis view: '{var.name}' is used outside the scope that binds it")

    def _promote(self, var: Var) -> Var:
        """A child module's weight read by reachable code becomes an entry parameter."""
        if id(var) in self.promoted:
            return self.promoted[id(var)]
        ordinal, prefix = self.owners.get(id(var), (len(self.owners), ""))
        dotted = f"{prefix}{var.name}"
        type_ = self._bound(var.type, self.bindings)
        existing = self.promoted_by_name.get(dotted)
        if existing is not None:
            if existing.type != type_:
                raise VerifyError(
                    f"weight '{dotted}' is declared with unequal types {existing.type} and {type_}"
                )
            self.promoted[id(var)] = existing
            return existing
        view_var = Var(dotted, type_, True)
        self.promoted[id(var)] = view_var
        self.promoted_by_name[dotted] = view_var
        self.promoted_order.append((dotted, view_var))
        self.promoted_ordinals[dotted] = ordinal
        return view_var

    def _primitive(self, node: Call, args: tuple, scope: _Scope):
        span = node.get_metadata(SourceSpanMetadata)
        binding = node.get_metadata(BindingMetadata)
        domain = node.get_metadata(ExecutionDomainMetadata)
        op = self._bound(node.op, scope.bindings)
        scopes = self._bound(domain.scopes, scope.bindings) if domain else ()
        key = _call_key(op, args, scopes)
        try:
            known = self.calls.get(key)
        except TypeError:
            key = known = None
        if known is not None:
            call = Call(op, args, known[0], known[1])
        else:
            call = build_call(op, args, location=span,  # spelled only if a refusal states it
                              binding=binding.name if binding else None, scopes=scopes)
            call.type = self._type(call.type)
            if key is not None:
                self.calls[key] = (call.type, call.structure, op, scopes)  # op, scopes kept alive
        self._count(call, node, scope)
        call.with_metadata(BindingMetadata(self._next_call_name()))
        if binding is not None:
            call.with_metadata(self._shared(AuthoredNameMetadata, binding.name))
        if self.site:
            self.call_sites[id(call)] = self.site
            call.with_metadata(self._shared(CallPathMetadata, self.site.path))
        return call

    def _shared(self, cls, value):
        """One ``cls(value)`` record for every call that states it: a layer's
        names and call paths repeat over thousands of calls (records are
        immutable, and a record object serves many nodes)."""
        key = (cls, value)
        found = self.records.get(key)
        if found is None:
            found = self.records[key] = cls(value)
        return found

    def _next_call_name(self) -> str:
        while True:
            name = f"v{self.counter}"
            self.counter += 1
            if name not in self.taken:
                return name

    def _inline_call(self, node: Call, args: tuple):
        """Inline one call site: its shapes may fix the callee's own DimVars,
        which then select the callee's variant and bind its body."""
        span = node.get_metadata(SourceSpanMetadata)
        _, fixed = match_parameters(node.op, tuple(a.type for a in args),
                                    {"location": str(span) if span else None})
        bindings = self._interned({**self.bindings, **{n: v for n, v in fixed.items() if is_static(v)}})
        callee = select_variant(node.op, bindings)
        env = {id(p): a for p, a in zip(callee.params, args)}
        key = (id(callee), tuple(a.type for a in args)) if self.oversize else None
        if key in self.expansions:
            result, size = self.expansions[key]
            self.nodes += size
            return result
        before, outer = self.nodes, self.site
        self.site = CallSite(args, outer, (outer.path if outer else ()) + (_call_name(node, callee),))
        try:
            result = yield _body_of(callee), _Scope(env, bindings)
        finally:
            self.site = outer
        if self.oversize:
            self.expansions[(id(callee), tuple(a.type for a in args))] = (result, self.nodes - before)
        return result

    def _rebuild_loop(self, loop: GridRegionExpr, scope: _Scope):
        inits = []
        for authored_init in loop.inits:
            inits.append((yield authored_init, scope))
        inits = tuple(inits)
        induction = Var(loop.induction_var.name, self._bound(loop.induction_var.type, scope.bindings))
        carried = tuple(Var(c.name, init.type) for c, init in zip(loop.carried, inits))
        body = scope.inner()
        body.env[id(loop.induction_var)] = induction
        for old, new in zip(loop.carried, carried):
            body.env[id(old)] = new
        # authored body nodes are reached only from this loop, so the memo is shared
        yields = []
        for authored_yield in loop.yields:
            yields.append((yield authored_yield, body))
        yields = tuple(yields)
        for var, value in zip(carried, yields):
            if not _carry_compatible(var.type, value.type):
                span = loop.get_metadata(SourceSpanMetadata)
                where = f"{span}: " if span else ""
                raise VerifyError(
                    f"{where}loop '{induction.name}': carried value '{var.name}' enters as "
                    f"{var.type} but the body yields {value.type}; a carried value keeps its "
                    "shape, dtype, storage and layout across trips (reshard or cast it inside the loop)"
                )
        type_ = carried[0].type if len(carried) == 1 else self._type(TupleType(tuple(c.type for c in carried)))
        start, extent, step = (self._bound(v, scope.bindings) for v in (loop.start, loop.extent, loop.step))
        if loop.kind == "tile" and not is_static(loop.extent) and is_static(extent) and is_static(step):
            _check_tile_windows(loop, extent, step, scope.bindings)
        rebuilt = GridRegionExpr(induction, carried, inits, yields, start, extent, step, loop.kind, type_)
        return self._count(rebuilt, loop, scope)

    def _bound(self, value, bindings: dict):
        """``bind_dims(value, bindings)``, once per authored object and bindings:
        a layer inlined 32 times binds its ops, types and records once."""
        key = (id(value), id(bindings))
        hit = self.bound_memo.get(key)
        if hit is None:
            bound = bind_dims(value, bindings)
            if type(bound) in _INTERNED:
                bound = self._type(bound)
            hit = self.bound_memo[key] = (value, bound)  # value kept alive
        return hit[1]

    def _type(self, type_):
        """One object per distinct type in the view: the analyses' memos key on
        types, and a key met again as the very same object is found without
        comparing it field by field (the parser gives each literal its own)."""
        try:
            return self.types.setdefault(type_, type_)
        except TypeError:  # unhashable somewhere inside: kept as it is
            return type_

    def _interned(self, bindings: dict) -> dict:
        """One dict per distinct set of bindings, so call sites that fix the same
        dims share ``_bound``'s memo."""
        key = frozenset(bindings.items())
        return self.bindings_by_items.setdefault(key, bindings)

    def _count(self, new, old, scope: _Scope):
        # the carried records are bound too: an execution domain's meshes are
        # geometry of the same program, so one binding reaches them (analysis §2)
        for cls in _CARRIED:
            record = old.get_metadata(cls)
            if record is not None:
                new.with_metadata(self._bound(record, scope.bindings))
        self.nodes += 1
        if self.nodes > self.budget:
            self.oversize = True
        return new


def _call_key(op, args: tuple, scopes):
    """A primitive's typeinfer question by identity: its bound op and scopes
    and, per operand, the operand's (interned) type and which earlier operand
    it is, a literal by its value (typeinfer reads values; ``literal_key``) and
    a tuple field by field. The view's ops, scopes and types are one object
    per distinct value, so equal keys ask typeinfer's very question (the key
    ``structural_key.operand_structure`` builds, by identity) and get its
    answer without building and hashing that key (a literal that
    cannot be hashed makes the key unhashable: ``_primitive`` asks typeinfer)."""
    first: dict = {}

    def part(arg):
        kind = type(arg)
        if kind is Constant:
            return literal_key(arg)
        if kind is Tuple:
            return ("tuple", tuple(map(part, arg.fields)))
        return first.setdefault(id(arg), len(first)), id(arg.type)

    return id(op), id(scopes), tuple(map(part, args))


def _call_name(node: Call, callee: Function) -> str:
    """A call as its caller wrote it: a child Module by the attribute it is called
    through (authoring §2.8), a sibling by the callee's name."""
    attached = node.get_metadata(AttachedCallMetadata)
    return attached.attribute if attached is not None else callee.name


def build_view(module: Module, function: Function, bindings: dict[str, int] | None = None,
               budget: int = DEFAULT_NODE_BUDGET) -> ProgramView:
    """Inline ``function`` (of ``module``) under the dim ``bindings``."""
    bindings = dict(bindings or {})
    authored = select_variant(function, bindings)
    inliner = _Inliner(module, bindings, budget, function.name)
    params, body = inliner.run(authored)
    if inliner.oversize:  # counted to the end, so the refusal states the exact size
        raise AnalysisError(
            f"inlining '{function.name}' produces {inliner.nodes} body nodes, exceeding "
            f"the node budget {budget}"
        )
    inliner.promoted_order.sort(key=lambda item: inliner.promoted_ordinals[item[0]])
    promoted = {var: name for name, var in inliner.promoted_order}
    all_params = params + [var for _, var in inliner.promoted_order]
    result_type = body.type
    view_fn = Function(function.name, all_params, body, result_type)
    view_fn.with_metadata(DerivedFunctionMetadata(authored, tuple(sorted(bindings.items())),
                                               inliner.call_sites))
    return ProgramView(module, view_fn, authored, promoted, inliner.nodes, inliner.call_sites)


def _body_of(function: Function):
    if function.body is None:
        raise AnalysisError(
            f"function '{function.name}' is a prototype (its body is `pass`) and no "
            "variant covers the bound dimensions, so there is nothing to analyse"
        )
    return function.body


def _check_tile_windows(loop: GridRegionExpr, extent: int, step: int, bindings: dict) -> None:
    """A ``tile`` loop whose extent a bound dimension fixes keeps its windows
    inside it (authoring §5.5-5.6): the front end refuses a static extent at
    the ``for``; this is the same refusal for the binding that made it so."""
    from tilefoundry.ir.dim import format_dim
    from tilefoundry.ir.substitute import collect_dimvars
    from tilefoundry.ir.tile_windows import tile_overhang_refusal

    names = sorted(collect_dimvars(loop.extent, {}))
    bound = ", ".join(f"{name}={bindings[name]}" for name in names if name in bindings)
    refusal = tile_overhang_refusal(extent, step, format_dim(loop.extent), bound)
    if refusal:
        span = loop.get_metadata(SourceSpanMetadata)
        raise VerifyError(f"{span}: {refusal}" if span else refusal)


def _strip_strides(type_):
    """A type's distribution without its physical strides."""
    if isinstance(type_, TupleType):
        return TupleType(tuple(_strip_strides(f) for f in type_.fields))
    shard = getattr(type_, "layout", None)
    if isinstance(shard, ShardLayout) and shard.layout.strides is not None:
        return type_.with_(layout=shard.with_strides(None))
    return type_


def _carry_compatible(entering, yielded) -> bool:
    """A carried value keeps shape, dtype, storage and distribution across
    trips; only its physical strides may be re-materialised by the body."""
    if entering is yielded:  # the view's types are one object per distinct type
        return True
    return _strip_strides(entering) == _strip_strides(yielded)

"""How often each node of the inlined view runs (analysis §1.2.1): the loops a
node transitively reads, and its recomputation factor, the product of their trip
counts. Every family that multiplies a per-occurrence record by its executions
(compute-cost, memory, performance, collectives) and the views read it here."""
from __future__ import annotations

from tilefoundry.errors import AnalysisError
from tilefoundry.ir.dim import is_static
from tilefoundry.ir.expr import Call, GridRegionExpr, Tuple, Var
from tilefoundry.ir.function import Function
from tilefoundry.analysis.view import CallSite, DerivedFunctionMetadata

__all__ = ["loop_dependence", "occurrence_weights", "recomputation_factors"]


# every family asks this of the same view: the last few answers are kept, with
# the function and call-site table they were asked of (so their ids stay unique)
_RECENT: list = []
_RECENT_SIZE = 2


def loop_dependence(function: Function, call_sites: dict | None = None) -> dict[int, frozenset]:
    """``_loop_dependence``, answered once per view and call-site table (the
    answer is shared: callers read it, never write it). Without ``call_sites``,
    an analysed view's own (``DerivedFunctionMetadata``) are read: every family
    and rendering counts a statement's executions alike."""
    if call_sites is None:
        derived = function.get_metadata(DerivedFunctionMetadata)
        call_sites = derived.call_sites if derived is not None else None
    for kept_function, kept_sites, deps in _RECENT:
        if kept_function is function and kept_sites is call_sites:
            return deps
    deps = _loop_dependence(function, call_sites)
    _RECENT.insert(0, (function, call_sites, deps))
    del _RECENT[_RECENT_SIZE:]
    return deps


def _loop_dependence(function: Function, call_sites: dict | None = None) -> dict[int, frozenset]:
    """id(node) -> the loops (GridRegionExpr) whose induction variable or carried
    value the node transitively reads. A loop's own result reads the loops its
    inits and (other than itself) its yields read.

    ``call_sites`` (``ProgramView.call_sites``): id(inlined primitive) -> the
    innermost Function call site (``view.CallSite``) it was inlined through.
    Such a primitive also reads every argument of that site and of the sites
    outside it, because the Function Call it stands in for reads them all;
    readers of the callee's result then inherit them transitively, as they
    would through the Function Call. A site is solved once, as a node whose
    operands are its arguments and its outer site."""
    call_sites = call_sites or {}
    deps: dict[int, frozenset] = {}
    var_deps: dict[int, frozenset] = {}
    empty: frozenset = frozenset()

    def children(node):
        if isinstance(node, Call):
            site = call_sites.get(id(node))
            return node.args + (site,) if site is not None else node.args
        if isinstance(node, Tuple):
            return node.fields
        if isinstance(node, CallSite):
            return node.args + (node.outer,) if node.outer is not None else node.args
        return ()

    def solve(root) -> frozenset:
        # iterative postorder over non-loop nodes; loops handled on the way up
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            key = id(node)
            if key in deps:
                continue
            if expanded:
                # most operands read no loop, or the same loops as their
                # neighbours: one of their sets is shared where it holds the rest
                found = empty
                for child in children(node):
                    one = deps[id(child)]
                    if one and one is not found:
                        found = found | one if found else one
                deps[key] = found
                continue
            if isinstance(node, (Call, Tuple, CallSite)):
                stack.append((node, True))
                for child in children(node):
                    if id(child) not in deps:
                        stack.append((child, False))
            elif isinstance(node, Var):
                deps[key] = var_deps.get(key, empty)
            elif isinstance(node, GridRegionExpr):
                pending = [v for v in node.inits if id(v) not in deps]
                if pending:
                    stack.append((node, False))
                    stack.extend((v, False) for v in pending)
                    continue
                deps[key] = _solve_loop(node)
            else:  # a literal (or any leaf): it reads no loop
                deps[key] = empty
        return deps[id(root)]

    def _solve_loop(loop) -> frozenset:
        outer = empty
        for init in loop.inits:
            outer = outer | deps[id(init)]
        carried = frozenset((loop,)) | outer
        var_deps[id(loop.induction_var)] = frozenset((loop,))
        for _ in range(64):
            for var in loop.carried:
                var_deps[id(var)] = carried
            body = empty
            for value in loop.yields:
                body = body | solve(value)
            grown = carried | (body - {loop})
            if grown == carried:
                break
            carried = grown
            # forget every body answer that read this loop; it is recomputed
            for node_id in [k for k, v in deps.items() if loop in v]:
                del deps[node_id]
        return outer | (body - {loop})

    if function.body is not None:
        solve(function.body)
    return deps


def recomputation_factors(function: Function, deps: dict | None = None,
                          call_sites: dict | None = None) -> dict[int, int]:
    """id(call) -> product of the trip counts of the loops it transitively reads
    (``call_sites`` as for ``loop_dependence``)."""
    deps = loop_dependence(function, call_sites) if deps is None else deps
    trips: dict[int, int] = {}
    factors: dict[int, int] = {}
    for node_id, loops in deps.items():
        factor = 1
        for loop in loops:
            count = trips.get(id(loop))
            if count is None:
                count = loop.trips
                if not is_static(count):
                    raise AnalysisError(
                        f"loop '{loop.induction_var.name}' has a trip count that is not concrete; "
                        "bind its dimensions with --dim"
                    )
                trips[id(loop)] = count
            factor *= count
        factors[node_id] = factor
    return factors


def occurrence_weights(records, factors: dict) -> list:
    """[(record, weight)] for ``records`` ((id(call), record) pairs): each
    distinct (record, factor) pair once, its weight the factor times its
    occurrences. A whole model's calls share a few hundred such pairs, so a
    total sums each once (its figures are exact integers)."""
    weights: dict = {}  # (id(record), factor) -> [record, occurrences]
    for call_id, record in records:
        weight = weights.setdefault((id(record), factors.get(call_id, 1)), [record, 0])
        weight[1] += 1
    return [(record, factor * occurrences) for (_, factor), (record, occurrences) in weights.items()]

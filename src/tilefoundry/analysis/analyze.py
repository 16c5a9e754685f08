"""analyze(): the dependency-composed measurement operation (analysis §2).

One call selects one or more root analyses; their union dependency closure is
resolved through the Module's exact Target (``get_analyzer``), ordered so every
dependency precedes its dependants, and each member runs once on the inlined,
record-bearing view ``check_program`` returns. Record ownership is enforced
against what actually reached the IR. Nothing is cached across calls.
"""
from __future__ import annotations

import contextlib
from typing import Iterable, Mapping

from tilefoundry.errors import AnalysisError, TileFoundryError
from tilefoundry.ir.expr import Call, GridRegionExpr
from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.function import Function
from tilefoundry.ir.module import Module, subtree
from tilefoundry.analysis.check import (
    check_program_view, iter_nodes, record_changes, record_snapshot, resolve_level,
)
from tilefoundry.analysis.descriptor import Analyzer, AnalyzeContext
from tilefoundry.analysis.dim_binding import resolve_dims
from tilefoundry.analysis.scope import build_scopes

__all__ = ["AnalysisResult", "analyze", "analyze_served", "reporting_progress", "resolve_closure"]


@frozen_record
class AnalysisResult:
    """Record what one composed Analyze call computed.

    Attributes:
        module: source Module (as the caller supplied it).
        function: Function that received records (the inlined view).
        analyses: requested root analyses in first-occurrence order.
        level: topology level whose unit the per-unit quantities describe, or None.
        executed: analyses executed in dependency order.
        metadata_types: Metadata classes actually written, in execution order.
        refused: ``(family, reason)`` of each family ``analyze_served`` asked for
            that could not answer (``analyze --all``); empty for ``analyze``.
    """

    module: Module
    function: Function
    analyses: tuple
    level: str | None
    executed: tuple
    metadata_types: tuple
    refused: tuple = ()


# ---------------------------------------------------------------- selectors


def _roots(analysis) -> tuple[str, ...]:
    if isinstance(analysis, str):
        items = [analysis]
    else:
        try:
            items = list(analysis)
        except TypeError:
            raise AnalysisError(
                f"analyze: analysis must be a selector or an iterable of selectors, got {analysis!r}"
            ) from None
    roots: list[str] = []
    for item in items:
        if not isinstance(item, str) or not item:
            raise AnalysisError(f"analyze: analysis selector {item!r} is not a non-empty str")
        if item not in roots:
            roots.append(item)
    if not roots:
        raise AnalysisError("analyze: select at least one analysis (e.g. analysis='compute-cost')")
    return tuple(roots)


def _get(target, selector: str, *, root: str | None, path: tuple):
    """One analyzer from the exact Target; a missing root and a missing
    dependency are different errors (the caller's selector vs a broken Target)."""
    try:
        analyzer = target.get_analyzer(selector)
    except TileFoundryError as exc:
        reason = str(exc)
        if root is None:
            raise AnalysisError(f"unknown analysis selector '{selector}': {reason}") from None
        chain = " -> ".join(path + (selector,))
        raise AnalysisError(
            f"'{root}' depends on '{selector}', which is not registered: {reason} "
            f"(dependency chain {chain})"
        ) from None
    if not isinstance(analyzer, Analyzer):
        raise AnalysisError(
            f"{type(target).__name__}: get_analyzer('{selector}') returned {analyzer!r}, not an Analyzer"
        )
    if analyzer.selector != selector:
        raise AnalysisError(
            f"{type(target).__name__}: get_analyzer('{selector}') returned the analyzer for "
            f"'{analyzer.selector}'"
        )
    return analyzer


def resolve_closure(target, roots: tuple[str, ...]) -> tuple[Analyzer, ...]:
    """Union dependency closure, depth-first per root in first-occurrence order,
    dependencies before dependants, each member once; a cycle names its path."""
    order: list[Analyzer] = []
    done: set[str] = set()

    def visit(selector: str, path: tuple, root: str | None):
        if selector in done:
            return
        if selector in path:
            cycle = path[path.index(selector):] + (selector,)
            raise AnalysisError(f"analysis dependency cycle: {' -> '.join(cycle)}")
        analyzer = _get(target, selector, root=root, path=path)
        for dep in analyzer.requires:
            visit(dep, path + (selector,), root or selector)
        done.add(selector)
        order.append(analyzer)

    for root in roots:
        visit(root, (), None)
    return tuple(order)


# ---------------------------------------------------------------- ownership


def _declared(module: Module) -> set[int]:
    """ids of the Functions a Module declares: each, and its variants."""
    return {id(f) for top in module.functions for f in (top, *(variant for _, variant in top.variants))}


def _declares(module: Module, function: Function) -> bool:
    return id(function) in _declared(module)


def check_ownership(module: Module, function: Function) -> None:
    """The Function is one the Module declares, or a variant of one (core-ir §1)."""
    if not isinstance(function, Function):
        raise AnalysisError(f"analyze: expected a Function, got {type(function).__name__}")
    if not _declares(module, function):
        raise AnalysisError(
            f"analyze: function '{function.name}' is not owned by Module '{module.name}': it is "
            "neither declared by it nor a specialization variant of one it declares (a Function "
            "derived by specialising one is refused; pass the declared Function and dims=)"
        )


def check_call_edges(module: Module, function: Function) -> None:
    """Every caller/callee edge the query reaches runs in one execution context:
    the callee's owner is found in the supplied tree by identity (exactly one)
    and states the same topology hierarchy as the caller's."""
    # the supplied tree only: a selected child is a re-entried copy sharing the
    # child's Functions, so a search reaching the root would find each twice
    owners = _owners_by_function(subtree(module))
    levels_of: dict[int, tuple] = {}

    def owner_of(fn: Function) -> Module:
        distinct = owners.get(id(fn), [])
        if len(distinct) != 1:
            what = "no Module" if not distinct else f"{len(distinct)} Modules"
            raise AnalysisError(
                f"analyze: function '{fn.name}' is reached from '{function.name}' but {what} of the "
                "supplied tree owns it; a reached Function needs exactly one owner"
            )
        return distinct[0]

    def hierarchy(m: Module) -> tuple:
        if id(m) not in levels_of:
            levels_of[id(m)] = tuple((t.name, t.size) for t in m.effective_topologies())
        return levels_of[id(m)]

    caller_levels = {id(function): hierarchy(module)}
    visited: set[int] = set()
    stack = [function]
    while stack:
        fn = stack.pop()
        if id(fn) in visited or fn.body is None:
            continue
        visited.add(id(fn))
        for node in iter_nodes(fn.body):
            if isinstance(node, Call) and isinstance(node.op, Function):
                callee = node.op
                owner = owner_of(callee)
                levels = hierarchy(owner)
                if levels != caller_levels[id(fn)]:
                    raise AnalysisError(
                        f"analyze: '{fn.name}' calls '{callee.name}' across execution contexts: the "
                        f"caller's topology hierarchy is {_levels(caller_levels[id(fn)])} but "
                        f"Module '{owner.name}' states {_levels(levels)}; one invocation runs in one "
                        "execution context (hir §1.1)"
                    )
                caller_levels.setdefault(id(callee), levels)
                stack.append(callee)
                for _, variant in callee.variants:
                    caller_levels.setdefault(id(variant), levels)
                    stack.append(variant)


def _owners_by_function(tree: list) -> dict[int, list]:
    """id(Function) -> the Modules of ``tree`` declaring it (``_declares``), one
    entry per place in the tree: built once, not searched per callee."""
    owners: dict[int, list] = {}
    for place in tree:
        for key in _declared(place):
            owners.setdefault(key, []).append(place)
    return owners


def _levels(hierarchy: tuple) -> str:
    return "(" + ", ".join(f"{n}={s}" for n, s in hierarchy) + ")" if hierarchy else "none"


# ---------------------------------------------------------------- record ownership


def _record_nodes(function: Function) -> list:
    nodes: list = [function, *function.params]
    if function.body is not None:
        for node in iter_nodes(function.body):
            nodes.append(node)
            if isinstance(node, GridRegionExpr):
                nodes.append(node.induction_var)
                nodes.extend(node.carried)
    return nodes


def _where(node) -> str:
    if isinstance(node, Function):
        return f"function '{node.name}'"
    from tilefoundry.ir.metadata import locator

    return locator(node)


# ---------------------------------------------------------------- analyze


#: who is told each stage analyze starts (the CLI's progress bar), or None
_PROGRESS: list = [None]


@contextlib.contextmanager
def reporting_progress(step):
    """Within the block, ``analyze`` calls ``step(stage, done, total)`` as it
    starts the program check and each analyzer (issue 40 item 4)."""
    previous, _PROGRESS[0] = _PROGRESS[0], step
    try:
        yield
    finally:
        _PROGRESS[0] = previous


def _stage(name: str, done: int, total: int) -> None:
    if _PROGRESS[0] is not None:
        _PROGRESS[0](name, done, total)


def analyze(module: Module, function: Function, *, analysis: str | Iterable[str],
            level: str | None = None, options: object | None = None,
            dims: Mapping[str, int] | None = None) -> AnalysisResult:
    """Run the requested analyses and their dependency closure on ``function``."""
    import tilefoundry.ops  # noqa: F401  (the op set: every evaluator a family asks for)

    roots = _roots(analysis)
    if not isinstance(module, Module):
        raise AnalysisError(f"analyze: expected a Module, got {type(module).__name__}")
    check_ownership(module, function)
    if dims is not None and not isinstance(dims, Mapping):
        raise AnalysisError(f"analyze: dims must be a mapping of dimension name to int, got {dims!r}")
    bindings, concrete = resolve_dims(module, function, dict(dims) if dims is not None else None)
    check_call_edges(module, concrete)
    target = module.resolve_target()
    closure = resolve_closure(target, roots)
    level = resolve_level(module, level)
    _stage("check", 0, len(closure) + 1)
    view = check_program_view(module, concrete, level=level, analyzers=closure,
                              bindings=bindings, target=target)
    function_view = view.function
    topologies = view.topologies

    from tilefoundry.semantics.cost import CostContext

    root_scope = build_scopes(function_view, level, topologies)
    ctx = AnalyzeContext(
        module=module, target=target, level=level, options=options,
        root=root_scope, current=root_scope, topologies=topologies, bindings=bindings,
        whole=CostContext(None, topologies), local=CostContext(level, topologies),
        call_sites=view.call_sites,
    )
    nodes = _record_nodes(function_view)
    executed: list[str] = []
    written: list[type] = []
    for done, analyzer in enumerate(closure, 1):
        _stage(analyzer.selector, done, len(closure) + 1)
        before = record_snapshot(nodes)
        ctx.current = root_scope
        try:
            analyzer.run(function_view, ctx)
        except AnalysisError as exc:
            # which family refused, so that analyze_served can keep the others
            exc.refused_family = getattr(exc, "refused_family", None) or analyzer.selector
            raise
        owned = set(analyzer.produces)
        for node, cls, how in record_changes(nodes, before):
            if cls not in owned:
                raise AnalysisError(
                    f"analysis '{analyzer.selector}' {how} a {cls.__name__} record on "
                    f"{_where(node)}, but its Analyzer declares produces="
                    f"{tuple(c.__name__ for c in analyzer.produces)}; an analysis may change "
                    "only the Metadata types it declares"
                )
            if how != "removed" and cls not in written:
                written.append(cls)
        executed.append(analyzer.selector)
    ordered = [cls for a in closure for cls in a.produces if cls in written]
    seen: list[type] = []
    for cls in ordered:
        if cls not in seen:
            seen.append(cls)
    return AnalysisResult(module, function_view, roots, level, tuple(executed), tuple(seen))


def _unserved(exc: AnalysisError, families: list, target) -> str | None:
    """The family a refusal says the target cannot serve (it states the
    analyzer but publishes no Facts projection it reads), or None when the
    refusal is about the program."""
    from tilefoundry.target.base import AnalyzerUnavailableError, NoFactsProjectionError

    if not isinstance(exc.__context__, (NoFactsProjectionError, AnalyzerUnavailableError)):
        return None
    members = {a.selector for f in families for a in resolve_closure(target, (f,))}
    return next((m for m in sorted(members) if str(exc).startswith(f"{m}: ")), None)


def analyze_served(module: Module, function: Function, candidates: Iterable[str], *,
                   level: str | None = None, dims: Mapping[str, int] | None = None,
                   options: object | None = None) -> AnalysisResult:
    """``analyze`` of every candidate family that can answer (issue 40 item 6):
    one the module's target states an analyzer for and publishes the facts of,
    whose analyzer (and every family it depends on) does not refuse the program.
    Each family that cannot answer is left out with its dependants, and the
    result's ``refused`` says why, one ``(family, reason)`` each. A refusal
    before any family runs (the program check, a dim binding) still refuses,
    as does the case where no family answers."""
    target = module.resolve_target()
    candidates = list(dict.fromkeys(candidates))
    stated = target.analyzer_selectors()
    refused = [(c, f"{target.identity} states no {c} analyzer") for c in candidates if c not in stated]
    wanted = [c for c in candidates if c in stated]
    last = None
    while wanted:
        try:
            result = analyze(module, function, analysis=wanted, level=level, dims=dims)
        except AnalysisError as exc:
            family = _unserved(exc, wanted, target) or getattr(exc, "refused_family", None)
            if family is None:
                raise
            last = exc
            kept = _without(wanted, family, str(exc), target, refused)
            if len(kept) == len(wanted):  # no asked family needs it: the refusal is the program's
                raise
            wanted = kept
            continue
        order = {c: i for i, c in enumerate(candidates)}
        return AnalysisResult(result.module, result.function, result.analyses, result.level,
                              result.executed, result.metadata_types,
                              tuple(sorted(refused, key=lambda r: order[r[0]])))
    if last is not None and len(refused) == 1:
        raise last
    raise AnalysisError(f"{target.identity} answers none of the families {', '.join(candidates)}: "
                        + "; ".join(f"{f}: {_reason(r, f)}" for f, r in refused)
                        + " (`tilefoundry target show` lists what a target serves; analyse for "
                        "another --target or fix what each refusal names)")


def _without(wanted: list, family: str, reason: str, target, refused: list) -> list:
    """``wanted`` less every family that needs ``family``; each one dropped is
    recorded in ``refused`` with the reason (a dependant names what it needed)."""
    kept = []
    for w in wanted:
        if family not in {a.selector for a in resolve_closure(target, (w,))}:
            kept.append(w)
        elif w == family:
            refused.append((w, reason))
        else:
            refused.append((w, f"needs {family}, which refused: {_reason(reason, family)}"))
    return kept


def _reason(reason: str, family: str) -> str:
    """A refusal's text without the family name it already starts with."""
    return reason[len(family) + 2:] if reason.startswith(f"{family}: ") else reason

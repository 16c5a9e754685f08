"""Binding ``dims``: every reached dimension gets one extent inside its bounds,
and exactly one variant covers the stated sizes (analysis §2, companions §8.3)."""
from __future__ import annotations

from tilefoundry.errors import AnalysisError, binding_text, did_you_mean
from tilefoundry.ir.declared import files_of, located
from tilefoundry.ir.dim import DimVar
from tilefoundry.ir.expr import Call, GridRegionExpr, postorder
from tilefoundry.ir.function import Function
from tilefoundry.ir.metadata import ExecutionDomainMetadata
from tilefoundry.ir.module import Module
from tilefoundry.ir.substitute import collect_dimvars
from tilefoundry.ir.trampoline import trampoline


def reached_dimvars(module: Module, function: Function) -> tuple[dict, dict]:
    """(known, open) DimVars by name. Known: every dimension reached through the
    function graph, its meshes and the effective topologies. Open: those the
    caller must bind — all of them except a callee's own signature dims, which
    each call site's argument shapes fix (elaboration, hir §1.1)."""
    known: dict[str, DimVar] = {}
    required: dict[str, DimVar] = {}
    for topology in module.effective_topologies():
        collect_dimvars(topology.size, required)
    trampoline(_function_dims(function, known, required, set(), fixed=frozenset(),
                              dims_of=_DimsOf()))
    known.update(required)
    return known, required


class _DimsOf:
    """``collect_dimvars`` once per object: a model's layer copies share their
    ops, types and Mesh records, so each is read once, not once per copy."""

    def __init__(self):
        self.memo: dict = {}  # id(value) -> (value, ((name, DimVar), ...))

    def __call__(self, value, found: dict) -> None:
        hit = self.memo.get(id(value))
        if hit is None:
            hit = self.memo[id(value)] = (value, tuple(collect_dimvars(value, {}).items()))
        for name, var in hit[1]:
            found.setdefault(name, var)


def _signature_dims(function: Function) -> frozenset:
    found: dict = {}
    for param in function.params:
        collect_dimvars(param.type, found)
    return frozenset(found)


def _function_dims(function: Function, known: dict, required: dict, visited: set,
                   fixed: frozenset, dims_of):
    """A generator (ir.trampoline): a call chain can be deeper than Python's stack."""
    if id(function) in visited:
        return
    visited.add(id(function))
    found: dict = {}
    for param in function.params:
        dims_of(param.type, found)
    dims_of(function.return_type, found)
    for pattern, variant in function.variants:
        yield _function_dims(variant, known, required, visited, fixed, dims_of)
    for node in (postorder(function.body) if function.body is not None else ()):
        dims_of(getattr(node, "type", None), found)
        if isinstance(node, Call) and isinstance(node.op, Function):
            if id(node.op) not in visited:  # a callee's dims are read once, not per call site
                yield _function_dims(node.op, known, required, visited, _signature_dims(node.op),
                                     dims_of)
        elif isinstance(node, Call):
            dims_of(node.op, found)
        elif isinstance(node, GridRegionExpr):
            for value in (node.start, node.extent, node.step):
                dims_of(value, found)
        domain = node.get_metadata(ExecutionDomainMetadata)
        if domain is not None:  # a `with Mesh` geometry is part of the program too
            dims_of(domain.scopes, found)
    for name, var in found.items():
        (known if name in fixed else required).setdefault(name, var)


def _largest(var: DimVar) -> int:
    """The largest extent ``var`` takes (a multiple of what a split of it asks)."""
    from tilefoundry.ir.dim import exact_divisor

    step = exact_divisor(var)
    return (var.hi - 1) // step * step


def _suggestions(var: DimVar) -> str:
    """Extents to try: the ends, the next, the middle; multiples of what a
    symbolic split of ``var`` asks (ir.dim.exact_divisor), so each is accepted."""
    from tilefoundry.ir.dim import exact_divisor

    step = exact_divisor(var)
    first = -(-var.lo // step) * step
    last = (var.hi - 1) // step * step
    middle = ((var.lo + var.hi) // 2) // step * step
    values = sorted({v for v in (first, first + step, middle, last) if var.lo <= v < var.hi})
    return ", ".join(str(v) for v in values)


def _variant_dims(function: Function) -> list[str]:
    names: list[str] = []
    for pattern, _ in function.variants:
        if pattern.dim_var not in names:
            names.append(pattern.dim_var)
    return names


def resolve_dims(module: Module, function: Function, dims: dict | None) -> tuple[dict, Function]:
    """Validate ``dims`` against what the program reaches; return the bindings
    and the concrete function (variant resolved)."""
    reached, required = reached_dimvars(module, function)
    bindings = dict(dims or {})
    if dims is not None and not dims:
        raise AnalysisError("analyze: dims was stated but is empty; state one extent per dimension or none")
    unknown = sorted(name for name in bindings if name not in reached)
    if unknown:
        raise AnalysisError(
            f"analyze: '{function.name}' has no dimension named {unknown}; it states "
            f"{sorted(reached)}{did_you_mean(unknown[0], reached)}"
        )
    for name, value in bindings.items():
        var = reached[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise AnalysisError(f"analyze: dimension '{name}' needs an integer extent, got {value!r}")
        if not var.lo <= value < var.hi:
            raise AnalysisError(located(("DimVar", name), files=files_of((function,)), message=(
                f"analyze: dimension '{name}' was declared over [{var.lo}, {var.hi}) and "
                f"cannot take {value}; bind an extent in that range ({binding_text(name, _largest(var))} "
                f"is the largest) or widen the DimVar's range where it is declared")))
    open_dims = [var for name, var in required.items() if name not in bindings and var.unbound_extent is None]
    for var in required.values():  # a fixed size, or a declared default (ir.dim.DimVar)
        if var.unbound_extent is not None and var.name not in bindings:
            bindings[var.name] = var.unbound_extent
    if open_dims:
        reasons = "; ".join(
            f"{var.name} is declared as [{var.lo}, {var.hi}); bind it with "
            f"{binding_text(var.name)} (try {_suggestions(var)})"
            for var in open_dims
        )
        raise AnalysisError(f"analyze needs one EXTENT for every open dimension: {reasons}")
    return bindings, select_variant(function, bindings)


def select_variant(function: Function, bindings: dict) -> Function:
    """Exactly one variant must cover the stated sizes (none and several fail)."""
    if not function.variants:
        return function
    for name in _variant_dims(function):
        if name not in bindings:
            raise AnalysisError(
                f"analyze: '{function.name}' selects a variant on '{name}'; bind it with {binding_text(name)}"
            )
    covering = [variant for pattern, variant in function.variants
                if pattern.covers(bindings[pattern.dim_var])]
    if len(covering) == 1:
        return covering[0]
    stated = "; ".join(f"{p.dim_var} in [{p.lo}, {p.hi})" for p, _ in function.variants)
    bound = ", ".join(f"{n}={bindings[n]}" for n in _variant_dims(function))
    if not covering:
        if function.body is not None:
            return function
        raise AnalysisError(
            f"analyze: '{function.name}' declares no variant covering {bound}; its variants cover {stated}"
        )
    raise AnalysisError(
        f"analyze: '{function.name}' has {len(covering)} variants covering {bound}; they cover {stated}"
    )

"""check_program: the shared gate before any analysis (analysis §2).

It validates the declared topology against the target, every reached mesh's
level geometry, builds the inlined view, and runs the analyzers' input
checkers (check_target, one traversal for check_call, finish) in closure
order, so the first refusal stops before anything is written.
"""
from __future__ import annotations

from tilefoundry.errors import AnalysisError, VerifyError
from tilefoundry.ir.dim import format_dim, is_static
from tilefoundry.ir.expr import Call, GridRegionExpr, postorder
from tilefoundry.ir.function import Function
from tilefoundry.ir.metadata import ExecutionDomainMetadata, SourceSpanMetadata
from tilefoundry.ir.module import Module
from tilefoundry.ir.shard import Mesh, ShardLayout
from tilefoundry.ir.substitute import bind_dims
from tilefoundry.ir.tensor_type import tensor_leaves
from tilefoundry.analysis.view import DEFAULT_NODE_BUDGET, ProgramView, build_view


def check_topologies(module: Module, target, bindings: dict) -> tuple:
    """Every effective topology names a supported level with a valid extent."""
    topologies = bind_dims(module.effective_topologies(), bindings)
    for topology in topologies:
        if not is_static(topology.size):
            raise AnalysisError(
                f"program topology level '{topology.name}' has extent "
                f"{format_dim(topology.size)}, which is not concrete; bind it with --dim"
            )
        try:
            target.validate_program_topology(topology.name, topology.size)
        except Exception as exc:  # the target states the reason; we name the level
            raise AnalysisError(
                f"program topology level '{topology.name}' with extent {topology.size} "
                f"is invalid: {exc}"
            ) from None
    return topologies


def resolve_level(module: Module, level: str | None) -> str | None:
    topologies = module.effective_topologies()
    if level is None:
        return topologies[0].name if topologies else None
    if not any(t.name == level for t in topologies):
        levels = [t.name for t in topologies]
        raise AnalysisError(
            f"program topology level '{level}' is invalid: Module '{module.name}': no "
            f"topology named '{level}'; effective topology levels are {levels or 'none'}"
        )
    return level


def iter_nodes(body):
    """Every node of a view body once, operands before users (postorder)."""
    return list(postorder(body))


def check_concrete(view: ProgramView) -> None:
    """Every extent of the view is concrete: a dimension left open (no dims
    binding reached it) fails here, before any consuming algorithm runs. Only
    a failing value is searched for the names (the search is the slow part);
    mesh geometry is checked once per mesh by ``check_meshes``."""
    from tilefoundry.ir.substitute import collect_dimvars

    function = view.function
    for param in function.params:
        if not _static_type(param.type):
            _open_dims(function, sorted(collect_dimvars(param.type, {})), f"parameter '{param.name}'")
    if function.body is None:
        return
    for node in iter_nodes(function.body):
        bounds = (node.start, node.extent, node.step) if isinstance(node, GridRegionExpr) else ()
        if _static_type(node.type) and all(_int(b) for b in bounds):
            continue
        span = node.get_metadata(SourceSpanMetadata)
        names = sorted(collect_dimvars((node.type, bounds), {}))
        _open_dims(function, names, f"the value at {span}" if span else "a body value")


def _int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _static_type(type_) -> bool:
    return all(_int(d) for leaf in tensor_leaves(type_) for d in leaf.shape)


def _open_dims(function: Function, names: list, where: str) -> None:
    raise AnalysisError(
        f"check_program: '{function.name}' is not concrete: {where} still has the open "
        f"dimension(s) {names}; bind every dimension before the program check "
        "(analyze dims=..., or --dim NAME=EXTENT)"
    )


def check_meshes(view: ProgramView, topologies: tuple) -> None:
    """Each reached mesh assigns its axes to declared levels without straddling."""
    declared = {t.name: t.size for t in topologies}
    checked: set = set()
    for node in iter_nodes(view.function.body):
        meshes = []
        domain = node.get_metadata(ExecutionDomainMetadata)
        if domain:
            meshes.extend(domain.scopes)
        for leaf in tensor_leaves(node.type):
            if isinstance(leaf.shard, ShardLayout):
                meshes.append(leaf.shard.mesh)
        for mesh in meshes:
            if mesh in checked:
                continue
            checked.add(mesh)
            _check_mesh(mesh, declared, node)
            _check_mesh_geometry(mesh, view.function, node)


def _check_mesh_geometry(mesh: Mesh, function: Function, node) -> None:
    from tilefoundry.ir.substitute import collect_dimvars

    names = sorted(collect_dimvars(mesh, {}))
    if names:
        span = node.get_metadata(SourceSpanMetadata)
        _open_dims(function, names, f"the mesh used at {span}" if span else "a mesh")


def _check_mesh(mesh: Mesh, declared: dict, node) -> None:
    span = node.get_metadata(SourceSpanMetadata)
    where = f" (used at {span})" if span else ""
    for topology in mesh.topologies:
        if topology.name not in declared:
            raise AnalysisError(
                f"mesh names topology level '{topology.name}', which the module does not "
                f"declare; effective topology levels are {list(declared) or 'none'}{where}"
            )
    try:
        mesh.axis_levels()
    except VerifyError as exc:
        raise AnalysisError(f"{exc}{where}") from None


def check_program_view(module: Module, function: Function, *, level: str | None = None,
                       budget: int = DEFAULT_NODE_BUDGET, analyzers: tuple = (),
                       bindings: dict | None = None, target=None) -> ProgramView:
    """Validate one authored program and return its inlined view with the names
    of its promoted parameters (what ``check_program`` returns, plus context)."""
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
        raise AnalysisError(f"check_program: budget must be a non-negative integer, got {budget!r}")
    bindings = dict(bindings or {})
    target = target if target is not None else module.resolve_target()
    topologies = check_topologies(module, target, bindings)
    level = resolve_level(module, level)
    view = build_view(module, function, bindings, budget)
    view.topologies = topologies
    check_concrete(view)
    check_meshes(view, topologies)
    run_checkers(view, tuple(analyzers), target, level, topologies)
    return view


def check_program(module: Module, function: Function, *, level: str | None = None,
                  budget: int = DEFAULT_NODE_BUDGET, analyzers: tuple = (),
                  bindings: dict | None = None, target=None) -> Function:
    """The shared gate (analysis §2): the inlined, record-bearing Function view.

    Types are inferred over the whole reachable graph while inlining, the
    declared topology and every reached mesh are checked against the target, the
    node budget holds, and the analyzers' input checkers run in closure order:
    every check_target, one traversal for every check_call, every finish. The
    first refusal stops the gate; nothing is attached to the authored IR."""
    return check_program_view(module, function, level=level, budget=budget, analyzers=analyzers,
                              bindings=bindings, target=target).function


def run_checkers(view: ProgramView, analyzers: tuple, target, level, topologies: tuple = ()) -> None:
    """Bind every analyzer's AnalysisInputChecker to the derived Function and run
    them in closure order over ONE traversal of its non-Function calls."""
    from tilefoundry.analysis.descriptor import NO_INPUT_CHECK, AnalysisCheckContext
    from tilefoundry.semantics.cost import CostContext

    checkers = [a.input_checker for a in analyzers
                if getattr(a, "input_checker", None) not in (None, NO_INPUT_CHECK)]
    if not checkers:
        return
    function = view.function
    ctx = AnalysisCheckContext(
        module=view.module, function=function, target=target, level=level,
        whole=CostContext(None, topologies), local=CostContext(level, topologies),
    )
    nodes = [function, *function.params]
    if function.body is not None:
        nodes.extend(iter_nodes(function.body))
    # a checker states what a program must already be; it never attaches a record
    before = [dict(node._metadata) for node in nodes]
    for checker in checkers:
        checker.check_target(ctx)
    for node in nodes[1 + len(function.params):]:
        if isinstance(node, Call) and not isinstance(node.op, Function):
            for checker in checkers:
                checker.check_call(node, ctx)
    for checker in checkers:
        checker.finish(function, ctx)
    for node, old in zip(nodes, before):
        if node._metadata != old or any(node._metadata[k] is not v for k, v in old.items()):
            changed = sorted(cls.__name__ for cls in set(node._metadata) ^ set(old)) or sorted(
                cls.__name__ for cls, v in old.items() if node._metadata.get(cls) is not v)
            raise AnalysisError(
                f"an analysis input checker changed {', '.join(changed)} Metadata on the "
                "program it checks; a checker states what a program must already be and "
                "MUST NOT attach Metadata"
            )

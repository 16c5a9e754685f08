"""check_program: the shared gate before any analysis (analysis §2).

It validates the declared topology against the target, every reached mesh's
level geometry, builds the inlined view, and runs the analyzers' input
checkers (check_target, one traversal for check_call, finish) in closure
order, so the first refusal stops before anything is written.
"""
from __future__ import annotations

import operator

from tilefoundry.errors import AnalysisError, VerifyError
from tilefoundry.ir.declared import files_of, located
from tilefoundry.ir.dim import format_dim, is_static
from tilefoundry.ir.expr import Call, GridRegionExpr, Var, postorder
from tilefoundry.ir.function import Function
from tilefoundry.ir.metadata import ExecutionDomainMetadata, SourceSpanMetadata
from tilefoundry.ir.module import Module
from tilefoundry.ir.shard import ComposedLayout, Mesh, ShardLayout
from tilefoundry.ir.substitute import bind_dims
from tilefoundry.ir.tensor_type import tensor_leaves
from tilefoundry.analysis.view import DEFAULT_NODE_BUDGET, ProgramView, build_view
from tilefoundry.analysis.window_bounds import check_windows


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
        except Exception as exc:  # the target states the reason; we name the level and where
            raise AnalysisError(located(declared_key(module, topology), files=files_of(module.functions),
                                        message=(
                f"program topology level '{topology.name}' with extent {topology.size} "
                f"is invalid: {exc}; declare the level with an extent the target runs, or "
                f"analyse for another --target"))) from None
    return topologies


def declared_key(module: Module, topology) -> tuple:
    """The declaration key of a bound level: the Topology as the module declared it
    (a DimVar extent bound to a number is found by its level name)."""
    for declared in module.effective_topologies():
        if declared.name == topology.name:
            return ("Topology", declared.name, declared.size)
    return ("Topology", topology.name, topology.size)


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


_NODES: dict[int, tuple] = {}  # id(body) -> (body, its postorder): the last few bodies walked
_NODES_KEPT = 4


def iter_nodes(body):
    """Every node of a view body once, operands before users (postorder).

    A body's nodes never change once it is built, and every family of one
    analyze walks the same view body, so the last few walks are kept (the
    body is held with its walk, so its id cannot be reused while kept)."""
    kept = _NODES.get(id(body))
    if kept is not None and kept[0] is body:
        return list(kept[1])
    nodes = tuple(postorder(body))
    if len(_NODES) >= _NODES_KEPT:
        _NODES.clear()
    _NODES[id(body)] = (body, nodes)
    return list(nodes)


_ABSENT = object()  # a class a node held no record of


def record_snapshot(nodes: list) -> list:
    """Each node's records now, in ``nodes`` order (for ``record_changes``)."""
    return [dict(n._metadata) for n in nodes]


def record_changes(nodes: list, before: list) -> list[tuple[object, type, str]]:
    """(node, record class, 'added' | 'replaced' | 'removed') for every record
    that differs from ``before``, node by node and in the order each node holds
    them, so the first change named is the same every run."""
    changed = []
    is_ = operator.is_
    for node, old in zip(nodes, before):
        new = node._metadata
        # the common case, a node left untouched: the very same record under
        # every class, compared in one C pass (an equal copy is a replacement);
        # written inline, as this runs per node and per family
        if len(old) == len(new) and all(map(is_, old.values(), map(new.get, old))):
            continue
        for cls, record in new.items():
            if old.get(cls, _ABSENT) is not record:
                changed.append((node, cls, "replaced" if cls in old else "added"))
        for cls in old:
            if cls not in new:
                changed.append((node, cls, "removed"))
    return changed


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
    static: dict[int, bool] = {}  # id(type) -> concrete: a view's nodes share a few hundred types
    for node in iter_nodes(function.body):
        bounds = (node.start, node.extent, node.step) if isinstance(node, GridRegionExpr) else ()
        concrete = static.get(id(node.type))
        if concrete is None:
            concrete = static[id(node.type)] = _static_type(node.type)
        if concrete and all(_int(b) for b in bounds):
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
    """Each reached mesh assigns its axes to declared levels without straddling,
    at the sizes the module declares, and places positions its levels have; each
    reached layout splits its positions by what its mesh axes divide."""
    declared = {t.name: t.size for t in topologies}
    checked: set = set()
    layouts: set = set()
    seen: set = set()  # (id(domain), id(type)): a view's nodes share a few hundred of these
    for node in iter_nodes(view.function.body):
        domain = node.get_metadata(ExecutionDomainMetadata)
        pair = (id(domain), id(node.type))
        if pair in seen:
            continue  # every mesh and layout it names is checked (the view keeps both alive)
        seen.add(pair)
        meshes = []
        if domain:
            meshes.extend(domain.scopes)
        shards = []
        for leaf in tensor_leaves(node.type):
            shard = leaf.shard
            if isinstance(shard, ComposedLayout) and isinstance(shard.outer, ShardLayout):
                shard = shard.outer
            if isinstance(shard, ShardLayout):
                meshes.append(shard.mesh)
                shards.append(shard)
        for mesh in meshes:
            if mesh in checked:
                continue
            checked.add(mesh)
            site = (domain.site_of(mesh) if domain else None) or _used_at(node)
            _check_mesh(mesh, declared, node)
            _check_mesh_geometry(mesh, view.function, node)
            _check_mesh_sizes(mesh, declared, site)
            _check_mesh_positions(mesh, declared, site, node)
        for shard in shards:
            if shard not in layouts:
                layouts.add(shard)
                _check_splits(shard, node)


def _used_at(node) -> str | None:
    """Where a node is written, for a refusal: its span, or the parameter it is."""
    span = node.get_metadata(SourceSpanMetadata)
    if span is not None:
        return str(span)
    if isinstance(node, Var):
        return f"parameter '{node.name}'"
    return None


def _check_mesh_sizes(mesh: Mesh, declared: dict, site: str | None) -> None:
    """A Mesh built outside a body (a module-level ``Mesh((Topology(...),), ...)``)
    carries its own Topology objects; each must be the level the module declares,
    since the mesh's axes are assigned to levels, and its positions counted, by
    those sizes (companions §2.2)."""
    for topology in mesh.topologies:
        size = declared.get(topology.name)
        if is_static(size) and is_static(topology.size) and topology.size != size:
            prefix = f"{site}: " if site else ""
            raise AnalysisError(
                f"{prefix}{_mesh_spelling(mesh)} states Topology(\"{topology.name}\", "
                f"{topology.size}), but the module declares Topology(\"{topology.name}\", {size}); "
                f"a Mesh's levels are the module's (authoring §4.2, companions §2.2): build it "
                f"from the declared Topology, or write it as `with Mesh((\"{topology.name}\",), ...)`")


def _check_splits(shard: ShardLayout, node) -> None:
    """Each layout position a ShardLayout splits holds a whole number of units'
    shares: the mesh axes that split it multiply to a divisor of its extent
    (companions §2.3-2.5). A reshard's own typing checks the layout it is given;
    this holds every other layout a program states (a parameter's annotation, an
    explicit ShardLayout object) to the same rule before anything divides by it."""
    from tilefoundry.ir.expr import authored_label

    gshape = shard.layout.shape
    splitting: dict = {}
    for m, attr in enumerate(shard.attrs):
        if type(attr).__name__ == "Split" and 0 <= attr.axis < len(gshape):
            splitting.setdefault(attr.axis, []).append(m)
    for axis, axes in splitting.items():
        extent = gshape[axis]
        product = 1
        for m in axes:
            product *= shard.mesh.shape[m] if m < len(shard.mesh.shape) else 1
        if not (is_static(extent) and is_static(product)) or extent % product == 0:
            continue
        where = _used_at(node)
        name = authored_label(node)
        what = "its layout" if isinstance(node, Var) else f"'{name}'" if name else "the value"
        names = ", ".join(f"'{shard.mesh.axis_name(m)}'" for m in axes)
        prefix = f"{where}: " if where else ""
        raise AnalysisError(
            f"{prefix}{what} splits layout position {axis} (extent {extent}) over mesh axis "
            f"{names} of extent {product}, which does not divide it: each unit would hold "
            f"{extent}/{product} of it (companions §2.3-2.5); use an extent divisible by "
            f"{product}, or split a position that the axes divide")


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


def _check_mesh_positions(mesh: Mesh, declared: dict, site: str | None, node) -> None:
    """A Mesh's participants are its layout's exact image (analysis §1.2.4,
    shard §5; companions §2.2): every position it places lies inside its level
    and none twice. Checked here, once per mesh for every family and the typed
    program, because compute-cost and memory divide by the same positions that
    performance places work on: a position the level does not have is a unit's
    share of work no unit does."""
    from tilefoundry.analysis.performance.participants import count, level_image

    prefix = f"{site}: " if site else ""
    for topology in mesh.topologies:
        size = declared.get(topology.name, topology.size)
        if not is_static(size):
            continue
        try:
            image = level_image(mesh, topology.name)
        except AnalysisError:
            continue  # not projectable: performance states why where it needs them
        if not image:
            continue
        written = _mesh_spelling(mesh)
        remedy = (f"use a mesh whose axes multiply to at most {size}, or declare a larger "
                  f"Topology(\"{topology.name}\", {count(image)})")
        if count(image) > size:
            raise AnalysisError(
                f"{prefix}{written} places {count(image)} positions against the {size} of level "
                f"'{topology.name}': a Mesh's participants are its layout's exact image, which "
                f"must lie inside its level (analysis §1.2.4, shard §5); {remedy}")
        low, high = (image.start, image.stop - 1) if isinstance(image, range) else (min(image), max(image))
        if low < 0 or high >= size:
            outside = _outside(image, size)
            shown = ", ".join(map(str, outside[:4])) + (", ..." if len(outside) > 4 else "")
            raise AnalysisError(
                f"{prefix}{written} reaches position(s) {shown} outside the {size} positions "
                f"[0, {size}) of level '{topology.name}': a Mesh's participants are its layout's "
                f"exact image, which must lie inside its level (analysis §1.2.4, shard §5); use "
                f"strides and an offset that stay inside [0, {size})"
                + (f", or declare a larger Topology(\"{topology.name}\", {high + 1})"
                   if high >= size else ""))
        if not isinstance(image, range) and len(set(image)) != len(image):
            seen: set = set()
            twice = next(p for p in image if p in seen or seen.add(p))
            raise AnalysisError(
                f"{prefix}{written} places level '{topology.name}' position {twice} more than "
                f"once: a Mesh's participants are its layout's exact image, one unit per "
                f"coordinate (analysis §1.2.4, shard §5); give its layout strides that name "
                f"each position once")


def _mesh_spelling(mesh: Mesh) -> str:
    """The mesh as written: its levels and its layout (with strides when they
    are not row-major, and the offset of a slice)."""
    from tilefoundry.ir.shard import c_order_strides

    levels = ", ".join(f'"{t.name}"' for t in mesh.topologies) + ("," if len(mesh.topologies) == 1 else "")
    layout = mesh.layout
    offset = 0
    if isinstance(layout, ComposedLayout):
        offset, layout = layout.offset, layout.outer
    shape = tuple(layout.shape)
    strides = tuple(layout.strides) if layout.strides is not None else None
    shown = str(shape) if strides in (None, tuple(c_order_strides(shape))) else f"Layout({shape}, {strides})"
    text = f"Mesh(({levels}), {shown})"
    return text + (f" sliced at offset {offset}" if mesh.is_sliced else "")


def _outside(image, size: int) -> list:
    """The first few positions of ``image`` outside [0, size), in order."""
    if isinstance(image, range):
        below = range(image.start, min(image.stop, 0))
        above = range(max(image.start, size), image.stop)
        return (list(below[:4]) + list(above[:4]))[:5]
    return sorted({p for p in image if p < 0 or p >= size})


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
    check_windows(view.function, iter_nodes(view.function.body) if view.function.body is not None else None)
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
    from tilefoundry.analysis.descriptor import NO_INPUT_CHECK, AnalysisCheckContext, NoInputCheck
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
    before = record_snapshot(nodes)
    checker = None
    try:
        for checker in checkers:
            checker.check_target(ctx)
        # a checker that states nothing per call (NoInputCheck's) is not asked per call
        per_call = [c for c in checkers if getattr(type(c), "check_call", None) is not NoInputCheck.check_call]
        for node in nodes[1 + len(function.params):]:
            if isinstance(node, Call) and not isinstance(node.op, Function):
                for checker in per_call:
                    checker.check_call(node, ctx)
        for checker in checkers:
            checker.finish(function, ctx)
    except AnalysisError as exc:
        # the family whose checker refused (the loop's checker when it raised), so
        # that `analyze --all` keeps the families that can answer (issue 40 item 6)
        owner = next((a.selector for a in analyzers if a.input_checker is checker), None)
        exc.refused_family = getattr(exc, "refused_family", None) or owner
        raise
    changes = record_changes(nodes, before)
    if changes:
        # the first changed node's classes: those it gained or lost, else those replaced
        first = [(cls, how) for node, cls, how in changes if node is changes[0][0]]
        changed = sorted(c.__name__ for c, how in first if how != "replaced") or sorted(
            c.__name__ for c, _ in first)
        raise AnalysisError(
            f"an analysis input checker changed {', '.join(changed)} Metadata on the "
            "program it checks; a checker states what a program must already be and "
            "MUST NOT attach Metadata"
        )

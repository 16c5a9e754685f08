"""Value lifetimes, level footprints and capacity advisories (analysis §1.2.2).

Positions: the parameters, then the body's Calls and Constants in SSA
postorder. A value is live from its definition to its greatest recorded
consumer (a parameter, and a Function body that is itself a value, to the last
position). Reshape and Transpose describe bytes their operand already holds:
they get no lifetime of their own, and a use of theirs is a use of what they
view. Every other result allocates its own bytes.

A lifetime's bytes project the value's Type through every authored split at or
coarser than the level's owner (companions §2.7: ``smem`` -> ``cta``, ``rmem``
-> ``thread``, independent of ``--topology``); a target-owned or undeclared
level stays global. Target facts come only through ``MemoryHierarchyFacts``.
"""
from __future__ import annotations

from tilefoundry.errors import AnalysisError
from tilefoundry.ir.expr import Call, Constant, GridRegionExpr, Tuple, Var
from tilefoundry.ir.metadata import BindingMetadata, SourceSpanMetadata
from tilefoundry.ir.storage import StorageKind
from tilefoundry.ir.tensor_type import TensorType, tensor_leaves
from tilefoundry.analysis.memory.records import LevelFootprint, ValueLifetime

__all__ = ["value_order", "lifetimes_of", "level_footprints", "projection_level",
           "value_label", "ALIASING_OPS", "peak_advisories", "sharing_advisories"]

ALIASING_OPS = ("Reshape", "Transpose")


def _aliases(node) -> bool:
    return isinstance(node, Call) and type(node.op).__name__ in ALIASING_OPS


def value_order(function) -> tuple[list, dict]:
    """(ordered nodes, id -> position): parameters, then body Calls and
    Constants in SSA postorder."""
    from tilefoundry.analysis.check import iter_nodes

    order = list(function.params)
    if function.body is not None:
        for node in iter_nodes(function.body):
            if isinstance(node, (Call, Constant)):
                order.append(node)
    return order, {id(n): k for k, n in enumerate(order)}


def value_label(node, names: dict | None = None) -> str:
    """Stable value name: the parameter or binding name (for a body value the
    line of its source span appended in the JSON lifetimes, see callers)."""
    if names is not None and id(node) in names:
        return names[id(node)]
    if isinstance(node, Var):
        return node.name
    binding = node.get_metadata(BindingMetadata)
    return binding.name if binding is not None else f"<value {id(node)}>"


def _root(node):
    """What an aliasing view's bytes belong to."""
    while _aliases(node):
        node = node.args[0]
    return node


def projection_level(owner: str, topologies: tuple, target_levels: tuple) -> str | None:
    """The module topology a value at a level owned by ``owner`` is projected
    through: the finest declared topology at or coarser than the owner; None
    when the owner is the whole target or unknown."""
    names = [t.name for t in topologies]
    if owner in names:
        return owner
    if owner not in target_levels:
        return None
    rank = target_levels.index(owner)
    found = None
    for name in names:
        if name in target_levels and target_levels.index(name) <= rank:
            found = name
    return found


def _bytes_by_level(type_, hierarchy, topologies, target_levels) -> dict:
    from tilefoundry.semantics.canonical import local_type_of

    owners = {lvl.name: lvl.owner for lvl in hierarchy.explicit_levels}
    found: dict = {}
    for leaf in tensor_leaves(type_):
        if leaf.storage == StorageKind.UMAT:
            continue
        level = str(leaf.storage)
        at = projection_level(owners.get(level, "target"), topologies, target_levels)
        local = local_type_of(leaf, at, topologies) if at is not None else leaf
        n = 1
        for e in local.shape:
            n *= int(e)
        found[level] = found.get(level, 0) + -(-n * leaf.dtype.bits // 8)
    return found


def lifetimes_of(function, hierarchy, topologies, target_levels, labels) -> tuple:
    """Every value residency, in definition order then level name."""
    order, position = value_order(function)
    last = len(order) - 1
    last_use = {id(n): position[id(n)] for n in order}
    for node in order:
        if not isinstance(node, Call):
            continue
        here = position[id(node)]
        # a Tuple is not a recorded value: a field reached only through one
        # has no recorded consumer there
        for arg in node.args:
            if isinstance(arg, Tuple):
                continue
            # the operand, and the value it aliases (a view reads its source)
            for key in (id(arg), id(_root(arg))) if _aliases(arg) else (id(arg),):
                if last_use.get(key, here) < here:
                    last_use[key] = here
    for param in function.params:
        last_use[id(param)] = last
    body = function.body
    if body is not None and id(_root(body)) in last_use:
        last_use[id(_root(body))] = last
    rows = []
    # id(type) -> (type, its bytes by level): a model's layers repeat their
    # types, and the view holds one object per distinct type
    sized: dict = {}

    def bytes_by_level(type_) -> list:
        hit = sized.get(id(type_))
        if hit is None:
            hit = sized[id(type_)] = (type_, sorted(
                _bytes_by_level(type_, hierarchy, topologies, target_levels).items()))
        return hit[1]

    for node in order:
        if isinstance(node, Constant) or _aliases(node):
            continue
        persistent = isinstance(node, Var)
        for level, size in bytes_by_level(node.type):
            rows.append(ValueLifetime(labels(node), level, size, position[id(node)],
                                      last_use[id(node)], persistent))
    return tuple(rows)


def level_footprints(lifetimes, hierarchy) -> tuple:
    capacity = {lvl.name: lvl.capacity_bytes for lvl in hierarchy.explicit_levels}
    rows = []
    for level in sorted({lt.level for lt in lifetimes}):
        mine = [lt for lt in lifetimes if lt.level == level]
        events: dict = {}
        for lt in mine:
            events[lt.defined_at] = events.get(lt.defined_at, 0) + lt.bytes
            events[lt.last_used_at + 1] = events.get(lt.last_used_at + 1, 0) - lt.bytes
        live = peak = 0
        for at in sorted(events):
            live += events[at]
            peak = max(peak, live)
        persistent = sum(lt.bytes for lt in mine if lt.persistent)
        rows.append(LevelFootprint(level, peak, persistent, capacity.get(level)))
    return tuple(rows)


def check_single_values(function, lifetimes, hierarchy) -> None:
    """One value exceeding an explicit level's capacity is an error (analysis
    §1.2.2), stated in the user's terms: the value's authored name and where it
    was written, its bytes, the capacity, and what would fit."""
    capacity = {lvl.name: lvl.capacity_bytes for lvl in hierarchy.explicit_levels}
    order = None
    for lt in lifetimes:
        cap = capacity.get(lt.level)
        if cap is not None and lt.bytes > cap:
            if order is None:
                order, _ = value_order(function)
            node = order[lt.defined_at] if lt.defined_at < len(order) else None
            raise AnalysisError(overflow_refusal(function.name, node, lt, cap, hierarchy))


def overflow_refusal(function_name: str, node, lt, capacity: int, hierarchy) -> str:
    """``file:line:col: value 'acc' ... needs N B in rmem, more than the C B ...;
    <remedy>`` for one value too large for its explicit level."""
    from tilefoundry.ir.expr import authored_label

    name = authored_label(node) if node is not None else None
    span = node.get_metadata(SourceSpanMetadata) if isinstance(node, (Call, Constant)) else None
    if isinstance(node, Var):
        what = f"parameter '{node.name}' of function '{function_name}'"
    elif name is not None:
        what = f"value '{name}' of function '{function_name}'"
    else:
        op = getattr(getattr(node, "op", None), "name", None)
        what = (f"the unnamed {op} result in function '{function_name}'" if op
                else f"a value of function '{function_name}'")
    if lt.binding != name:
        what += f" ({lt.binding} in the analysed program)"
    larger = [lvl.name for lvl in hierarchy.explicit_levels
              if lvl.name != lt.level and lvl.capacity_bytes is not None and lvl.capacity_bytes >= lt.bytes]
    place = (f", or place it in a larger level ({' or '.join(larger)})" if larger
             else "; no level of this target holds it whole")
    head = f"{span}: " if span is not None else ""
    return (f"{head}{what} needs {lt.bytes} B in {lt.level}, more than the {capacity} B the target "
            f"states for that level (analysis §1.2.2); split it over a mesh axis "
            f"(N @ m.a in its layout), tile it with a loop over windows{place}")


def peak_advisories(footprint, skip=()) -> list:
    return [
        f"{row.level} peak is {row.peak_bytes} B under this walk's value order, exceeding its "
        f"{row.capacity_bytes} B capacity; the peak is order-dependent and is not a bound over "
        "schedules"
        for row in footprint
        if row.level not in skip and row.capacity_bytes is not None
        and row.peak_bytes > row.capacity_bytes
    ]


def sharing_advisories(footprint, hierarchy) -> list:
    from tilefoundry.target.facts import MemoryRelationKind

    peaks = {row.level: row.peak_bytes for row in footprint}
    implicit = {lvl.name for lvl in hierarchy.implicit_levels}
    found = []
    for rel in hierarchy.relations:
        if rel.kind != MemoryRelationKind.SHARES_CAPACITY_WITH or rel.shared_capacity_bytes is None:
            continue
        cache, sharer = (rel.near, rel.far) if rel.near in implicit else (rel.far, rel.near)
        claimed = peaks.get(sharer, 0)
        if claimed > 0:
            block = rel.shared_capacity_bytes
            found.append(f"{sharer} claims {claimed} B of the {block} B block it divides with "
                         f"{cache}, leaving {cache} {block - claimed} B")
    return found


def source_line(node) -> int | None:
    span = node.get_metadata(SourceSpanMetadata)
    return getattr(span, "line", None) if span is not None else None


_ = (GridRegionExpr, TensorType)

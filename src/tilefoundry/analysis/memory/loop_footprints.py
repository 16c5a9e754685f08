"""Authored-loop access footprints and their cache pressure (analysis §1.2.2
LoopFootprintMetadata, BufferFootprint, cache-pressure).

For every authored loop, every read boundary of every call placed in it or in a
loop below it is asked of its access relation -- in one participant's share
(``bytes``) and as written (``device_bytes``) -- with the run-time coordinates
bound to an induction variable of those loops kept open. A window (Slice) and
a view (Reshape, Transpose) are followed to the buffer whose bytes they reach,
composing their relations, so a tile loop's window reads land on its source.
The loop-prefixed images of one buffer are unioned over the loops' iterations
and counted once (deduplicated); ``repeated_bytes`` sums each access's
per-position count times its enclosing trip counts. Bytes are
``ceil(elements * bits / 8)`` of the whole buffer reading.

A loop holds the calls it repeats: those placed in it that read its induction
variable or a value it carries (the dependence ``recomputation_factors``
counts traffic by); a loop-invariant call runs once and is no access of the
loop. A run-time coordinate computed affinely from an induction variable
(``start = kk + grid.w * STEP``) is kept as that expression, so the window moves
with every trip; a mesh coordinate in it is one participant's value in the
narrow view and ranges over every participant in the device view. A boundary
with no relation makes the record a lower bound (``known`` false), never an
error.

A loop of a structure already recorded in the run (the next layer of a model)
takes that record, its buffers renamed (``loop_structure``).

The target-aware projection (``cache_pressure``) is report data computed from
the record and MemoryHierarchyFacts; it is not a record.
"""
from __future__ import annotations

from tilefoundry.errors import TileFoundryError
from tilefoundry.ir.expr import Call, Constant
from tilefoundry.ir.storage import StorageKind
from tilefoundry.ir.tensor_type import TensorType
from tilefoundry.analysis.memory.loop_structure import Unkeyed, loop_structure
from tilefoundry.analysis.memory.point_counts import point_count
from tilefoundry.analysis.memory.records import BufferFootprint, LoopFootprintMetadata

__all__ = ["loop_footprints", "loop_advisories", "cache_pressure", "VIEW_OPS"]

# a window and a reshape move nothing themselves (their evaluators state no
# direction): they are read where they are used, on the buffer whose bytes they
# reach. A Transpose materialises its permutation, so it is a buffer of its own.
VIEW_OPS = ("Slice", "Reshape")


def _chain_op(node) -> bool:
    return isinstance(node, Call) and type(node.op).__name__ in VIEW_OPS


def _loops_down(scope, inner) -> list:
    """The loops from ``scope`` (included) down to ``inner`` (included)."""
    chain = []
    node = inner
    while node is not None:
        if node.kind == "loop":
            chain.append(node.node)
        if node is scope:
            break
        node = node.parent
    return list(reversed(chain))


def _loop_range(loop, name):
    import islpy as isl

    start, step, trips = int(loop.start), int(loop.step), int(loop.trips)
    return isl.Set(f"[{name}] -> {{ : exists (t : {name} = {start} + {step}t and "
                   f"0 <= t < {trips}) }}")


class _NoRelation(Exception):
    """A boundary on the way to a buffer states no relation."""


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_literal(node):
    value = node.value if isinstance(node, Constant) else None
    return value if _is_int(value) else None


# scalar ops that hand their operand's integer value on unchanged
_VALUE_PRESERVING = ("Reshape", "Local", "Reshard")


def affine_value(node, keep: dict, participant: bool):
    """(isl affine text, constraints) of an integer scalar value over the kept
    induction variables (``keep``: id -> parameter name), or None when the value
    is not affine in them. A mesh coordinate (an ``arange`` ramp handed on by
    placement) is one participant's value -- the first -- when ``participant``
    holds, else a parameter ranging over the ramp: the device view is the union
    over every participant."""
    if id(node) in keep:
        return keep[id(node)], ()
    literal = _int_literal(node)
    if literal is not None:
        return str(literal), ()
    if not (isinstance(node, Call) and isinstance(node.type, TensorType) and node.type.dtype.is_int):
        return None
    name = type(node.op).__name__
    if name in _VALUE_PRESERVING and node.args:
        return affine_value(node.args[0], keep, participant)
    if name == "Arange" and len(node.type.shape) == 1:
        start, step = node.op.start, node.op.step
        if not (_is_int(start) and _is_int(step)):
            return None
        if participant:
            return str(start), ()
        coordinate = f"p_coord{id(node)}"
        return f"({start} + {step} * {coordinate})", (f"0 <= {coordinate} < {int(node.type.shape[0])}",)
    if name == "Binary" and len(node.args) == 2:
        return _affine_binary(node, keep, participant)
    return None


def _affine_binary(node, keep, participant):
    kind = getattr(node.op.kind, "value", node.op.kind)
    lhs, rhs = (affine_value(a, keep, participant) for a in node.args)
    if lhs is None or rhs is None:
        return None
    constraints = lhs[1] + rhs[1]
    if kind in ("add", "sub"):
        return f"({lhs[0]} {'+' if kind == 'add' else '-'} {rhs[0]})", constraints
    if kind == "mul":
        # affine only when one factor is a literal
        for factor, other in ((node.args[0], rhs), (node.args[1], lhs)):
            literal = _int_literal(factor)
            if literal is not None:
                return f"({literal} * {other[0]})", constraints
    return None


class _Footprints:
    def __init__(self, ctx, directions, dependence, counter=None):
        from tilefoundry.analysis.memory.traffic import BoundaryCounter

        self.ctx = ctx
        self.directions = directions
        self.dependence = dependence  # id(node) -> loops it reads (compute_cost)
        self.counter = counter or BoundaryCounter(ctx.level, ctx.topologies)
        self.records: dict = {}  # loop_structure key -> (known, rows by buffer position)

    def images(self, call, index, level, keep):
        """Image of input ``index`` of ``call`` in the coordinates of the buffer
        it reaches, followed through windows and views: (root, set)."""
        participant = level is not None

        def trace(value):
            return affine_value(value, keep, participant=participant)

        traced = trace if keep else None
        rows, maps = self.counter.restricted(call, level, keep, traced, ("participant", participant))
        if maps[index] is None:
            raise _NoRelation()
        image = maps[index].range()
        node = call.args[index]
        while _chain_op(node):
            inner_rows, inner = self.counter.restricted(node, None, keep, traced,
                                                        ("participant", participant))
            out = inner[len(node.args)]
            if out is None or inner[0] is None:
                raise _NoRelation()
            iterations = image.apply(out.reverse())
            image = iterations.apply(inner[0])
            node = node.args[0]
        return node, image

    def record(self, scope) -> LoopFootprintMetadata:
        """The loop's record; a loop of a structure already recorded (a model's
        next layer) takes that record with its own buffers' names."""
        try:
            key, nodes = loop_structure(scope, self.dependence, _loops_down)
            template = self.records.get(key)
        except (Unkeyed, TypeError):  # not keyable exactly (or unhashable): derived afresh
            return _metadata(*self._rows(scope))
        if template is not None:
            known, rows = template
            return _metadata(known, [(nodes[slot], *rest) for slot, *rest in rows])
        known, rows = self._rows(scope)
        slots = {id(node): k for k, node in enumerate(nodes)}
        if all(id(root) in slots for root, *_ in rows):
            self.records[key] = (known, [(slots[id(root)], *rest) for root, *rest in rows])
        return _metadata(known, rows)

    def _rows(self, scope) -> tuple[bool, list]:
        """(known, [(buffer node, level, bytes, device_bytes, repeated_bytes)])."""
        known = True
        groups: dict = {}
        for inner in scope.walk():
            chain = _loops_down(scope, inner)
            names = {id(loop.induction_var): f"p_loop{k}" for k, loop in enumerate(chain)}
            for call in inner.calls:
                repeating = self.dependence.get(id(call), frozenset())
                if scope.node not in repeating:
                    continue  # loop-invariant: it runs once, outside the trips
                if scope.refuses(call, "narrow") or scope.refuses(call, "device"):
                    known = False
                    continue
                if _chain_op(call):
                    continue  # a window is read where it is used, on its source
                trips = 1
                for loop in chain:
                    if loop in repeating:
                        trips *= int(loop.trips)
                for index, arg in enumerate(call.args):
                    if not isinstance(arg.type, TensorType) or arg.type.storage == StorageKind.UMAT:
                        continue
                    try:
                        root, narrow = self.images(call, index, self.ctx.level, names)
                        _, device = self.images(call, index, None, names)
                        _, one = self.images(call, index, self.ctx.level, {})
                    except (TileFoundryError, _NoRelation):
                        known = False  # this access is missing: the rows are a lower bound
                        continue
                    if not isinstance(root.type, TensorType) or root.type.storage == StorageKind.UMAT:
                        continue
                    key = (id(root), str(root.type.storage))
                    entry = groups.setdefault(key, [root, None, None, 0])
                    for slot, image in ((1, narrow), (2, device)):
                        entry[slot] = image if entry[slot] is None else entry[slot].union(image)
                    entry[3] += point_count(one) * trips
        rows = []
        for (root_id, level), (root, narrow, device, repeated) in groups.items():
            bits = root.type.dtype.bits
            bytes_ = -(-_union_count(narrow, names_of(narrow), scope) * bits // 8)
            device_bytes = -(-_union_count(device, names_of(device), scope) * bits // 8)
            repeated_bytes = -(-repeated * bits // 8)
            if bytes_ > repeated_bytes or device_bytes < bytes_:
                known = False  # that buffer reading is unavailable
                continue
            rows.append((root, level, bytes_, device_bytes, repeated_bytes))
        return bool(known), rows


def _metadata(known: bool, rows: list) -> LoopFootprintMetadata:
    from tilefoundry.analysis.memory.footprints import value_label

    footprints = [BufferFootprint(value_label(root), level, bytes_, device_bytes, repeated)
                  for root, level, bytes_, device_bytes, repeated in rows]
    footprints.sort(key=lambda r: (r.buffer, r.level))
    return LoopFootprintMetadata(tuple(footprints), known)


def names_of(image) -> list:
    import islpy as isl

    return [image.get_dim_name(isl.dim_type.param, i) for i in range(image.dim(isl.dim_type.param))]


def _union_count(image, params, scope) -> int:
    """Count the image's points over every iteration of the kept loops."""
    import islpy as isl

    loops = {}
    for inner in scope.walk():
        for k, loop in enumerate(_loops_down(scope, inner)):
            loops.setdefault(f"p_loop{k}", loop)
    for name in params:
        if name.startswith("p_loop") and name in loops:
            image = image.intersect_params(_loop_range(loops[name], name))
    n = image.dim(isl.dim_type.param)
    if n:
        image = image.project_out(isl.dim_type.param, 0, n)
    return point_count(image)


def loop_footprints(function, ctx, directions, counter=None) -> list:
    """[(loop, LoopFootprintMetadata)] for every authored loop. ``counter``: the
    BoundaryCounter of this run's traffic, whose settled maps the footprints
    reuse (one is made when none is given)."""
    from tilefoundry.analysis.recomputation import loop_dependence

    builder = _Footprints(ctx, directions, loop_dependence(function, getattr(ctx, "call_sites", None)),
                          counter)
    found = []
    for scope in ctx.root.walk():
        if scope.kind == "loop":
            found.append((scope.node, builder.record(scope)))
    return found


# ---------------------------------------------------------------- cache pressure


def _backing(cache: str, hierarchy) -> str | None:
    """The explicit level a cache ultimately backs onto, following caches edges."""
    from tilefoundry.target.facts import MemoryRelationKind

    explicit = {lvl.name for lvl in hierarchy.explicit_levels}
    seen, level = set(), cache
    while level not in explicit:
        if level in seen:
            return None
        seen.add(level)
        nxt = [r.far for r in hierarchy.relations
               if r.kind == MemoryRelationKind.CACHES and r.near == level]
        if not nxt:
            return None
        level = nxt[0]
    return level


def _usable_capacity(cache, hierarchy, footprint) -> int | None:
    from tilefoundry.target.facts import MemoryRelationKind

    if cache.capacity_bytes is not None:
        return cache.capacity_bytes
    peaks = {row.level: row.peak_bytes for row in footprint}
    for rel in hierarchy.relations:
        if rel.kind == MemoryRelationKind.SHARES_CAPACITY_WITH and cache.name in (rel.near, rel.far) \
                and rel.shared_capacity_bytes is not None:
            sharer = rel.far if rel.near == cache.name else rel.near
            return max(rel.shared_capacity_bytes - peaks.get(sharer, 0), 0)
    return None


def cache_pressure(record, hierarchy, footprint) -> list:
    """One row per implicit cache whose ultimate explicit backing level has the
    same capacity scope and holds buffers of this loop."""
    scopes = {lvl.name: lvl.scope for lvl in hierarchy.explicit_levels}
    rows = []
    for cache in hierarchy.implicit_levels:
        backing = _backing(cache.name, hierarchy)
        if backing is None or scopes.get(backing) != cache.scope:
            continue
        mine = [f for f in record.footprints if f.level == backing and f.device_bytes >= f.bytes]
        if not mine:
            continue
        device = sum(f.device_bytes for f in mine)
        capacity = _usable_capacity(cache, hierarchy, footprint)
        if capacity is None:
            status = "unknown"
        elif device > capacity:
            status = "exceeds"
        else:
            status = "fits" if record.known else "lower-bound"
        rows.append({"cache_level": cache.name, "backing_level": backing, "device_bytes": device,
                     "capacity_bytes": capacity, "status": status})
    return rows


def loop_advisories(loops, hierarchy, footprint) -> list:
    scope_of = {lvl.name: lvl.scope for lvl in hierarchy.implicit_levels}
    found = []
    for loop, record in loops:
        for row in cache_pressure(record, hierarchy, footprint):
            if row["status"] != "exceeds":
                continue
            amount = row["device_bytes"] if record.known else f"at least {row['device_bytes']}"
            found.append(
                f"{row['cache_level']} holds {row['capacity_bytes']} B per "
                f"{scope_of[row['cache_level']]}, so the {row['backing_level']} access footprint "
                f"of {amount} B in loop '{loop.induction_var.name}' will not stay resident"
            )
    return found

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

The target-aware projection (``cache_pressure``) is report data computed from
the record and MemoryHierarchyFacts; it is not a record.
"""
from __future__ import annotations

from tilefoundry.errors import TileFoundryError
from tilefoundry.ir.expr import Call
from tilefoundry.ir.storage import StorageKind
from tilefoundry.ir.tensor_type import TensorType
from tilefoundry.analysis.memory_records import BufferFootprint, LoopFootprintMetadata

__all__ = ["loop_footprints", "loop_advisories", "cache_pressure", "VIEW_OPS"]

VIEW_OPS = ("Slice",)


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


class _Footprints:
    def __init__(self, ctx, directions):
        from tilefoundry.analysis.memory_traffic import BoundaryCounter

        self.ctx = ctx
        self.directions = directions
        self.counter = BoundaryCounter(ctx.level, ctx.topologies)

    def images(self, call, index, level, keep):
        """Image of input ``index`` of ``call`` in the coordinates of the buffer
        it reaches, followed through windows and views: (root, set)."""
        rows, maps = self.counter.restricted(call, level, keep)
        image = maps[index].range()
        node = call.args[index]
        while _chain_op(node):
            inner_rows, inner = self.counter.restricted(node, None, keep)
            out = inner[len(node.args)]
            iterations = image.apply(out.reverse())
            image = iterations.apply(inner[0])
            node = node.args[0]
        return node, image

    def record(self, scope) -> LoopFootprintMetadata:
        from tilefoundry.analysis.memory_footprint import value_label
        from tilefoundry.analysis.memory_traffic import _count

        known = scope.known("narrow") and scope.known("device")
        groups: dict = {}
        for inner in scope.walk():
            chain = _loops_down(scope, inner)
            names = {id(loop.induction_var): f"p_loop{k}" for k, loop in enumerate(chain)}
            trips = 1
            for loop in chain:
                trips *= int(loop.trips)
            for call in inner.calls:
                if _chain_op(call):
                    continue  # a window is read where it is used, on its source
                for index, arg in enumerate(call.args):
                    if not isinstance(arg.type, TensorType) or arg.type.storage == StorageKind.UMAT:
                        continue
                    try:
                        root, narrow = self.images(call, index, self.ctx.level, names)
                        _, device = self.images(call, index, None, names)
                        _, one = self.images(call, index, self.ctx.level, {})
                    except TileFoundryError:
                        known = False
                        continue
                    if not isinstance(root.type, TensorType) or root.type.storage == StorageKind.UMAT:
                        continue
                    key = (id(root), str(root.type.storage))
                    entry = groups.setdefault(key, [root, None, None, 0])
                    for slot, image in ((1, narrow), (2, device)):
                        entry[slot] = image if entry[slot] is None else entry[slot].union(image)
                    entry[3] += _count(one) * trips
        rows = []
        for (root_id, level), (root, narrow, device, repeated) in groups.items():
            bits = root.type.dtype.bits
            bytes_ = -(-_union_count(narrow, names_of(narrow), scope) * bits // 8)
            device_bytes = -(-_union_count(device, names_of(device), scope) * bits // 8)
            repeated_bytes = -(-repeated * bits // 8)
            if bytes_ > repeated_bytes or device_bytes < bytes_:
                known = False  # that buffer reading is unavailable
                continue
            rows.append(BufferFootprint(value_label(root), level, bytes_, device_bytes,
                                        repeated_bytes))
        rows.sort(key=lambda r: (r.buffer, r.level))
        return LoopFootprintMetadata(tuple(rows), bool(known))


def names_of(image) -> list:
    import islpy as isl

    return [image.get_dim_name(isl.dim_type.param, i) for i in range(image.dim(isl.dim_type.param))]


def _union_count(image, params, scope) -> int:
    """Count the image's points over every iteration of the kept loops."""
    import islpy as isl
    from tilefoundry.analysis.memory_traffic import _count

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
    return _count(image)


def loop_footprints(function, ctx, directions) -> list:
    """[(loop, LoopFootprintMetadata)] for every authored loop."""
    builder = _Footprints(ctx, directions)
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

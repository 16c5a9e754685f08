"""What one occurrence moves, counted off its access relations (analysis
§1.2.2 TrafficMetadata; companions §4.3, §4.4, §5.1, §5.4).

The Op's registered cost evaluator says WHICH boundaries move (directions
only); the amount of every moving boundary is the number of distinct
coordinates its relation reaches:

- whole: the relation as written, over the op's whole iteration space;
- per unit: the same relation (one registration), composed with the value's
  position map and clipped to what one participant of the analysed level
  holds (``held``), then restricted to the participant's iteration share --
  the intersection over every boundary of "iterations whose image lands in
  coordinates this participant holds, plus iterations where the boundary says
  nothing" -- so an unsplit operand consumed by split work is charged for the
  part the participant's iterations touch (companions §4.3).

Parameters are settled first: a run-time coordinate bound to a literal takes
its value, any other takes the smallest value the relation's own constraints
allow (companions §4.4). A single-leaf boundary costs
``ceil(elements * bits / 8)``; a tuple boundary charges every reached flat leaf
its full static bytes at its own level. An input leaf at ``umat`` is charged at
``rmem``; an output leaf at ``umat`` counts in the operand amount only.

A call whose relations are all box-shaped is counted by ``box_counts``
without isl (the same answers; a program without such a call never imports
islpy); any other is counted here, exactly (``Set.count_val``), with islpy
imported on first use.
"""
from __future__ import annotations

import re

from tilefoundry.errors import AnalysisError, TileFoundryError
from tilefoundry.ir.expr import Call, Constant, Tuple
from tilefoundry.ir.storage import StorageKind
from tilefoundry.ir.tensor_type import TensorType, TupleType, tensor_leaves
from tilefoundry.semantics.relations import isl_map, isl_set
from tilefoundry.analysis.memory.box_counts import box_counts, held_digits, held_layout, held_masks, known_value
from tilefoundry.analysis.memory.point_counts import leaf_indices, point_count
from tilefoundry.ir.memo import memoised

__all__ = ["BoundaryCounter", "held_constraints", "leaf_bytes", "charge_level",
           "call_traffic", "RMEM"]

RMEM = "rmem"


# ---------------------------------------------------------------- small helpers


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def leaf_bytes(leaf: TensorType, elements: int) -> int:
    return _ceil_div(elements * leaf.dtype.bits, 8)


def _numel(leaf: TensorType) -> int:
    n = 1
    for e in leaf.shape:
        n *= int(e)
    return n


def charge_level(leaf: TensorType, output: bool) -> str | None:
    """The level a reached leaf is charged at (companions §5.4)."""
    if leaf.storage == StorageKind.UMAT:
        return None if output else RMEM
    return str(leaf.storage)


def held_constraints(type_, level, topologies) -> tuple:
    """isl constraints over ``o0..`` stating the coordinates one participant of
    ``level`` holds of a value of ``type_`` (its position map: mixed-radix
    digits over the layout positions holding each logical axis; a position a
    split at or coarser than ``level`` divides is held only in its first
    ``local`` digits). Empty: the participant holds everything."""
    from tilefoundry.semantics.canonical import relinearised_held_constraints, straddles

    layout = held_layout(type_, level, topologies)
    if layout is None:
        return ()
    domain, local, groups = layout
    if straddles(groups):
        return relinearised_held_constraints(tuple(type_.shape), domain, local)
    return tuple(digit_constraint(*digit) for digit in held_digits(layout))


def digit_constraint(axis: int, stride: int, modulus, limit: int) -> str:
    """isl text of one held digit (``held_digits``' row) over ``o<axis>``."""
    digit = f"floor(o{axis}/{stride})" if stride != 1 else f"o{axis}"
    return f"{digit} < {limit}" if modulus is None else f"({digit}) mod {modulus} < {limit}"


def _box(rank: int, type_) -> list:
    if isinstance(type_, TensorType):
        return [f"0 <= o{k} < {int(e)}" for k, e in enumerate(type_.shape)]
    if isinstance(type_, TupleType):
        return [f"0 <= o0 < {len(tensor_leaves(type_))}"]
    return []


# ---------------------------------------------------------------- parameters


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _rename(m, kept: dict):
    import islpy as isl

    for name, new in kept.items():
        pos = m.find_dim_by_name(isl.dim_type.param, name)
        if pos >= 0:
            m = m.set_dim_name(isl.dim_type.param, pos, new)
    return m


def _settle(maps: list, bindings: dict, keep=frozenset()):
    """Fix every parameter but those in ``keep``: a known literal, else the
    smallest value the relations' own constraints allow (lexicographic in
    parameter name)."""
    import islpy as isl

    names = sorted({m.get_dim_name(isl.dim_type.param, i) for m in maps
                    for i in range(m.dim(isl.dim_type.param))} - set(keep))
    if not names:
        return maps
    fixed = {}
    for name in names:
        value = known_value(bindings.get(name))
        if value is not None:
            fixed[name] = value
    pending = [n for n in names if n not in fixed]
    if pending:
        universe = None
        for m in maps:
            if m.is_empty():  # reaches nothing for any value: it constrains none
                continue
            p = m.params()
            universe = p if universe is None else universe.intersect(p)
        if universe is None:  # every map is empty: any value reads the same nothing
            return [_fix_all(m, {**fixed, **{n: 0 for n in pending}}) for m in maps]
        for name, value in fixed.items():
            universe = _fix(universe, name, value)
        for name in keep:
            pos = universe.find_dim_by_name(isl.dim_type.param, name)
            if pos >= 0:
                universe = universe.project_out(isl.dim_type.param, pos, 1)
        for name in pending:
            pos = universe.find_dim_by_name(isl.dim_type.param, name)
            if pos < 0:  # no map that reaches anything names it: any value reads the same
                fixed[name] = 0
                continue
            as_set = universe.move_dims(isl.dim_type.set, 0, isl.dim_type.param, pos, 1)
            low = as_set.lexmin()
            if low.is_empty():
                raise AnalysisError(f"parameter '{name}' has no finite minimum under its relation")
            point = low.sample_point()
            value = int(point.get_coordinate_val(isl.dim_type.set, 0).to_python())
            fixed[name] = value
            universe = _fix(universe, name, value)
    return [_fix_all(m, fixed) for m in maps]


def _tie(maps: list, bindings: dict, kept: dict, loop_names: set, trace):
    """Tie each parameter whose bound value ``trace`` states affinely over the
    kept loop names to that expression. Returns (maps, names never to settle)."""
    import islpy as isl

    tied: set = set()
    for name, value in bindings.items():
        if name in kept or _is_int(value):
            continue
        found = trace(value)
        if found is None:
            continue
        expr, constraints = found
        mentioned = set(re.findall(r"\bp_\w+", expr)) | {
            n for c in constraints for n in re.findall(r"\bp_\w+", c)}
        if not mentioned & loop_names:
            continue  # not moved by a loop: settled like any run-time value
        unique = f"p_at{id(value)}"  # one name per value, whatever call binds it
        condition = " and ".join((f"{unique} = {expr}",) + tuple(constraints))
        params = ", ".join(sorted(mentioned | {unique}))
        tie = isl.Set(f"[{params}] -> {{ : {condition} }}")
        maps = [None if m is None else _tie_one(m, name, unique, tie) for m in maps]
        tied |= mentioned | {unique}
    return maps, tied


def _tie_one(m, name, unique, tie):
    import islpy as isl

    pos = m.find_dim_by_name(isl.dim_type.param, name)
    if pos < 0:
        return m
    return m.set_dim_name(isl.dim_type.param, pos, unique).intersect_params(tie)


def _fix(obj, name, value):
    import islpy as isl

    pos = obj.find_dim_by_name(isl.dim_type.param, name)
    if pos < 0:
        return obj
    return obj.fix_val(isl.dim_type.param, pos, isl.Val.int_from_si(obj.get_ctx(), value))


def _fix_all(m, fixed):
    for name, value in fixed.items():
        m = _fix(m, name, value)
    return m


# ---------------------------------------------------------------- counting


class BoundaryCounter:
    """Counts one call's boundaries, in the whole window and one unit's."""

    def __init__(self, level, topologies):
        self.level = level
        self.topologies = tuple(topologies)
        self.memo: dict = {}
        self.records: dict = {}  # call_traffic_records' TrafficMetadata by structural key
        # restricted() by (call, level, kept names): a loop footprint asks it
        # once per operand and view, and each answer holds every boundary;
        # the settled maps (level aside) serve the whole and per-unit counts
        self._restricted: dict = {}
        self._settled_memo: dict = {}
        self._held: dict = {}  # held constraints and masks by (type, level): types repeat across calls
        self._boundaries: dict = {}  # by id(call), the call kept alive beside its rows
        self.keys: dict = {}  # Call.structure (else id(call)) -> (call, its records key): readiness and the family share it

    def boundaries(self, call):
        """[(pattern | None, type, output, index)] in (*args, result fields) order."""
        hit = self._boundaries.get(id(call))
        if hit is None:
            hit = self._boundaries[id(call)] = (call, self._boundary_rows(call))
        return hit[1]

    @staticmethod
    def _boundary_rows(call):
        from tilefoundry.semantics.relations import access_relations

        relations = access_relations(call.op, call.args)
        rows = [(b, a.type, False, i) for i, (b, a) in enumerate(zip(relations.inputs, call.args))]
        fields = call.type.fields if isinstance(call.type, TupleType) else (call.type,)
        rows += [(b, fields[i] if i < len(fields) else call.type, True, i)
                 for i, b in enumerate(relations.outputs)]
        return rows

    def restricted(self, call, level, keep=None, trace=None, trace_key=None):
        """(rows, maps): every boundary's isl map with its parameters settled
        (except those bound to a node whose id is in ``keep``, renamed
        ``keep[id]``), clipped to its type's box and, at a level, to what one
        participant holds and to the participant's iteration share.

        ``trace(value)`` may state a bound value as (isl affine text over the
        kept names, constraints): such a parameter is not settled but tied to
        that expression, so it moves with the kept names. ``trace_key`` names
        what ``trace`` depends on beyond ``keep``; a traced question without
        one is answered afresh."""
        keep = keep or {}
        if trace is not None and trace_key is None:
            return self._restrict(call, level, keep, trace)
        key = (id(call), level, frozenset(keep.items()), trace_key if trace is not None else None)
        hit = self._restricted.get(key)
        if hit is not None:
            return hit[1], hit[2]
        rows, maps = self._restrict(call, level, keep, trace)
        self._restricted[key] = (call, rows, maps)  # the call kept alive: its id stays unique
        return rows, maps

    def _restrict(self, call, level, keep, trace):
        rows, maps = self._settled(call, keep, trace)
        return rows, self._held_share(rows, maps, level)

    def _settled(self, call, keep, trace):
        """Every boundary's map, boxed and with its parameters settled: the
        part of restricted() that does not depend on the level."""
        if trace is None:
            key = (id(call), frozenset(keep.items()))
            hit = self._settled_memo.get(key)
            if hit is not None:
                return hit[1], hit[2]
        rows = self.boundaries(call)
        maps, bindings = [], {}
        for pattern, type_, output, index in rows:
            if pattern is None:
                maps.append(None)
                continue
            access = pattern.pattern
            bindings.update(dict(access.parameters))
            maps.append(_boxed_map(access.isl_text(), access.rank, type_))
        kept = {name: keep[id(value)] for name, value in bindings.items()
                if not _is_int(value) and id(value) in keep}
        tied: set = set()
        if trace is not None:
            maps, tied = _tie(maps, bindings, kept, set(keep.values()), trace)
        present = [m for m in maps if m is not None]
        settled = iter(_settle(present, bindings, frozenset(kept) | tied))
        maps = [_rename(next(settled), kept) if m is not None else None for m in maps]
        if trace is None:
            self._settled_memo[key] = (call, rows, maps)
        return rows, maps

    def _held_share(self, rows, maps, level):
        """``maps`` clipped to what one participant of ``level`` holds and to
        the participant's iteration share (unchanged with no level)."""
        import islpy as isl

        helds = []
        for (pattern, type_, output, index), m in zip(rows, maps):
            cons = self._held_constraints(type_, level) if m is not None else ()
            helds.append(isl_set(_set_text(m.dim(isl.dim_type.out), list(cons), m)) if cons else None)
        if level is not None and any(h is not None for h in helds):
            share = None
            for row, m, h in zip(rows, maps, helds):
                if m is None or h is None:
                    continue  # every iteration lands in held coordinates
                space = _fixed_like(_iteration_space(row[0].pattern, m), m)
                part = m.intersect_range(h).domain().union(space.subtract(m.domain()))
                share = part if share is None else share.intersect(part)
            maps = [m.intersect_domain(share) if m is not None and share is not None else m
                    for m in maps]
            maps = [m.intersect_range(h) if m is not None and h is not None else m
                    for m, h in zip(maps, helds)]
        return maps

    def _held_constraints(self, type_, level) -> tuple:
        return memoised(self._held, (type_, level),
                        lambda: held_constraints(type_, level, self.topologies))

    def count(self, call, level):
        """Per boundary row: [(leaf, charged level, bytes)].

        Memoised by the call's structure (op, operand types, literal operands,
        result type, level): repeated occurrences of one computation — the
        copies of a renamed layer, say — count once (architecture §8)."""
        key = (call.op, tuple(_structural_key(a) for a in call.args), call.type, level)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        rows = self.boundaries(call)
        boxed = box_counts(rows, level, self._held_masks)
        if boxed is not None:
            out = [[] if reached is None else self._charge(reached, type_, output, level)
                   for reached, (_pattern, type_, output, _index) in zip(boxed, rows)]
            self.memo[key] = out
            return out
        rows, maps = self.restricted(call, level)
        # a tensor boundary the level did not clip moves what it moves in the whole
        unclipped = self._settled(call, {}, None)[1] if level is not None else ()
        whole = self.count(call, None) if any(m is not None and m is u for m, u in
                                              zip(maps, unclipped)) else None
        out = []
        for k, ((pattern, type_, output, index), m) in enumerate(zip(rows, maps)):
            if m is None:
                out.append([])
            elif whole is not None and m is unclipped[k] and isinstance(type_, TensorType):
                out.append(whole[k])
            else:
                out.append(self._charge(self._reached(m.range(), type_), type_, output, level))
        self.memo[key] = out
        return out

    @staticmethod
    def _reached(image, type_):
        """A tensor image's point count, or the leaf indices a tuple's reaches."""
        if isinstance(type_, TensorType):
            return point_count(image)
        leaves = tensor_leaves(type_)
        return leaf_indices(image, len(leaves)) if leaves else ()

    def _held_masks(self, type_, level):
        return memoised(self._held, ("masks", type_, level),
                        lambda: held_masks(type_, level, self.topologies))

    def _charge(self, reached, type_, output, level):
        """The charged rows of one boundary that reaches ``reached``: a tensor's
        point count, a tuple's leaf indices."""
        if isinstance(type_, TensorType):
            return [(type_, charge_level(type_, output), leaf_bytes(type_, reached))]
        leaves = tensor_leaves(type_)
        found = []
        for k in reached:
            leaf = leaves[k]
            if level is not None:
                from tilefoundry.semantics.cost import logical_local_type

                leaf = logical_local_type(leaf, level, self.topologies)
            found.append((leaf, charge_level(leaf, output), leaf_bytes(leaf, _numel(leaf))))
        return found


# ---------------------------------------------------------------- parsed once
#
# The same few relation texts recur across every call, operand and view (a
# program has tens of distinct texts and thousands of uses): maps and sets are
# parsed once by semantics.relations (isl_map, isl_set), and a relation clipped
# to a type's box is kept by (text, box).

_BOXED: dict = {}


def _boxed_map(text: str, rank: int, type_):
    """The relation of ``text`` clipped to ``type_``'s box, by (text, box)."""
    box = _box(rank, type_)
    key = (text, tuple(box))
    found = _BOXED.get(key)
    if found is None:
        found = isl_map(text)
        if box:
            found = found.intersect_range(isl_set(_set_text(rank, box, found)))
        _BOXED[key] = found
    return found


def _structural_key(node):
    """What a relation reads of an operand: its type, and the value of a literal
    (a runtime value settles by the relation's own constraints, not its identity)."""
    if isinstance(node, Constant):
        return ("literal", node.value, node.type)
    if isinstance(node, Tuple):
        return ("tuple", tuple(_structural_key(f) for f in node.fields))
    return ("value", node.type)


def _set_text(rank: int, constraints: list, like) -> str:
    import islpy as isl

    params = [like.get_dim_name(isl.dim_type.param, i) for i in range(like.dim(isl.dim_type.param))]
    outs = ", ".join(f"o{k}" for k in range(rank))
    body = " and ".join(constraints)
    return f"[{', '.join(params)}] -> {{ [{outs}] : {body} }}" if body else \
        f"[{', '.join(params)}] -> {{ [{outs}] }}"


def _fixed_like(space, m):
    """``space`` with each parameter ``m`` has settled fixed to the same value:
    unfixed, the space's complement of ``m``'s domain would hold every other
    value of the parameter, and a share built from it would carry them back
    into the maps it restricts (their counts then free in a settled name)."""
    import islpy as isl

    for k in range(m.dim(isl.dim_type.param)):
        value = m.plain_get_val_if_fixed(isl.dim_type.param, k)
        if value.is_int():
            space = _fix(space, m.get_dim_name(isl.dim_type.param, k), value.to_python())
    return space


def _iteration_space(access, like):
    """The op's whole iteration space: the domain box every boundary shares."""
    import islpy as isl

    params = [like.get_dim_name(isl.dim_type.param, i) for i in range(like.dim(isl.dim_type.param))]
    ins = ", ".join(f"i{k}" for k in range(len(access.domain)))
    body = " and ".join(f"0 <= i{k} < {ext}" for k, ext in enumerate(access.domain))
    text = f"[{', '.join(params)}] -> {{ [{ins}]" + (f" : {body} }}" if body else " }")
    return isl_set(text)


# ---------------------------------------------------------------- one call


def call_traffic(call, directions, counter: BoundaryCounter):
    """(whole, per_unit, operands) of one occurrence.

    whole / per_unit: sorted ((level, (read, write)), ...) over levels any
    directed boundary reaches; operands: (read, write) per (*args, result)."""
    n_args = len(call.args)
    whole_rows = counter.count(call, None)
    unit_rows = counter.count(call, counter.level) if counter.level is not None else whole_rows

    def group(rows):
        levels: dict = {}
        for position, charged in enumerate(rows):
            index = position if position < n_args else n_args
            read, write = directions[index]
            if not (read or write):
                continue
            for leaf, level, amount in charged:
                if level is None:
                    continue
                r, w = levels.get(level, (0, 0))
                levels[level] = (r + (amount if read else 0), w + (amount if write else 0))
        return tuple(sorted(levels.items()))

    operands = []
    for index in range(n_args + 1):
        read, write = directions[index]
        rows = whole_rows[index:index + 1] if index < n_args else whole_rows[n_args:]
        amount = sum(a for charged in rows for _, _, a in charged)
        operands.append((amount if read else 0, amount if write else 0))
    return group(whole_rows), group(unit_rows), tuple(operands)


_ = (Call, Tuple, TileFoundryError)

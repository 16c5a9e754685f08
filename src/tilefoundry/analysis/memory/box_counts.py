"""Exact boundary counts of box-shaped access relations, without isl
(analysis §1.2.2; companions §4.3, §4.4).

Nearly every call of a program reads and writes through relations whose image
axes each follow one iteration dimension at a constant offset (a projection,
a window at literal starts), are constant, or are free, over a box iteration
space; and what one participant holds of a sharded value is, per logical
axis, a set of digits kept below a limit. Such a relation's image is the
product of its axes' images, so its count is the product of their sizes.

Sets of coordinates along one axis are Python ints used as bit sets (bit ``x``
set: coordinate ``x`` is in the set): an offset is a shift, an intersection
an ``&``, a size ``int.bit_count``. Every answer equals the isl path's in
``traffic.BoundaryCounter`` (tests/analysis/test_box_counts.py compares the
two on every golden program and zoo layer); a relation outside this shape
(a parameter not bound to a literal, a guard that is not an interval, two
image axes on one dimension, a relinearised holding, a mask past
``MAX_EXTENT`` coordinates) answers None and is counted by isl.
"""
from __future__ import annotations

import ast
import math
import re
from fractions import Fraction
from functools import lru_cache

from tilefoundry.ir.expr import Constant
from tilefoundry.ir.tensor_type import TensorType, TupleType, tensor_leaves

__all__ = ["held_layout", "held_digits", "held_masks", "box_counts", "known_value", "MAX_EXTENT"]

# an axis longer than this is counted by isl: a mask costs memory and time in
# proportion to its length, isl's symbolic count does not
MAX_EXTENT = 1 << 22


# ---------------------------------------------------------------- what one participant holds


def held_layout(type_, level, topologies):
    """(layout positions, local extents, groups) of a value one participant of
    ``level`` holds only part of; None when it holds everything."""
    if level is None or not isinstance(type_, TensorType):
        return None
    shard = type_.shard
    if shard is None or not hasattr(shard.layout, "shape") or hasattr(shard.layout, "attrs"):
        return None
    from tilefoundry.ir.shard import flatten_shape
    from tilefoundry.semantics.canonical import local_type_of, regroup

    domain = tuple(flatten_shape(shard.layout.shape))
    local = tuple(local_type_of(type_, level, topologies).shape)
    if len(local) != len(domain) or local == domain:
        return None
    return domain, local, regroup(tuple(type_.shape), domain)


def held_digits(layout) -> tuple:
    """Per held-back digit of a ``held_layout``: (axis, stride, modulus or None,
    limit) -- the participant holds coordinate ``o`` of ``axis`` when
    ``floor(o / stride)`` (taken ``mod modulus`` unless it is the axis's
    leading digit) is below ``limit``."""
    domain, local, groups = layout
    digits = []
    for axis, positions in enumerate(groups):
        extents = [int(domain[p]) for p in positions]
        for k, p in enumerate(positions):
            if local[p] >= domain[p]:
                continue
            stride = 1
            for e in extents[k + 1:]:
                stride *= e
            digits.append((axis, stride, extents[k] if k else None, int(local[p])))
    return tuple(digits)


def held_masks(type_, level, topologies):
    """Per axis of ``type_``, the mask of coordinates one participant holds (None:
    all of them); None for a relinearised regroup or an axis past MAX_EXTENT."""
    from tilefoundry.semantics.canonical import straddles

    masks = [None] * len(type_.shape) if isinstance(type_, TensorType) else []
    layout = held_layout(type_, level, topologies)
    if layout is None:
        return masks
    if straddles(layout[2]):
        return None  # a digit of the flattened index ties the axes together
    for axis, stride, modulus, limit in held_digits(layout):
        extent = type_.shape[axis]
        if not isinstance(extent, int) or extent > MAX_EXTENT:
            return None
        mask = _digit_mask(extent, stride, modulus, limit)
        masks[axis] = mask if masks[axis] is None else masks[axis] & mask
    return masks


def _digit_mask(n: int, stride: int, modulus, limit: int) -> int:
    """Coordinates ``o < n`` with ``floor(o / stride) [mod modulus] < limit``:
    within each period of ``stride * modulus`` the first ``limit * stride``."""
    if modulus is None:
        return _span(0, min(n, limit * stride))
    period = stride * modulus
    mask, length = _span(0, min(limit * stride, period)), period
    while length < n:  # doubling: a few shifts, not one per period
        mask |= mask << length
        length *= 2
    return mask & _span(0, n)


def _span(lo: int, hi: int) -> int:
    """The mask of ``lo <= x < hi`` (x >= 0)."""
    lo = max(lo, 0)
    return ((1 << hi) - 1) ^ ((1 << lo) - 1) if hi > lo else 0


# ---------------------------------------------------------------- reading one relation


class _Unboxed(Exception):
    """The relation is not of the box shape: isl counts it."""


class _Row:
    """One boundary as masks: the domain per iteration dimension, and per image
    axis its kind -- ("dim", d, offset), ("const", c) or ("free",) -- and its box
    (None: unclipped, a tuple's coordinates past the leaf index)."""

    __slots__ = ("domain", "axes", "boxes")

    def __init__(self, domain, axes, boxes):
        self.domain, self.axes, self.boxes = domain, axes, boxes


def _row(access, type_, bindings) -> _Row:
    extents = [_extent(text) for text in access.domain]
    rank = len(access.axes)
    domain = [_span(0, e) for e in extents]
    if isinstance(type_, TensorType):
        if len(type_.shape) != rank:
            raise _Unboxed
        boxes = [_span(0, _extent(e)) for e in type_.shape]
    elif isinstance(type_, TupleType) and rank:
        boxes = [_span(0, len(tensor_leaves(type_)))] + [None] * (rank - 1)
    else:
        raise _Unboxed
    for text in access.param_guards:
        if _evaluate(text, bindings) is not True:
            raise _Unboxed  # false: the relation reaches nothing, a case isl states
    for text in access.guards:
        for name, lo, hi in _intervals(text, bindings):
            index = int(name[1:])
            if name[0] == "i" and index < len(domain):
                domain[index] &= _span(lo, extents[index] if hi is None else min(hi, extents[index]))
            elif name[0] == "o" and index < rank and boxes[index] is not None:
                length = boxes[index].bit_length()
                boxes[index] &= _span(lo, length if hi is None else min(hi, length))
            else:
                raise _Unboxed
    axes, dims = [], set()
    for axis in access.axes:
        kind = _axis(axis, bindings)
        if kind[0] == "dim":
            if kind[1] in dims or kind[1] >= len(domain):
                raise _Unboxed  # two axes on one dimension: the image is no product
            dims.add(kind[1])
        axes.append(kind)
    return _Row(domain, axes, boxes)


def _extent(value) -> int:
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value > MAX_EXTENT:
        raise _Unboxed
    return value


def _axis(axis, bindings):
    if axis.free:
        return ("free",)
    if axis.expr is not None or axis.coeff != 1 or axis.div != 1:
        raise _Unboxed
    offset = axis.offset
    if isinstance(offset, str):
        offset = _literal(bindings.get(offset))
    if not isinstance(offset, int) or isinstance(offset, bool) or abs(offset) > MAX_EXTENT:
        raise _Unboxed  # a shift that far would build a mask that long
    return ("const", offset) if axis.dim is None else ("dim", axis.dim, offset)


def known_value(value):
    """The int a parameter is bound to when it is a literal (companions §4.4:
    such a parameter takes its value), else None."""
    if isinstance(value, Constant):
        value = value.value
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _literal(value) -> int:
    known = known_value(value)
    if known is None:
        raise _Unboxed  # a run-time value: settled by _settled or by isl
    return known


def _settled(rows, bindings: dict) -> tuple[dict, set]:
    """Every parameter's value (companions §4.4): a literal takes its value;
    a run-time one the smallest its relations allow, here the largest lower
    bound the parameter guards state of it alone, taken in name order as the
    isl path does. Returns (values, the run-time names): each relation that
    names one must reach something at these values (checked by the caller),
    which makes the bound the relations' own minimum."""
    values = {name: known_value(v) for name, v in bindings.items() if known_value(v) is not None}
    pending = sorted(set(bindings) - set(values))
    guards = [node for p, *_ in rows if p is not None for text in p.pattern.param_guards
              for node in _conjuncts(_parsed(text))]
    for name in pending:
        lower = None
        for node in guards:
            for bound in _lower_bounds(node, name, values, pending):
                lower = bound if lower is None else max(lower, bound)
        if lower is None:
            raise _Unboxed  # no finite minimum from the guards alone
        values[name] = lower
    return values, set(pending)


def _lower_bounds(node, name: str, values: dict, pending: list) -> list:
    """The lower bounds one guard comparison states of ``name``: each pair of
    a chain, ``x op y``, is linear in it once the settled names are fixed."""
    if not isinstance(node, ast.Compare):
        raise _Unboxed
    mentioned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    if name not in mentioned:
        return []
    if any(other in mentioned and other not in values for other in pending if other != name):
        raise _Unboxed  # a guard tying two run-time parameters
    bounds = []
    terms = [node.left, *node.comparators]
    for op, x, y in zip(node.ops, terms, terms[1:]):
        at0 = _number(x, {**values, name: 0}) - _number(y, {**values, name: 0})
        slope = _number(x, {**values, name: 1}) - _number(y, {**values, name: 1}) - at0
        if slope == 0:
            continue
        if not isinstance(op, (ast.Eq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
            raise _Unboxed
        # slope * v + at0 (op) 0: v is bounded below by t when it grows towards 0
        t = Fraction(-at0, slope)
        if isinstance(op, ast.Eq):
            if t.denominator != 1:
                raise _Unboxed  # no integer value: the relation reaches nothing
            bounds.append(int(t))
        elif (slope < 0) == isinstance(op, (ast.Lt, ast.LtE)):
            bounds.append(math.floor(t) + 1 if isinstance(op, (ast.Lt, ast.Gt)) else math.ceil(t))
    return bounds


# ---------------------------------------------------------------- guard texts


_EQUALS = re.compile(r"(?<![<>=!])=(?!=)")
_COMPARE = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
            ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b}


@lru_cache(maxsize=4096)
def _parsed(text: str):
    # a call's guard texts are read for settling and again for its rows, and
    # the same texts recur across calls: each is parsed once (never mutated)
    try:
        return ast.parse(_EQUALS.sub("==", text), mode="eval").body
    except SyntaxError:
        raise _Unboxed from None


def _conjuncts(node):
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return [c for value in node.values for c in _conjuncts(value)]
    return [node]


def _number(node, bindings) -> int:
    """An integer expression over literal-bound parameters (isl's + - *)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name) and node.id.startswith("p_"):
        return _literal(bindings.get(node.id))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_number(node.operand, bindings)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        a, b = _number(node.left, bindings), _number(node.right, bindings)
        return a + b if isinstance(node.op, ast.Add) else a - b if isinstance(node.op, ast.Sub) else a * b
    raise _Unboxed


def _evaluate(text: str, bindings) -> bool:
    """A parameter-only constraint's truth for the bound literals."""
    for node in _conjuncts(_parsed(text)):
        if not isinstance(node, ast.Compare):
            raise _Unboxed
        values = [_number(n, bindings) for n in [node.left, *node.comparators]]
        for op, a, b in zip(node.ops, values, values[1:]):
            check = _COMPARE.get(type(op))
            if check is None:
                raise _Unboxed
            if not check(a, b):
                return False
    return True


def _intervals(text: str, bindings) -> list:
    """[(dim name, lo, hi)] of a guard that bounds single dimensions
    (``64 <= i3 < 128``, ``i2 = 0``, ``0 <= o0 < 5``)."""
    found = []
    for node in _conjuncts(_parsed(text)):
        if not isinstance(node, ast.Compare):
            raise _Unboxed
        terms = [node.left, *node.comparators]
        named = [k for k, t in enumerate(terms) if isinstance(t, ast.Name) and re.fullmatch(r"[io]\d+", t.id)]
        if len(named) != 1:
            raise _Unboxed
        at = named[0]
        lo, hi = 0, None  # hi None: no upper bound
        for k, op in enumerate(node.ops):
            if k + 1 == at:  # bound on the left: bound op dim
                bound = _number(terms[k], bindings)
                lo, hi = _tighten(lo, hi, op, bound, left=True)
            elif k == at:  # dim op bound
                bound = _number(terms[k + 1], bindings)
                lo, hi = _tighten(lo, hi, op, bound, left=False)
            else:
                raise _Unboxed  # a comparison of two bounds: not a single-dimension guard
        found.append((terms[at].id, lo, hi))
    return found


def _tighten(lo, hi, op, bound, left):
    if isinstance(op, ast.Eq):
        return max(lo, bound), bound + 1 if hi is None else min(hi, bound + 1)
    if not isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
        raise _Unboxed
    below = isinstance(op, (ast.Lt, ast.LtE)) != left  # the dim is below the bound
    strict = isinstance(op, (ast.Lt, ast.Gt))
    if below:
        top = bound if strict else bound + 1
        return lo, top if hi is None else min(hi, top)
    return max(lo, bound + 1 if strict else bound), hi


# ---------------------------------------------------------------- counting


def _preimage(mask, offset: int, domain: int) -> int:
    """Iterations ``i`` of ``domain`` with ``i + offset`` in ``mask``."""
    return (mask >> offset if offset >= 0 else mask << -offset) & domain


def _image(dims: int, offset: int, box) -> int:
    shifted = dims << offset if offset >= 0 else dims >> -offset
    return shifted & box if box is not None else shifted


def _clip(box, held):
    if held is None:
        return box
    return held if box is None else box & held


def _reaching(row: _Row, held, share) -> list | None:
    """Per iteration dimension, the iterations (within ``share``) whose image
    lands in the box and in ``held``; None when no iteration does."""
    dims = [d & s for d, s in zip(row.domain, share)]
    for k, kind in enumerate(row.axes):
        allowed = _clip(row.boxes[k], held[k] if held else None)
        if kind[0] == "dim":
            if allowed is not None:
                dims[kind[1]] = _preimage(allowed, kind[2], dims[kind[1]])
        elif kind[0] == "const":
            if allowed is not None and not (kind[1] >= 0 and allowed >> kind[1] & 1):
                return None
        elif allowed == 0:
            return None
    return None if any(d == 0 for d in dims) else dims


def _share(rows, helds, space):
    """The participant's iteration share (the isl path's ``_held_share``): the
    iterations whose image lands in held coordinates, for every boundary a
    holding clips. None when a clipped boundary misses iterations of the
    space (the share would be no box)."""
    share = list(space)
    for row, held in zip(rows, helds):
        if row is None or held is None or all(h is None for h in held):
            continue
        if _reaching(row, None, space) != list(space):
            raise _Unboxed
        reached = _reaching(row, held, space)
        if reached is None:
            return [0] * len(space)
        share = [s & r for s, r in zip(share, reached)]
    return share


def _reached(row: _Row, held, share):
    """Per image axis, the coordinates the row reaches within ``share`` and
    ``held``; None when it reaches nothing."""
    dims = _reaching(row, held, share)
    if dims is None:
        return None
    images = []
    for k, kind in enumerate(row.axes):
        allowed = _clip(row.boxes[k], held[k] if held else None)
        if allowed is None:  # a tuple's coordinate past the leaf index: never counted
            images.append(None)
        elif kind[0] == "dim":
            images.append(_image(dims[kind[1]], kind[2], allowed))
        elif kind[0] == "const":
            images.append(1 << kind[1])
        else:
            images.append(allowed)
    return images


def box_counts(rows, level, masks_of):
    """Per boundary row (``BoundaryCounter.boundaries``): None for a row with no
    relation, else the number of image points (a tensor) or the reached leaf
    indices (a tuple) in the whole window (``level`` None) or one participant's
    share. None for the whole call when a relation is not box-shaped.

    ``masks_of(type_, level)`` answers ``held_masks`` for the program's
    topologies (the caller keeps a memo)."""
    bindings: dict = {}
    for pattern, _type, _output, _index in rows:
        if pattern is not None:
            bindings.update(dict(pattern.pattern.parameters))
    try:
        bindings, runtime = _settled(rows, bindings)
        parsed = [None if p is None else _row(p.pattern, t, bindings) for p, t, _o, _i in rows]
        domains = {p.pattern.domain for p, *_ in rows if p is not None}
        if len(domains) > 1:
            raise _Unboxed  # boundaries over different iteration spaces: no one share
        space = [_span(0, _extent(e)) for e in next(iter(domains), ())]
        for row, (pattern, *_rest) in zip(parsed, rows):
            named = row is not None and any(n in runtime for n, _v in pattern.pattern.parameters)
            if named and _reaching(row, None, space) is None:
                raise _Unboxed  # reaching nothing there, it may reach something above the bound
        helds = [None] * len(rows)
        if level is not None:
            helds = [masks_of(t, level) if r is not None else None for r, (_p, t, _o, _i) in zip(parsed, rows)]
            if any(h is None and r is not None and isinstance(t, TensorType)
                   for h, r, (_p, t, _o, _i) in zip(helds, parsed, rows)):
                raise _Unboxed  # a holding no mask states
            helds = [h if h and any(m is not None for m in h) else None for h in helds]
        share = _share(parsed, helds, space) if level is not None else space
    except _Unboxed:
        return None
    out = []
    for row, held, (_p, type_, _o, _i) in zip(parsed, helds, rows):
        if row is None:
            out.append(None)
            continue
        images = _reached(row, held, share)
        if isinstance(type_, TensorType):
            count = 0 if images is None else 1
            for image in images or ():
                count *= image.bit_count()
            out.append(count)
        else:
            first = images[0] if images is not None else 0
            out.append(tuple(k for k in range(first.bit_length()) if first >> k & 1))
    return out

"""Which axes of a loop's values are one axis, and which an op reads across
(placer/loop.py): a union-find over (value name, axis), joined through each op's
axis map, a class closed where an op mixes the elements along it.

The rules are the ops' own index maps: an elementwise op keeps each axis its
operand shares with its result (an axis of extent 1 is broadcast, read whole);
a transpose permutes; a matmul keeps its batch axes, M from the left operand and
N from the right, and reads across K; a reduction, a softmax or a norm reads
across the axes it reduces; a reshape keeps the outermost axis of each group of
axes of equal product (a block of that axis is a block of the group); a slice
and an insert_slice keep the axes they take whole and read across the one they
window at a run-time offset; a concat reads across its axis. Any other op reads
across every axis it touches: it is never split.
"""
from __future__ import annotations

from tilefoundry.placer.op_source import ELEMENTWISE

__all__ = ["Axes", "join_axes"]

#: ops that keep every axis but the last and read across the last
_LAST_AXIS = frozenset({"softmax", "rms_norm", "layer_norm"})
#: an op beyond op_source.ELEMENTWISE that keeps its operand's axes (its shape, a value)
_LIKE = frozenset({"full_like"})


class Axes:
    """Union-find over (value name, axis); a class that some op reads across is closed."""

    def __init__(self):
        self.parent: dict = {}
        self.closed: set = set()
        self.extent: dict = {}  # (value name, axis) -> its extent

    def find(self, key):
        self.parent.setdefault(key, key)
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def join(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb
            if ra in self.closed:
                self.closed.add(rb)

    def close(self, key) -> None:
        self.closed.add(self.find(key))


def _shape(node) -> tuple:
    return tuple(getattr(node.type, "shape", ()))


def join_axes(calls, loop, names) -> Axes:
    """The axis classes of every value the calls and the loop's carried values make or read."""
    axes = Axes()

    def key(node, axis):
        found = (names.of(node), axis)
        axes.extent[found] = _shape(node)[axis]
        axes.find(found)
        return found

    for call in calls:
        _join_call(axes, key, call)
    for var, init, out in zip(loop.carried, loop.inits, loop.yields):
        for axis in range(len(_shape(var))):
            axes.join(key(var, axis), key(init, axis))
            axes.join(key(var, axis), key(out, axis))
    return axes


def _tensors(call) -> list:
    from tilefoundry.ir.expr import Tuple

    return [a for a in call.args if not isinstance(a, Tuple) and _shape(a)]


def _close_all(key, axes, nodes) -> None:
    for node in nodes:
        for axis in range(len(_shape(node))):
            axes.close(key(node, axis))


def _aligned(axes, key, operand, result, op_axes, res_axes) -> None:
    """Right-aligned broadcast: equal extents join, an operand extent of 1 is read whole."""
    op_shape, res_shape = _shape(operand), _shape(result)
    for i in range(1, min(len(op_axes), len(res_axes)) + 1):
        a, r = op_axes[-i], res_axes[-i]
        if op_shape[a] == res_shape[r]:
            axes.join(key(operand, a), key(result, r))
        elif op_shape[a] != 1:
            axes.close(key(operand, a))
            axes.close(key(result, r))


def _join_call(axes, key, call) -> None:
    name = getattr(call.op, "name", None)
    rank = len(_shape(call))
    for axis in range(rank):
        key(call, axis)
    tensors = _tensors(call)
    everything = list(range(rank))
    if name in ELEMENTWISE or name in _LIKE:
        for operand in tensors:
            _aligned(axes, key, operand, call, list(range(len(_shape(operand)))), everything)
    elif name == "transpose":
        for r, a in enumerate(call.op.perm):
            axes.join(key(tensors[0], a), key(call, r))
    elif name == "matmul":
        _matmul(axes, key, call, tensors)
    elif name == "reduce":
        _reduce(axes, key, call, tensors[0])
    elif name in _LAST_AXIS:
        # a softmax or a layer norm reads whole rows from its axis onward (companions'
        # relations: the normalized axis onward is free); an RMSNorm the last axis
        first = call.op.axis % rank if name in ("softmax", "layer_norm") else rank - 1
        _aligned(axes, key, tensors[0], call, everything[:first], everything[:first])
        for across in everything[first:]:
            _close_all_axis(axes, key, [call, tensors[0]], across)
        for operand in tensors[1:]:
            _close_all(key, axes, [operand])
    elif name == "reshape":
        _reshape(axes, key, tensors[0], call)
    elif name in ("slice", "insert_slice"):
        window = tensors[1] if name == "insert_slice" else call
        whole = tensors[0]
        for axis in everything:
            if name == "insert_slice":
                axes.join(key(whole, axis), key(call, axis))
            if _shape(window)[axis] == _shape(whole)[axis]:
                axes.join(key(window, axis), key(whole, axis))
            else:  # a window at a run-time offset: its axis is read across
                axes.close(key(window, axis))
                axes.close(key(whole, axis))
    elif name == "concat":
        cut = call.op.axis % rank
        for operand in tensors:
            _aligned(axes, key, operand, call, [a for a in everything if a != cut], [a for a in everything if a != cut])
        _close_all_axis(axes, key, [call, *tensors], cut)
    elif tensors:
        _close_all(key, axes, [call, *tensors])


def _close_all_axis(axes, key, nodes, axis) -> None:
    for node in nodes:
        axes.close(key(node, axis % len(_shape(node))))


def _matmul(axes, key, call, tensors) -> None:
    a, b = tensors
    ra, rb, rr = len(_shape(a)), len(_shape(b)), len(_shape(call))
    _aligned(axes, key, a, call, list(range(ra - 2)), list(range(rr - 2)))
    _aligned(axes, key, b, call, list(range(rb - 2)), list(range(rr - 2)))
    axes.join(key(a, ra - 2), key(call, rr - 2))
    axes.join(key(b, rb - 1), key(call, rr - 1))
    axes.close(key(a, ra - 1))
    axes.close(key(b, rb - 2))


def _reduce(axes, key, call, operand) -> None:
    rank = len(_shape(operand))
    reduced = {a % rank for a in call.op.axes}
    kept = 0
    for axis in range(rank):
        if axis in reduced:
            axes.close(key(operand, axis))
            if call.op.keepdim:
                axes.close(key(call, kept))
                kept += 1
            continue
        axes.join(key(operand, axis), key(call, kept))
        kept += 1


def _reshape(axes, key, operand, call) -> None:
    """Groups of axes of equal product: the outermost axis of more than one
    element on each side joins; the others stay apart."""
    src, dst = _shape(operand), _shape(call)
    i = j = 0
    while i < len(src) and j < len(dst):
        group_src, group_dst = [i], [j]
        p, q = src[i], dst[j]
        while p != q:
            if p < q:
                i += 1
                group_src.append(i)
                p *= src[i]
            else:
                j += 1
                group_dst.append(j)
                q *= dst[j]
        outer_src = [a for a in group_src if src[a] > 1]
        outer_dst = [a for a in group_dst if dst[a] > 1]
        if outer_src and outer_dst:
            axes.join(key(operand, outer_src[0]), key(call, outer_dst[0]))
        i, j = i + 1, j + 1

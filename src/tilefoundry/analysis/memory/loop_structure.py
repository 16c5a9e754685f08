"""The structure of an authored loop, as far as its footprint record reads it.

A whole model repeats its layers, and with them their loops: the same ops over
buffers of the same types, windows moving with the same induction variables.
Two loops whose keys are equal get the same footprint rows but for the names of
the buffers they reach, so ``loop_footprints`` derives one and relabels it.

The key is exact for what ``_Footprints.record`` reads: every scope from the
loop down (each loop's start, step, trips and kind, its induction variable and
carried values), every call placed there that repeats with the loop, in order
(op, result type, which of the chain's loops it repeats in, and its operands;
a loop-invariant call is read only as such an operand), and of every operand a
value defined outside the loop: its type and which outside value it is -- and,
for the values the record follows further (an integer scalar that
``affine_value`` reads as an affine start, a window or view that ``images``
follows to its buffer), their own definitions, to the depth the record reads.
Which operands are one node is kept by numbering every node on first sight.
"""
from __future__ import annotations

from tilefoundry.ir.expr import Call, Constant, GridRegionExpr, Tuple, Var
from tilefoundry.ir.tensor_type import TensorType
from tilefoundry.semantics.structural_key import literal_key

__all__ = ["loop_structure", "Unkeyed"]

# the definitions a footprint follows out of the loop: integer scalars (an
# affine start) and windows or views (to the buffer their bytes reach)
_FOLLOWED_OPS = ("Slice", "Reshape", "Local", "Reshard", "Arange", "Binary")
_MAX_DEPTH = 64
_VIEWS = ("Slice", "Reshape")  # what images() follows through to a buffer


class Unkeyed(Exception):
    """The loop holds something the key cannot state exactly: derive it afresh."""


def loop_structure(scope, dependence: dict, loops_down) -> tuple[tuple, list]:
    """(key, nodes): the loop's structure and every node it numbered, in
    first-seen order (a record's buffer is named by its position here).

    One relaxation keeps the key exact: an outside buffer with no shard layout
    that the loop reads only through one window at literal starts (a layer's
    slice of a stacked KV cache) is keyed without those starts. Every image of
    it is the window's image moved by the starts, inside the buffer's box, and
    no participant clips an unsharded buffer, so each count is the same."""
    key, nodes, shifted = _structure(scope, dependence, loops_down, frozenset())
    if shifted:
        key, nodes, _ = _structure(scope, dependence, loops_down, shifted)
    return key, nodes


def _structure(scope, dependence, loops_down, shifted: frozenset):
    numbering = _Numbering(shifted)
    parts: list = []
    for inner in scope.walk():
        chain = loops_down(scope, inner)
        if inner.kind == "loop":
            loop = inner.node
            parts.append(("scope", numbering.slot(loop), _int(loop.start), _int(loop.step),
                          _int(loop.trips), loop.kind, numbering.slot(loop.induction_var),
                          tuple(numbering.slot(c) for c in loop.carried),
                          tuple(numbering.ref(i, 0) for i in loop.inits)))
        for call in inner.calls:
            repeating = dependence.get(id(call), frozenset())
            if scope.node not in repeating:
                # loop-invariant: the record reads it only as an operand of the
                # calls that repeat, which key it as they read it
                continue
            slot = numbering.slot(call)
            operands = numbering.operands(call, 0)
            parts.append(("call", slot, call.op, call.type, operands,
                          tuple(loop in repeating for loop in chain)))
    return tuple(parts), numbering.nodes, numbering.translatable()


class _Numbering:
    def __init__(self, shifted: frozenset = frozenset()):
        self.slots: dict = {}  # id(node) -> position
        self.nodes: list = []
        self.shifted = shifted  # ids of buffers keyed without their one window's starts
        self.uses: dict = {}  # position of an outside node -> how often it is read
        self.windowed: dict = {}  # position of an outside buffer -> the windows reading it

    def operands(self, node, depth: int) -> tuple:
        """The refs of a call's operands; a window's literal starts into a
        shifted buffer are keyed as "moved", not by value."""
        args = node.args
        if type(node.op).__name__ == "Slice" and len(args) == 2 and literal_starts(args[1]):
            source = args[0]
            # only a buffer the footprint stops at (a window's source, not
            # another window or view, whose other readers would not move)
            if isinstance(source, Var) or (isinstance(source, Call)
                                           and type(source.op).__name__ not in _VIEWS):
                self.windowed.setdefault(id(source), set()).add(id(node))
            if id(source) in self.shifted:
                return (self.ref(source, depth + 1), ("moved", len(args[1].fields)))
        return tuple(self.ref(a, depth + 1) for a in args)

    def translatable(self) -> frozenset:
        """Outside unsharded buffers read once, by one window at literal starts."""
        found = set()
        for source_id, windows in self.windowed.items():
            slot = self.slots.get(source_id)
            node = self.nodes[slot] if slot is not None else None
            if (len(windows) == 1 and self.uses.get(slot) == 1 and node is not None
                    and isinstance(node.type, TensorType) and node.type.shard is None):
                found.add(source_id)
        return frozenset(found)

    def slot(self, node) -> int:
        found = self.slots.get(id(node))
        if found is None:
            found = self.slots[id(node)] = len(self.nodes)
            self.nodes.append(node)
        return found

    def ref(self, node, depth: int):
        """An operand: a node already numbered by its position; a literal by its
        value; an outside value by its type and position, and by its own
        definition where the footprint follows it out of the loop."""
        if depth > _MAX_DEPTH:
            raise Unkeyed()
        if isinstance(node, Constant):
            return literal_key(node)
        if isinstance(node, Tuple):
            return ("tuple", tuple(self.ref(f, depth + 1) for f in node.fields))
        known = self.slots.get(id(node))
        if known is not None:
            self.uses[known] = self.uses.get(known, 0) + 1
            return ("node", known)
        slot = self.slot(node)
        self.uses[slot] = 1
        if isinstance(node, Call) and type(node.op).__name__ in _FOLLOWED_OPS and _followed(node):
            return ("defined", slot, node.op, node.type, self.operands(node, depth))
        if isinstance(node, (Var, Call, GridRegionExpr)):
            return ("outside", slot, type(node).__name__, node.type)
        raise Unkeyed()


def literal_starts(starts) -> bool:
    """Whether a window's starts operand is a tuple of int literals."""
    return isinstance(starts, Tuple) and all(
        isinstance(f, Constant) and isinstance(f.value, int) and not isinstance(f.value, bool)
        for f in starts.fields)


def _followed(call) -> bool:
    """Whether the record may read this outside value's definition."""
    name = type(call.op).__name__
    if name in ("Slice", "Reshape"):
        return True
    return isinstance(call.type, TensorType) and call.type.dtype.is_int


def _int(value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise Unkeyed()
    return value

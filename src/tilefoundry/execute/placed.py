"""The placed run: every participant executes its own box of every value.

A value whose type places it on a Mesh (a Split or a Partial on some mesh
axis) is a ``PerParticipant``: each participant holds its box in the
per-logical-axis form (``boxes``), a Partial participant its contribution.
Every other value (unplaced, fully Broadcast) is held whole by everyone and is
computed once. An op runs per participant on the boxes it holds, with its
types made local, so shard propagation's claim that a result's box follows
from the operands' boxes is executed, not assumed. An op whose evaluator reads
global coordinates (registered ``on_boxes=False``: slices, indices, offsets)
runs once on the assembled operands and hands each participant its box.

Only an explicit Reshard moves values between participants: it assembles its
operand from the holders (folding Partial contributions, requiring replicas
to agree), reports the assembled value to ``on_assembled``, and deals the
result out under the new layout. A value whose layout has no per-axis box (a
relinearised layout) is held whole and counted in ``whole_values``.
"""
from __future__ import annotations

from tilefoundry.errors import EvaluationError
from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.semantics.op_numerics import np, numpy_dtype, to_dtype
from tilefoundry.semantics.op_registry import GLOBAL_COORDINATE_OPS
from tilefoundry.execute import holdings
from tilefoundry.execute.logical import (
    LogicalDomain, PerParticipant, check_shape, context_of, elements_of, evaluator_of, first_per,
    has_per, piece_at, round_to_type,
)

__all__ = ["PlacedDomain"]

_IDENTITY = {"sum": 0, "max": -np.inf, "min": np.inf}


def _placed_shard(type_):
    """The ShardLayout a placed run deals out, or None (held whole)."""
    if not isinstance(type_, TensorType):
        return None
    shard = type_.shard
    if shard is None or not holdings.is_placeable(shard):
        return None
    if holdings.replicated(shard):
        return None
    return shard


class PlacedDomain:
    """Values of the placed run (see the module docstring).

    ``on_assembled(call, value, disagreement)`` is told each Reshard's assembled
    operand; ``mutation`` (tests only) breaks one rule on purpose: "partial"
    treats a Partial as complete, "neighbour" deals participant p the box of
    participant p+1."""

    def __init__(self, on_assembled=None, mutation: str | None = None):
        self.on_assembled = on_assembled
        self.mutation = mutation
        self.whole_values = 0
        self.gathered = 0
        self._logical = LogicalDomain()

    def elements(self, value) -> int:
        return elements_of(value)

    def tuple(self, values: tuple):
        return values

    def constant(self, node):
        return self._logical.constant(node)

    def index(self, var, value: int):
        return self._logical.index(var, value)

    # ---------------------------------------------------------------- values in and out
    def local_type(self, type_):
        shard = _placed_shard(type_)
        if shard is None:
            return type_
        shape = holdings.logical_local_shape(type_, shard)
        return type_ if shape is None else type_.with_(shape=shape)

    def deal(self, value, type_):
        """A whole value dealt out under ``type_``'s placement."""
        if isinstance(type_, TupleType):
            return tuple(self.deal(v, t) for v, t in zip(value, type_.fields))
        shard = _placed_shard(type_)
        if shard is None or isinstance(value, PerParticipant):
            return value
        local_shape = holdings.logical_local_shape(type_, shard)
        if local_shape is None:
            self.whole_values += 1
            return value
        positions = holdings.positions_of(shard.mesh)
        coords = list(positions.values())
        partial = holdings.partial_axes(shard)
        pieces = {}
        for i, (position, coord) in enumerate(positions.items()):
            source = coords[(i + 1) % len(coords)] if self.mutation == "neighbour" else coord
            piece = holdings.take_box(value, type_, shard, source, local_shape)
            if partial and any(coord[m] for m in partial):
                piece = np.full(local_shape, _identity(shard, type_), dtype=piece.dtype)
            pieces[position] = piece
        return PerParticipant(pieces, shard.mesh, boxed=True)

    def assemble(self, value, type_):
        """(whole value, disagreement) of a value held under ``type_``."""
        if isinstance(type_, TupleType):
            parts = [self.assemble(v, t) for v, t in zip(value, type_.fields)]
            return tuple(p[0] for p in parts), next((p[1] for p in parts if p[1]), None)
        if not isinstance(value, PerParticipant):
            return value, None
        if not value.boxed:
            return self._replicas(value)
        shard = type_.shard
        positions = holdings.positions_of(shard.mesh)
        missing = [p for p in positions if p not in value.pieces]
        if missing:
            raise EvaluationError(f"participant {missing[0]} holds no box of a value placed on its mesh")
        if self.mutation == "partial":
            shard = _without_partial(shard)
            positions = {p: c for p, c in positions.items()
                         if all(c[m] == 0 for m in holdings.partial_axes(type_.shard))}
        whole, disagreement = holdings.assemble(value.pieces, type_, shard, positions,
                                             numpy_dtype(type_.dtype))
        return to_dtype(whole, type_.dtype), disagreement

    def _replicas(self, value):
        """A value every participant holds whole: they must agree."""
        items = list(value.pieces.items())
        first_position, first = items[0]
        for position, piece in items[1:]:
            differs = holdings._first_difference(first, piece)
            if differs is not None:
                return first, (first_position, position, differs)
        return first, None

    def output(self, value, type_):
        return self.assemble(value, type_)[0]

    # ---------------------------------------------------------------- ops
    def apply(self, call, args: tuple):
        name = call.op.name
        if name == "tuple_get_item":
            return args[0][call.op.index]
        if name == "reshard":
            source = args[0]
            if isinstance(source, PerParticipant) and not source.boxed:
                # each participant's own value (it read its coordinate): nothing moves
                # between participants; each keeps its box of what it holds
                if self.on_assembled is not None:
                    self.on_assembled(call, source, None)
                shard = _placed_shard(call.type)
                return source if shard is None else self._deal_each(source.pieces, call.type, shard)
            whole, disagreement = self.assemble(source, call.args[0].type)
            if self.on_assembled is not None:
                self.on_assembled(call, whole, disagreement)
            return self.deal(whole, call.type)
        if name == "local":
            return self._local(call, args[0])
        if not has_per(args):
            return self.deal(self._once(call, args), call.type)
        if type(call.op) in GLOBAL_COORDINATE_OPS or not self._boxable(call, args):
            return self._gathered(call, args)
        arg_types = tuple(self.local_type(node.type) if _is_box(v) else node.type
                          for node, v in zip(call.args, args))
        pieces = self._per_participant(call, args, arg_types, self.local_type(call.type))
        return self._split_fields(call, pieces, boxed=_placed_shard(call.type) is not None)

    def _once(self, call, args):
        return self._logical.evaluate(call, args, tuple(a.type for a in call.args), call.type)

    def _boxable(self, call, args) -> bool:
        """The result is dealt out in boxes and every operand that is not a box
        is held whole by its placement, or is rank 0: then each participant's
        box follows from what it holds."""
        if self.local_type(call.type) is call.type:
            return False
        if _completes_across(call, args):
            return False
        return all(_is_box(a) or _held_whole(node.type) or
                   (not isinstance(a, tuple) and np.ndim(_any_piece(a)) == 0)
                   for a, node in zip(args, call.args))

    def _gathered(self, call, args):
        """Boxed operands assembled, then the op per participant on whole
        values (once, when no operand differs by participant)."""
        self.gathered += 1
        whole = tuple(self.assemble(a, node.type)[0] if _is_box(a) else a
                      for a, node in zip(args, call.args))
        if not has_per(whole):
            return self.deal(self._once(call, whole), call.type)
        types = tuple(a.type for a in call.args)
        pieces = self._per_participant(call, whole, types, call.type)
        shard = _placed_shard(call.type)
        if shard is None:
            return self._split_fields(call, pieces, boxed=False)
        return self._deal_each(pieces, call.type, shard)

    def _deal_each(self, pieces: dict, type_, shard):
        """Each participant keeps its own box of the whole value it computed."""
        local_shape = holdings.logical_local_shape(type_, shard)
        if local_shape is None:
            self.whole_values += 1
            return PerParticipant(pieces, shard.mesh, boxed=False)
        positions = holdings.positions_of(shard.mesh)
        return PerParticipant({p: holdings.take_box(v, type_, shard, positions[p], local_shape)
                               for p, v in pieces.items()}, shard.mesh, boxed=True)

    def _per_participant(self, call, args, arg_types, result_type) -> dict:
        first = first_per(args)
        evaluator = evaluator_of(call)
        ctx = context_of(call, arg_types, result_type)
        pieces = {}
        for position in first.pieces:
            local = piece_at(args, position)
            value = round_to_type(evaluator(call.op, local, ctx), result_type)
            check_shape(value, result_type, call)
            pieces[position] = value
        return pieces

    def _split_fields(self, call, pieces: dict, boxed: bool):
        shard = _placed_shard(call.type)
        mesh = shard.mesh if shard is not None else None
        if isinstance(call.type, TupleType):
            return tuple(PerParticipant({p: v[i] for p, v in pieces.items()},
                                        getattr(_placed_shard(f), "mesh", None),
                                        _placed_shard(f) is not None)
                         for i, f in enumerate(call.type.fields))
        return PerParticipant(pieces, mesh, boxed)

    def _local(self, call, value):
        if _is_box(value):
            shape = tuple(call.type.shape)
            return PerParticipant({p: np.ascontiguousarray(v).reshape(shape)
                                   for p, v in value.pieces.items()}, value.mesh)
        return self._logical.apply(call, (value,))


def _completes_across(call, args) -> bool:
    """The result is replicated over a mesh axis that splits a boxed operand:
    the op combines across that axis itself (a complete reduction effect,
    semantic-analysis §3.2), so no participant's box follows from its own."""
    from tilefoundry.ir.shard import Broadcast, Split

    result = _placed_shard(call.type)
    for value, node in zip(args, call.args):
        shard = _placed_shard(node.type) if _is_box(value) else None
        if shard is None:
            continue
        for m, attr in enumerate(shard.attrs):
            if isinstance(attr, Split) and (result is None or result.mesh != shard.mesh
                                            or isinstance(result.attrs[m], Broadcast)):
                return True
    return False


def _held_whole(type_) -> bool:
    """A value placed fully Broadcast: every participant's box is all of it."""
    shard = type_.shard if isinstance(type_, TensorType) else None
    return shard is not None and holdings.replicated(shard)


def _is_box(value) -> bool:
    return isinstance(value, PerParticipant) and value.boxed


def _any_piece(value):
    return next(iter(value.pieces.values())) if isinstance(value, PerParticipant) else value


def _identity(shard, type_):
    reduction = next(iter(holdings.partial_axes(shard).values()))
    dtype = numpy_dtype(type_.dtype)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return {"sum": 0, "max": info.min, "min": info.max}[reduction]
    return _IDENTITY[reduction]


def _without_partial(shard):
    from tilefoundry.ir.shard import Broadcast, Partial, ShardLayout

    attrs = tuple(Broadcast() if isinstance(a, Partial) else a for a in shard.attrs)
    return ShardLayout(shard.layout, attrs, shard.mesh)

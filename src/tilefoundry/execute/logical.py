"""The logical run: every value is the whole tensor the program means.

A value is a numpy array (a tuple for a tuple type) every participant would
agree on. Only ``local(x)`` — what one participant holds, which is how a
program reads its mesh coordinate — makes a value differ by participant: it
is then a ``PerParticipant``, and every op it reaches runs once per
participant on whole-tensor operands, until a reshard or the return assembles
it by ownership (each element from the participant that holds it under the
value's own layout). So a program that reads coordinates still has one
logical value per statement, and it is computed without any placed rule
except ownership itself.
"""
from __future__ import annotations

from tilefoundry.errors import EvaluationError
from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.semantics.op_numerics import EvalContext, np, numpy_dtype, to_dtype
from tilefoundry.semantics.op_registry import EVALUATORS
from tilefoundry.execute import holdings
from tilefoundry.execute.interpreter import binding_of, location_of

__all__ = ["PerParticipant", "LogicalDomain", "round_to_type", "elements_of", "evaluator_of",
           "output_leaves"]


def output_leaves(type_, value=None, name: str = "output") -> list:
    """(name, value, type) of every tensor a result holds: ``output`` for one
    result, ``output[i]`` for each field of a tuple, ``output[i][j]`` inside a
    nested one (``value`` None: the names and types alone)."""
    if isinstance(type_, TupleType):
        found = []
        for i, field in enumerate(type_.fields):
            part = None if value is None else value[i]
            found.extend(output_leaves(field, part, f"{name}[{i}]"))
        return found
    return [(name, value, type_)]


class PerParticipant:
    """One value per participant: flat mesh position -> array. ``boxed``: each
    piece is the participant's box of a placed value (the placed run); else
    each is a whole value that differs by participant (it was computed from a
    mesh coordinate)."""

    __slots__ = ("pieces", "mesh", "boxed")

    def __init__(self, pieces: dict, mesh, boxed: bool = False):
        self.pieces = pieces
        self.mesh = mesh
        self.boxed = boxed


def has_per(value) -> bool:
    """Whether ``value`` (or a field of a tuple) differs by participant."""
    if isinstance(value, PerParticipant):
        return True
    return isinstance(value, tuple) and any(has_per(v) for v in value)


def first_per(values):
    for value in values:
        if isinstance(value, PerParticipant):
            return value
        if isinstance(value, tuple):
            found = first_per(value)
            if found is not None:
                return found
    return None


def piece_at(value, position):
    """One participant's part of ``value`` (whole values are everyone's)."""
    if isinstance(value, PerParticipant):
        if position not in value.pieces:
            raise EvaluationError(f"participant {position} holds no value of an operand placed on "
                                  "another mesh")
        return value.pieces[position]
    if isinstance(value, tuple):
        return tuple(piece_at(v, position) for v in value)
    return value


def elements_of(value) -> int:
    if isinstance(value, PerParticipant):
        return sum(elements_of(v) for v in value.pieces.values())
    if isinstance(value, tuple):
        return sum(elements_of(v) for v in value)
    return int(np.size(value))


def round_to_type(value, type_):
    """Each tensor leaf rounded to its declared dtype (once, after the op)."""
    if isinstance(type_, TupleType):
        if not isinstance(value, tuple) or len(value) != len(type_.fields):
            raise EvaluationError("internal: an evaluator's tuple does not match its result type")
        return tuple(round_to_type(v, t) for v, t in zip(value, type_.fields))
    if isinstance(type_, TensorType):
        return to_dtype(value, type_.dtype)
    return value


def evaluator_of(call):
    found = EVALUATORS.get(type(call.op))
    if found is None:
        raise EvaluationError(f"{location_of(call) or call.op.name}: {call.op.class_name} has no "
                              "registered evaluator, so the program cannot be executed; register one "
                              "with @register_evaluator")
    return found


def context_of(call, arg_types, result_type) -> EvalContext:
    return EvalContext(call.op, arg_types, result_type, location=location_of(call),
                       binding=binding_of(call))


def check_shape(value, type_, call) -> None:
    """An evaluator's result has the shape its type states (else the evaluator
    and the typeinfer disagree: a bug worth a clear line, not a later crash)."""
    if isinstance(type_, TensorType) and tuple(np.shape(value)) != tuple(type_.shape):
        raise EvaluationError(
            f"{location_of(call) or call.op.name}: {call.op.name} produced shape "
            f"{tuple(np.shape(value))} where its type states {tuple(type_.shape)}")
    if isinstance(type_, TupleType) and isinstance(value, tuple):
        for v, t in zip(value, type_.fields):
            check_shape(v, t, call)


def _placed_on(type_, mesh) -> bool:
    shard = type_.shard if isinstance(type_, TensorType) else None
    return shard is not None and shard.mesh == mesh


class LogicalDomain:
    """Values of the logical run (see the module docstring)."""

    def elements(self, value) -> int:
        return elements_of(value)

    def tuple(self, values: tuple):
        return values

    def constant(self, node):
        return np.asarray(node.value, dtype=numpy_dtype(node.type.dtype))

    def index(self, var, value: int):
        return np.asarray(value, dtype=numpy_dtype(var.type.dtype))

    def apply(self, call, args: tuple):
        name = call.op.name
        if name == "tuple_get_item":
            return args[0][call.op.index]
        if name == "local":
            return self._local(call, args[0])
        if name == "reshard":
            return self._reshard(args[0], call.args[0].type)
        types = tuple(a.type for a in call.args)
        first = first_per(args)
        if first is None:
            return self.evaluate(call, args, types, call.type)
        pieces = {position: self.evaluate(call, piece_at(args, position), types, call.type)
                  for position in first.pieces}
        if isinstance(call.type, TupleType):
            return tuple(PerParticipant({p: v[i] for p, v in pieces.items()}, first.mesh)
                         for i in range(len(call.type.fields)))
        return PerParticipant(pieces, first.mesh)

    def evaluate(self, call, args, arg_types, result_type):
        ctx = context_of(call, arg_types, result_type)
        value = round_to_type(evaluator_of(call)(call.op, args, ctx), result_type)
        check_shape(value, result_type, call)
        return value

    def _local(self, call, value):
        type_ = call.args[0].type
        shard = type_.shard
        value = self.whole(value, type_)
        holdings.check_static_attrs(shard, location_of(call) or "local")
        local_shape = tuple(call.type.shape)
        pieces = {position: holdings.take_box(value, type_, shard, coord, local_shape)
                  for position, coord in holdings.positions_of(shard.mesh).items()}
        return PerParticipant(pieces, shard.mesh)

    def _reshard(self, value, source_type):
        """A reshard assembles a per-participant value its operand's layout
        places (ownership says whose each element is); an unplaced one stays
        per participant (each holds its own, as the program says)."""
        if isinstance(value, PerParticipant) and not _placed_on(source_type, value.mesh):
            return value
        return self.whole(value, source_type)

    def whole(self, value, type_):
        """A per-participant value assembled by ownership under ``type_``'s
        layout: each element from a participant that holds it. An unplaced
        per-participant value is whole only if every participant agrees."""
        if not isinstance(value, PerParticipant):
            return value
        shard = type_.shard if isinstance(type_, TensorType) else None
        if not _placed_on(type_, value.mesh):
            pieces = list(value.pieces.values())
            if all(np.array_equal(pieces[0], p) for p in pieces[1:]):
                return pieces[0]
            raise EvaluationError(
                "a value computed from a mesh coordinate differs by participant and leaves the "
                "mesh without a placement saying which participant's value it is; give it a "
                "ShardLayout on that mesh (a Split over the axis it depends on)")
        positions = holdings.positions_of(shard.mesh)
        dtype = numpy_dtype(type_.dtype)
        whole = np.zeros(tuple(type_.shape), dtype=dtype).reshape(holdings.domain_shape(shard))
        for position, coord in positions.items():
            region = holdings.box_of(shard, coord)
            piece = np.asarray(value.pieces[position]).reshape(holdings.domain_shape(shard))
            whole[region] = piece[region]
        return whole.reshape(tuple(type_.shape))

    def output(self, value, type_):
        if isinstance(type_, TupleType):
            return tuple(self.output(v, t) for v, t in zip(value, type_.fields))
        return self.whole(value, type_)

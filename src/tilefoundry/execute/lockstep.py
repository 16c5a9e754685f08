"""``check --placed``: the logical and the placed run in one walk.

Every node is evaluated twice, logically and as placed; at each Reshard the
placed run's assembled operand is held against the logical value there, and
at the return each output likewise. The first difference stops the walk: it
names the statement, the participant holding the element, the element and
both values.
"""
from __future__ import annotations

from dataclasses import dataclass

from tilefoundry.execute import holdings
from tilefoundry.execute.compare import NO_PATH, compare, placed_bound
from tilefoundry.execute.interpreter import binding_of, location_of
from tilefoundry.execute.logical import LogicalDomain, PerParticipant, elements_of, piece_at
from tilefoundry.execute.placed import PlacedDomain

__all__ = ["PlacedMismatch", "Lockstep", "Stop"]


@dataclass(frozen=True)
class PlacedMismatch:
    """The first statement whose placed value differs from the logical one."""

    location: str | None
    statement: str  # the value's name (binding) and op
    participant: int | None
    element: tuple | None
    logical: float | None
    placed: float | None
    detail: str

    def line(self) -> str:
        where = f"{self.location}: " if self.location else ""
        who = f" at participant {self.participant}" if self.participant is not None else ""
        at = f" element {self.element}" if self.element is not None else ""
        return (f"{where}{self.statement}: the placed value differs from the logical one{who}{at}: "
                f"logical {self.logical!r}, placed {self.placed!r} ({self.detail})")


class Stop(Exception):
    """The lockstep walk found its first mismatch (``Lockstep.mismatch``)."""


class Lockstep:
    """A Domain whose values are (logical, placed) pairs."""

    def __init__(self, depths: dict, mutation: str | None = None):
        self.logical = LogicalDomain()
        self.placed = PlacedDomain(on_assembled=self._assembled, mutation=mutation)
        self.depths = depths
        self.mismatch: PlacedMismatch | None = None
        self.compared = 0
        self._expected = None

    def elements(self, value) -> int:
        return elements_of(value[0]) + elements_of(value[1])

    def tuple(self, values: tuple):
        return tuple(v[0] for v in values), tuple(v[1] for v in values)

    def constant(self, node):
        value = self.logical.constant(node)
        return value, value

    def index(self, var, value: int):
        index = self.logical.index(var, value)
        return index, index

    def apply(self, call, args: tuple):
        logical = self.logical.apply(call, tuple(a[0] for a in args))
        self._expected = logical
        placed = self.placed.apply(call, tuple(a[1] for a in args))
        return logical, placed

    def _assembled(self, call, whole, disagreement) -> None:
        source = call.args[0]
        self.hold(call, source.type, self._expected, whole, disagreement, source)

    def hold(self, call, type_, logical, placed, disagreement, source) -> None:
        """Compare one assembled value with its logical value; stop at the first difference."""
        self.compared += 1
        name = f"'{binding_of(source) or binding_of(call) or call.op.name}' ({call.op.name})"
        if disagreement is not None:
            first, other, element = disagreement
            self.mismatch = PlacedMismatch(location_of(call), name, other, (element,), None, None,
                                           f"participants {first} and {other} hold different "
                                           f"values of one replicated box (flat element {element})")
            raise Stop
        if isinstance(placed, PerParticipant) or isinstance(logical, PerParticipant):
            for position in _positions(logical, placed):
                self._hold_one(call, type_, name, piece_at(logical, position),
                               piece_at(placed, position), source, position)
            return
        self._hold_one(call, type_, name, logical, placed, source, None)

    def _hold_one(self, call, type_, name, logical, placed, source, participant) -> None:
        if identical(logical, placed):
            return  # bit for bit the same (an input resharded, a box-exact op): nothing to bound
        bound = placed_bound(type_.dtype, self.depths.get(id(source), NO_PATH), logical, margin=2)
        verdict = compare(name, logical, placed, bound)
        if verdict.passed:
            return
        holder = participant if participant is not None else _holder(type_, verdict.worst_index)
        self.mismatch = PlacedMismatch(location_of(call) or location_of(source), name, holder,
                                       verdict.worst_index, verdict.program_value,
                                       verdict.reference_value, verdict.reason or bound.derivation)
        raise Stop

    def output(self, call_like, value, type_):
        logical = self.logical.output(value[0], type_)
        placed, disagreement = self.placed.assemble(value[1], type_)
        return logical, placed, disagreement


def identical(a, b) -> bool:
    """The same bits: one array, or equal shape, dtype and bytes (NaNs included)."""
    if a is b:
        return True
    from tilefoundry.semantics.op_numerics import np

    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype or a.dtype.itemsize not in (1, 2, 4, 8):
        return False
    unsigned = np.dtype(f"u{a.dtype.itemsize}")
    return bool(np.array_equal(np.ascontiguousarray(a).view(unsigned), np.ascontiguousarray(b).view(unsigned)))


def _positions(*values):
    for value in values:
        if isinstance(value, PerParticipant):
            return list(value.pieces)
    return []


def _holder(type_, index):
    """The first participant whose box holds logical element ``index``."""
    shard = getattr(type_, "shard", None)
    if shard is None or index is None:
        return None
    from tilefoundry.semantics.op_numerics import np

    flat = int(np.ravel_multi_index(index, tuple(type_.shape))) if index else 0
    gindex = np.unravel_index(flat, holdings.domain_shape(shard))
    for position, coord in holdings.positions_of(shard.mesh).items():
        region = holdings.box_of(shard, coord)
        if all(s.start <= int(i) < s.stop for s, i in zip(region, gindex)):
            return position
    return None

"""The packing problem in plain numbers: buffers live over half-open time
intervals, each needing ``size`` contiguous bytes; a packing gives each an
offset so that no two buffers live at once share a byte and every buffer lies
below the capacity."""
from __future__ import annotations

import numbers
from dataclasses import dataclass

from tilefoundry.arguments import checked, sequence_of, when

__all__ = ["Buffer", "PackingResult", "checked_buffers", "checked_offsets", "peak_live", "packed_height",
           "FOUND", "EXHAUSTED", "ABORTED", "DEADLINE"]

# How a search step ends: a packing found, the space exhausted (none exists),
# a branch abandoned, or the time given used up.
FOUND, EXHAUSTED, ABORTED, DEADLINE = "found", "exhausted", "aborted", "deadline"


@dataclass(frozen=True)
class Buffer:
    """One buffer: live over [start, end) positions, ``size`` bytes."""

    start: int
    end: int
    size: int


@dataclass(frozen=True)
class PackingResult:
    """``status``: optimal | feasible | infeasible | invalid | timeout;
    ``searched``: whether the packer ran past the two shortcuts of analysis
    §1.2.2 (fit-at-once, live-bytes): first fit, a search or CP-SAT;
    ``offsets`` (one per buffer, in input order) when a packing exists;
    ``method``: what settled it (``fit-at-once``, ``live-bytes``, ``greedy``,
    ``search``, ``cp-sat``, ``input``); ``nodes``: search nodes visited."""

    status: str
    searched: bool
    offsets: tuple = ()
    method: str = ""
    nodes: int = 0


def whole(value) -> bool:
    """An integer of any integral type (numpy's too), but not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _buffer(value) -> bool:
    return isinstance(value, Buffer) and all(whole(v) for v in (value.start, value.end, value.size))


_BUFFERS = sequence_of("buffers", when("a Buffer(start, end, size) of whole numbers", _buffer),
                       "a list of Buffer(start, end, size)")
_OFFSETS = sequence_of("offsets", when("a whole number", whole), "a list of whole numbers, one per buffer")


def checked_buffers(buffers, who: str) -> list:
    """``buffers`` as a list, each a Buffer of whole numbers (the public boundary's check)."""
    return checked(who, "buffers", buffers, _BUFFERS)


def checked_offsets(offsets, who: str) -> list:
    return checked(who, "offsets", offsets, _OFFSETS)


def peak_live(buffers) -> int:
    """The largest sum of sizes live at one time: no packing can be lower."""
    buffers = checked_buffers(buffers, "tilefoundry.packing.peak_live")
    events: dict = {}
    for b in buffers:
        events[b.start] = events.get(b.start, 0) + b.size
        events[b.end] = events.get(b.end, 0) - b.size
    live = peak = 0
    for at in sorted(events):
        live += events[at]
        peak = max(peak, live)
    return peak


def packed_height(buffers, offsets) -> int:
    """The address one past the highest byte a packing uses (0 when empty)."""
    who = "tilefoundry.packing.packed_height"
    buffers, offsets = checked_buffers(buffers, who), checked_offsets(offsets, who)
    return max((o + b.size for b, o in zip(buffers, offsets)), default=0)

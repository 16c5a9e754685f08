"""A long loop's answer checked at fewer trips (placer/loop.py): the reduced
binding, and why checking there is sound."""
from __future__ import annotations

from tilefoundry.errors import TileFoundryError
from tilefoundry.placer.kernel import read_kernel
from tilefoundry.placer.loop import loop_text

__all__ = ["CHECKED_TRIPS", "reduced_binding"]


#: the trips a long loop's answer is checked at (see ``reduced_binding``)
CHECKED_TRIPS = 4


def reduced_binding(logical, kernel, choice, level: str, dims) -> tuple | None:
    """(placed text, binding, words) of an answer checked at ``CHECKED_TRIPS``
    trips, or None (checked as searched).

    A loop of more trips whose extent is one ``--dim`` binding (a prompt's
    length) is checked at that dimension bound to ``CHECKED_TRIPS``: the check
    runs both programs in numpy trip by trip, and Mamba-2's 4096-token scan takes
    minutes. Why that is sound: the placement splits only axes no op reads
    across, and the walked axis is not one of them (a slice at the induction
    variable reads across it), so the program at the smaller binding is the same
    text but for the trip count and the walked extents; the split classes must
    come out the same, each split dividing them, or the check runs as searched.
    Four trips exercise the carried state's hand-over between trips, the first
    and the last trip; what a reduced check cannot see is a fault that needs a
    particular trip count."""

    if not dims or kernel.loop.trips <= CHECKED_TRIPS:
        return None
    walked = [name for name, value in dims.items() if value == kernel.loop.trips]
    if len(walked) != 1:
        return None
    small = {**dims, walked[0]: CHECKED_TRIPS}
    try:
        reduced = read_kernel(*logical, small)
    except TileFoundryError:
        return None
    shape = reduced.loop
    if reduced.kind != "loop" or shape.labels != kernel.loop.labels or shape.trips != CHECKED_TRIPS:
        return None
    if any(extent % size for c, size in choice.splits for extent in shape.classes[c]):
        return None
    return loop_text(reduced, choice, level), small, f"{walked[0]}: {dims[walked[0]]}->{CHECKED_TRIPS} trips"

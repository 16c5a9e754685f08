"""The memory family's records (analysis §1.2.2).

``TrafficMetadata`` on every measured Call and the Function,
``MemoryMetadata`` on the Function, ``LoopFootprintMetadata`` on every
authored loop. ``LevelFootprint``, ``ValueLifetime``, ``BufferFootprint`` and
``AllocationMetadata`` are values nested in them, never attached alone. How
they read in text and JSON is rendering's business (``render/forms/memory_forms.py``).
"""
from __future__ import annotations


from tilefoundry.ir.frozen import frozen_dataclass, frozen_record
from tilefoundry.ir.metadata import IRMetadata
from tilefoundry.semantics.cost import TrafficBytes

__all__ = [
    "TrafficBytes",
    "TrafficMetadata",
    "LevelFootprint",
    "BufferFootprint",
    "LoopFootprintMetadata",
    "ValueLifetime",
    "AllocationMetadata",
    "MemoryMetadata",
]


@frozen_dataclass
class TrafficMetadata(IRMetadata):
    """What one Call moves, or what one Function moves over all its trips.

    Attributes:
        whole: TrafficBytes per storage level name.
        per_unit: TrafficBytes per storage level name for one unit of the analysed level.
        operands: TrafficBytes per operand, positional against (*call.args, call);
            present only for a direct primitive call.
    """

    whole: tuple[tuple[str, TrafficBytes], ...] = ()
    per_unit: tuple[tuple[str, TrafficBytes], ...] = ()
    operands: tuple[TrafficBytes, ...] = ()

    family = "traffic"


@frozen_record
class LevelFootprint:
    """How much of one memory level a function needs at its peak."""

    level: str
    peak_bytes: int
    persistent_bytes: int
    capacity_bytes: int | None = None


# a real frozen dataclass (its __init__ sets fields in C, not through the
# record's __setattr__): thousands are built per whole-model run
@frozen_dataclass
class BufferFootprint:
    """Bytes one authored loop touches in one buffer at one storage level."""

    buffer: str
    level: str
    bytes: int
    device_bytes: int
    repeated_bytes: int


@frozen_dataclass
class LoopFootprintMetadata(IRMetadata):
    """Known buffer accesses or a lower bound within one authored GridRegionExpr.

    Attributes:
        footprints: one row per source buffer and storage level.
        known: whether every access had a representable relation.
    """

    footprints: tuple[BufferFootprint, ...]
    known: bool

    family = "loop-footprint"


@frozen_dataclass  # as BufferFootprint: one per value and level
class ValueLifetime:
    """One value's residency, as positions in the function's value order."""

    binding: str
    level: str
    bytes: int
    defined_at: int
    last_used_at: int
    persistent: bool = False


@frozen_record
class AllocationMetadata:
    """What showing this function's buffers fit came to: "optimal" or "feasible"."""

    solver_status: str


@frozen_dataclass
class MemoryMetadata(IRMetadata):
    """One function's memory behaviour against one target's hierarchy.

    Attributes:
        footprint: one row per level the function places values in.
        lifetimes: one entry per value residency.
        advisories: capacity findings that do not invalidate the program.
        allocation: what showing the addressable buffers fit came to.
    """

    footprint: tuple[LevelFootprint, ...] = ()
    lifetimes: tuple[ValueLifetime, ...] = ()
    advisories: tuple[str, ...] = ()
    allocation: AllocationMetadata | None = None

    family = "memory"

"""Facts aggregates: the only shape in which analysis reads target hardware.

Each aggregate is a frozen dataclass holding exact integers and names (never a
float). Dtypes are spelled by their ``name`` string (``"f32"``, ``"bf16"``,
``"fp8e4m3"``, ``"f4e2m1"``, ...) so that this module imports nothing from the
IR; every lookup method also accepts a descriptor that carries a ``name``
attribute, so ``peak_for(F32)`` and ``peak_for("f32")`` answer alike.

The field names, types and methods are those of spec analysis.md §1.2.2–§1.2.4
and companions.md §6.1. A lookup of something the target does not state
returns ``None``: analysis MUST NOT substitute an assumed rate.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tilefoundry.ir.frozen import frozen_dataclass

__all__ = [
    "ExplicitMemoryLevelFacts",
    "ImplicitMemoryLevelFacts",
    "MemoryHierarchyFacts",
    "MemoryLevelRelation",
    "MemoryRelationKind",
    "ParallelCapacityFacts",
    "ExchangeFacts",
    "EstimateFacts",
    "PerformanceServiceFacts",
    "ThroughputFacts",
    "TopologyLimitFacts",
    "FACTS_TYPES",
]


# --------------------------------------------------------------------------- checks

def _check_name(owner: str, field: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{owner}.{field} must be a non-empty str, got {value!r}")


def _check_int(owner: str, field: str, value: object, *, optional: bool = False,
               minimum: int = 0) -> None:
    if value is None and optional:
        return
    # bool is an int subclass and a float is never exact: refuse both.
    if isinstance(value, bool) or not isinstance(value, int):
        kind = "an int or None" if optional else "an int"
        raise TypeError(f"{owner}.{field} must be {kind}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{owner}.{field} must be >= {minimum}, got {value}")


def _key_name(key: object) -> str:
    """A dtype / kind / level key: a str, or a descriptor with a str ``name``."""
    if isinstance(key, str):
        return key
    name = getattr(key, "name", None)
    if isinstance(name, str):
        return name
    raise TypeError(f"expected a name string or an object with a 'name', got {key!r}")


def _rate_table(owner: str, field: str, value: object) -> tuple[tuple[str, int], ...]:
    """Normalise a ``((key, int), ...)`` table; keys unique and sorted by name."""
    if isinstance(value, dict):
        value = tuple(value.items())
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{owner}.{field} must be a tuple of (name, int) pairs, got {value!r}")
    rows: list[tuple[str, int]] = []
    for row in value:
        if not isinstance(row, (tuple, list)) or len(row) != 2:
            raise TypeError(f"{owner}.{field} entries must be (name, int) pairs, got {row!r}")
        key = _key_name(row[0])
        _check_int(owner, f"{field}[{key!r}]", row[1], minimum=1)
        rows.append((key, row[1]))
    keys = [k for k, _ in rows]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{owner}.{field} repeats a key: {keys}")
    return tuple(sorted(rows))


def _lookup(table: tuple[tuple[str, int], ...], key: object) -> int | None:
    name = _key_name(key)
    for k, v in table:
        if k == name:
            return v
    return None


# ------------------------------------------------------------------- topology limits

@frozen_dataclass
class TopologyLimitFacts:
    """The static limit a target places on one topology level's extent.

    Attributes:
        topology: The topology level name.
        max_static_extent: Largest admissible static extent, or None when the
            level has no finite limit (e.g. the CUDA ``cta`` launch shape).
    """

    topology: str
    max_static_extent: int | None

    def __post_init__(self) -> None:
        _check_name("TopologyLimitFacts", "topology", self.topology)
        _check_int("TopologyLimitFacts", "max_static_extent", self.max_static_extent,
                   optional=True, minimum=1)


# --------------------------------------------------------------------- memory (§1.2.2)

class MemoryRelationKind(Enum):
    """How two memory levels are related."""

    CACHES = "caches"
    SHARES_CAPACITY_WITH = "shares_capacity_with"


@frozen_dataclass
class ExplicitMemoryLevelFacts:
    """A level a program places values in by name.

    Attributes:
        name: The storage level name.
        capacity_bytes: Stated capacity, or None when unknown.
        scope: The topology level the capacity is stated per.
        owner: The topology whose units own separate values, or ``target``.
    """

    name: str
    capacity_bytes: int | None
    scope: str
    owner: str

    def __post_init__(self) -> None:
        for f in ("name", "scope", "owner"):
            _check_name("ExplicitMemoryLevelFacts", f, getattr(self, f))
        _check_int("ExplicitMemoryLevelFacts", "capacity_bytes", self.capacity_bytes,
                   optional=True)


@frozen_dataclass
class ImplicitMemoryLevelFacts:
    """A level traffic passes through without being placed there (a cache).

    Attributes:
        name: The cache level name.
        capacity_bytes: Stated capacity, or None when unknown (or when it
            depends on the program through a sharing edge).
        scope: The topology level the capacity is stated per.
    """

    name: str
    capacity_bytes: int | None
    scope: str

    def __post_init__(self) -> None:
        for f in ("name", "scope"):
            _check_name("ImplicitMemoryLevelFacts", f, getattr(self, f))
        _check_int("ImplicitMemoryLevelFacts", "capacity_bytes", self.capacity_bytes,
                   optional=True)


@frozen_dataclass
class MemoryLevelRelation:
    """One edge between two memory levels.

    Attributes:
        kind: Which relationship this edge states.
        near: The level closer to the compute units.
        far: The level on the other side of the edge.
        shared_capacity_bytes: Size of the divided block, on a sharing edge.
    """

    kind: MemoryRelationKind
    near: str
    far: str
    shared_capacity_bytes: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, MemoryRelationKind):
            raise TypeError(f"MemoryLevelRelation.kind must be a MemoryRelationKind, got {self.kind!r}")
        _check_name("MemoryLevelRelation", "near", self.near)
        _check_name("MemoryLevelRelation", "far", self.far)
        _check_int("MemoryLevelRelation", "shared_capacity_bytes",
                   self.shared_capacity_bytes, optional=True)
        if self.kind is MemoryRelationKind.CACHES and self.shared_capacity_bytes is not None:
            raise ValueError("MemoryLevelRelation: a caches edge carries no shared_capacity_bytes")


@frozen_dataclass
class MemoryHierarchyFacts:
    """Every memory level of one target, as a flat graph.

    Attributes:
        explicit_levels: The levels a program names.
        implicit_levels: The levels traffic only passes through.
        relations: The edges between them.
    """

    explicit_levels: tuple[ExplicitMemoryLevelFacts, ...]
    implicit_levels: tuple[ImplicitMemoryLevelFacts, ...]
    relations: tuple[MemoryLevelRelation, ...]

    def __post_init__(self) -> None:
        for field, cls in (("explicit_levels", ExplicitMemoryLevelFacts),
                           ("implicit_levels", ImplicitMemoryLevelFacts),
                           ("relations", MemoryLevelRelation)):
            value = getattr(self, field)
            if isinstance(value, list):
                value = tuple(value)
                object.__setattr__(self, field, value)
            if not isinstance(value, tuple) or not all(isinstance(v, cls) for v in value):
                raise TypeError(f"MemoryHierarchyFacts.{field} must be a tuple of {cls.__name__}")
        names = [lv.name for lv in self.explicit_levels] + [lv.name for lv in self.implicit_levels]
        if len(set(names)) != len(names):
            raise ValueError(f"MemoryHierarchyFacts: a level name repeats: {names}")
        known = set(names)
        for rel in self.relations:
            for end in (rel.near, rel.far):
                if end not in known:
                    raise ValueError(f"MemoryHierarchyFacts: relation names unknown level {end!r}")


# ------------------------------------------------------------------ rates (§1.2.3)

@frozen_dataclass
class ThroughputFacts:
    """The whole-device rates a roofline bound divides the whole program's work by.

    Attributes:
        peak_flops_per_second: Published dense compute rates, ``(dtype name, FLOP/s)``
            sorted by dtype name. A dtype with no published rate is absent.
        memory_bandwidth_bytes_per_second: Published memory bandwidth, or None.
        bandwidth_level: Memory level whose traffic the bandwidth measures.
    """

    peak_flops_per_second: tuple[tuple[str, int], ...]
    memory_bandwidth_bytes_per_second: int | None
    bandwidth_level: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "peak_flops_per_second",
                           _rate_table("ThroughputFacts", "peak_flops_per_second",
                                       self.peak_flops_per_second))
        _check_int("ThroughputFacts", "memory_bandwidth_bytes_per_second",
                   self.memory_bandwidth_bytes_per_second, optional=True, minimum=1)
        _check_name("ThroughputFacts", "bandwidth_level", self.bandwidth_level)

    def peak_for(self, dtype: object) -> int | None:
        """The published FLOP/s for ``dtype`` (a name or a descriptor), else None."""
        return _lookup(self.peak_flops_per_second, dtype)


@frozen_dataclass
class PerformanceServiceFacts:
    """Everything one unit gets through, by the kind of work it is asked for.

    Attributes:
        unit_flops: One unit's floating-point rate, ``(dtype name, FLOP/s)``.
        unit_ops: One unit's rate per service kind (``integer``, ``predicate``,
            ``select``, ``special``), ``(kind, op/s)``.
        unit_bandwidth: One unit's rate per memory level, ``(level, B/s)``.
        unit: Topology level these throughputs describe.
    """

    unit_flops: tuple[tuple[str, int], ...]
    unit_ops: tuple[tuple[str, int], ...]
    unit_bandwidth: tuple[tuple[str, int], ...]
    unit: str

    def __post_init__(self) -> None:
        for f in ("unit_flops", "unit_ops", "unit_bandwidth"):
            object.__setattr__(self, f, _rate_table("PerformanceServiceFacts", f,
                                                    getattr(self, f)))
        _check_name("PerformanceServiceFacts", "unit", self.unit)

    def flops(self, dtype: object) -> int | None:
        """One unit's FLOP/s for ``dtype``, or None when the target states none."""
        return _lookup(self.unit_flops, dtype)

    def ops(self, kind: str) -> int | None:
        """One unit's op/s for a service kind, or None when unstated."""
        return _lookup(self.unit_ops, kind)

    def bandwidth(self, level: str) -> int | None:
        """One unit's B/s at a memory level, or None when unstated."""
        return _lookup(self.unit_bandwidth, level)


# --------------------------------------------------------------- capacity (§1.2.4)

@frozen_dataclass
class ParallelCapacityFacts:
    """The parallel capacity assumed by performance analysis (compiler policy).

    Attributes:
        topology: Topology level being measured over.
        parallel_units: Instances admitted concurrently.
    """

    topology: str
    parallel_units: int

    def __post_init__(self) -> None:
        _check_name("ParallelCapacityFacts", "topology", self.topology)
        _check_int("ParallelCapacityFacts", "parallel_units", self.parallel_units, minimum=1)


# --------------------------------------------------------------- exchange (collectives)

@frozen_dataclass
class ExchangeFacts:
    """What one unit of a topology level moves to and from the others.

    Attributes:
        level: The topology level whose units exchange.
        bandwidth_bytes_per_second: One unit's exchange bandwidth, or None when
            the target's documents publish none.
        reason: Why the figure is absent (the document's conditions); empty when
            it is stated.
    """

    level: str
    bandwidth_bytes_per_second: int | None
    reason: str = ""

    def __post_init__(self) -> None:
        _check_name("ExchangeFacts", "level", self.level)
        if self.bandwidth_bytes_per_second is not None:
            _check_int("ExchangeFacts", "bandwidth_bytes_per_second",
                       self.bandwidth_bytes_per_second, minimum=1)


# ---------------------------------------------------------------- estimate (issue 37)

@frozen_dataclass
class EstimateFacts:
    """What the hardware sustains, beside the peaks: the estimate family's only
    view of a GPU. Every field is a document fact with its source; a fact the
    documents state as unavailable is None and its effect is not modelled.

    Attributes:
        sm_count: Streaming multiprocessors (CTA slots are per SM).
        tensor_flops_per_second: Dense tensor-core peak per dtype, ``(dtype, FLOP/s)``.
        core_flops_per_second: CUDA-core FP32 peak (every non-tensor flop runs there).
        special_ops_per_second_per_sm: Special-function results per second per SM.
        integer_ops_per_second_per_sm: Integer / predicate / select results per second per SM.
        tensor_efficiency_ppm: Fraction of the tensor peak a main loop sustains, in ppm.
        hbm_bandwidth: Peak DRAM bandwidth, B/s.
        hbm_efficiency_ppm: Fraction of it a streaming kernel sustains, in ppm.
        l2_capacity: L2 bytes, or None.
        l2_bandwidth: Sustained L2 read bandwidth, B/s, or None.
        dram_latency_ns: One dependent load's DRAM round trip, or None.
        shared_bandwidth_per_sm: Shared-memory bytes per second per SM, or None.
        graph_gap_ns: Idle time between two kernels of a CUDA graph, or None.
        stream_interval_ns: Start-to-start interval of stream launches, or None.
        shared_per_sm: Shared-memory bytes one SM holds for its resident CTAs.
        registers_per_sm: Register-file bytes of one SM.
        max_ctas_per_sm: Resident CTA ceiling per SM.
        max_threads_per_sm: Resident thread ceiling per SM, or None.
    """

    sm_count: int
    tensor_flops_per_second: tuple[tuple[str, int], ...]
    core_flops_per_second: int
    special_ops_per_second_per_sm: int | None
    integer_ops_per_second_per_sm: int | None
    tensor_efficiency_ppm: int
    hbm_bandwidth: int
    hbm_efficiency_ppm: int
    l2_capacity: int | None
    l2_bandwidth: int | None
    dram_latency_ns: int | None
    shared_bandwidth_per_sm: int | None
    graph_gap_ns: int | None
    stream_interval_ns: int | None
    shared_per_sm: int
    registers_per_sm: int
    max_ctas_per_sm: int
    max_threads_per_sm: int | None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tensor_flops_per_second",
                           _rate_table("EstimateFacts", "tensor_flops_per_second",
                                       self.tensor_flops_per_second))
        for name in ("sm_count", "core_flops_per_second", "hbm_bandwidth", "shared_per_sm",
                     "registers_per_sm", "max_ctas_per_sm"):
            _check_int("EstimateFacts", name, getattr(self, name), minimum=1)
        for name in ("tensor_efficiency_ppm", "hbm_efficiency_ppm"):
            _check_int("EstimateFacts", name, getattr(self, name), minimum=1)
            if getattr(self, name) > 1_000_000:
                raise ValueError(f"EstimateFacts.{name} must be <= 1000000 ppm, got "
                                 f"{getattr(self, name)}")
        for name in ("special_ops_per_second_per_sm", "integer_ops_per_second_per_sm",
                     "l2_capacity", "l2_bandwidth", "shared_bandwidth_per_sm",
                     "max_threads_per_sm"):
            _check_int("EstimateFacts", name, getattr(self, name), optional=True, minimum=1)
        for name in ("dram_latency_ns", "graph_gap_ns", "stream_interval_ns"):
            _check_int("EstimateFacts", name, getattr(self, name), optional=True, minimum=0)

    def tensor_for(self, dtype: object) -> int | None:
        """The dense tensor-core FLOP/s for ``dtype``, else None (no tensor path)."""
        return _lookup(self.tensor_flops_per_second, dtype)


#: Every Facts aggregate a target may project, in documentation order.
FACTS_TYPES = (
    TopologyLimitFacts,
    MemoryHierarchyFacts,
    ThroughputFacts,
    PerformanceServiceFacts,
    ParallelCapacityFacts,
    ExchangeFacts,
    EstimateFacts,
)

"""``AmxTarget``: Apple's AMX coprocessor on an Apple-silicon device.

``AmxTarget()`` is the ``apple.amx`` architecture document plus the
``apple.m2_pro`` device document. Every number is read from those documents.
"""
from __future__ import annotations

from typing import Any, ClassVar

from tilefoundry.ir.frozen import frozen_dataclass
from tilefoundry.target.document_target import (
    DocumentTarget,
    facts_module,
)
from tilefoundry.target.registry import register_target

# Facts dataclasses and the document loader are imported inside the methods
# that need them, so importing this module stays cheap.

__all__ = ["AmxTarget"]


@register_target
@frozen_dataclass(repr=False)
class AmxTarget(DocumentTarget):
    """Apple AMX, selected by device document id (default ``"apple.m2_pro"``).

    Levels: ``core`` (performance cores) over ``amx`` (units per core). It
    projects memory, throughput and parallel capacity, and states no
    ``PerformanceServiceFacts``.
    """

    device: str = "apple.m2_pro"

    name: ClassVar[str] = "amx"
    topology_levels: ClassVar[tuple[str, ...]] = ("core", "amx")
    symbolic_extents: ClassVar[bool] = False
    family: ClassVar[str] = "amx"

    @property
    def supported_compute_dtypes(self) -> tuple[str, ...]:
        return self.architecture_document.value("instruction.compute_dtypes")

    # ----------------------------------------------------------------- topology

    def _max_static_extent(self, level: str) -> int | None:
        if level == "core":
            return self.device_document.int_value("compute.performance_core_count")
        return self.architecture_document.int_value("compute.units_per_core")

    # -------------------------------------------------------------------- facts

    def _facts_projections(self) -> dict[type, Any]:
        F = facts_module()
        table = super()._facts_projections()
        table.update({
            F.MemoryHierarchyFacts: self._memory_hierarchy,
            F.ThroughputFacts: self._throughput,
            F.ParallelCapacityFacts: self._parallel_capacity,
        })
        return table

    def _memory_hierarchy(self, query: object) -> Any:
        F = facts_module()
        self._no_query(F.MemoryHierarchyFacts, query)
        dev, arch = self.device_document, self.architecture_document
        unified = dev.int_value("memory.unified.capacity")
        owner = dev.value("memory.unified.owner")
        explicit = (
            F.ExplicitMemoryLevelFacts("host", unified, "device", owner),
            F.ExplicitMemoryLevelFacts("gmem", unified, "device", owner),
            F.ExplicitMemoryLevelFacts("rmem", arch.int_value("register.resident_bytes"), "amx",
                                     arch.value("register.owner")),
        )
        implicit = (
            F.ImplicitMemoryLevelFacts("l1d", dev.int_value("memory.l1d.per_performance_core"),
                                     "core"),
            F.ImplicitMemoryLevelFacts("l2", dev.int_value("memory.l2.per_performance_cluster"),
                                     "cluster"),
        )
        relations = (  # no sharing edge: nothing here divides one block
            F.MemoryLevelRelation(F.MemoryRelationKind.CACHES, "l1d", "l2"),
            F.MemoryLevelRelation(F.MemoryRelationKind.CACHES, "l2", "gmem"),
        )
        return F.MemoryHierarchyFacts(explicit, implicit, relations)

    def _throughput(self, query: object) -> Any:
        F = facts_module()
        self._no_query(F.ThroughputFacts, query)
        doc = self.device_document
        peaks = tuple(
            (path.removeprefix("throughput.amx."), doc.int_value(path))
            for path in doc.facts
            if path.startswith("throughput.amx.") and doc.value(path) is not None
        )
        return F.ThroughputFacts(peaks, doc.int_value("memory.unified.bandwidth"), "gmem")

    def _parallel_capacity(self, query: object) -> Any:
        F = facts_module()
        self._no_query(F.ParallelCapacityFacts, query)
        return F.ParallelCapacityFacts(
            "core", self.device_document.int_value("compute.performance_core_count"))

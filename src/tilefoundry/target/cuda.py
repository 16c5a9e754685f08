"""``CudaTarget``: an NVIDIA device document plus its architecture document.

Every number is read from ``hardware/<device>.toml`` and the architecture
document it names; this module only states how the documents project onto the
Facts aggregates (companions.md §6.2–§6.5).
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

__all__ = ["CudaTarget", "SERVICE_KINDS"]

#: The service kinds a target may state (spec analysis.md §1.2.3).
SERVICE_KINDS = ("integer", "predicate", "select", "special")


@register_target
@frozen_dataclass(repr=False)
class CudaTarget(DocumentTarget):
    """An NVIDIA GPU, selected by device document id (``"nvidia.h200_sxm"``)."""

    device: str

    name: ClassVar[str] = "cuda"
    topology_levels: ClassVar[tuple[str, ...]] = ("cta", "thread")
    symbolic_extents: ClassVar[bool] = True
    family: ClassVar[str] = "cuda"

    def _arch(self, path: str) -> Any:
        return self.architecture_document.value(path)

    def _dev(self, path: str) -> Any:
        return self.device_document.value(path)

    def _dev_int(self, path: str) -> int | None:
        return self.device_document.int_value(path)

    def _arch_int(self, path: str) -> int | None:
        return self.architecture_document.int_value(path)

    @property
    def sm_count(self) -> int:
        return self._dev_int("compute.sm_count")

    @property
    def supported_compute_dtypes(self) -> tuple[str, ...]:
        return self._arch("instruction.compute_dtypes")

    # ----------------------------------------------------------------- topology

    def _max_static_extent(self, level: str) -> int | None:
        if level == "thread":
            return self._arch_int("compute.max_threads_per_cta")
        return None  # cta: the launch shape has no static limit

    def topology_limit(self, level: str) -> int | None:
        """``cta``: the SM count (used by scheduling); ``thread``: threads per CTA."""
        self._check_level(level)
        if level == "cta":
            return self.sm_count
        return self._max_static_extent(level)

    # -------------------------------------------------------------------- facts

    def _facts_projections(self) -> dict[type, Any]:
        F = facts_module()
        table = super()._facts_projections()
        table.update({
            F.MemoryHierarchyFacts: self._memory_hierarchy,
            F.ThroughputFacts: self._throughput,
            F.PerformanceServiceFacts: self._performance_service,
            F.ParallelCapacityFacts: self._parallel_capacity,
            F.EstimateFacts: self._estimate,
        })
        return table

    def _dense_peaks(self) -> tuple[tuple[str, int], ...]:
        doc = self.device_document
        rows = []
        for path in doc.facts:
            if path.startswith("throughput."):
                value = doc.int_value(path)
                if value is not None:
                    rows.append((path.removeprefix("throughput."), value))
        return tuple(sorted(rows))

    def _memory_hierarchy(self, query: object) -> Any:
        F = facts_module()
        self._no_query(F.MemoryHierarchyFacts, query)
        explicit = (
            F.ExplicitMemoryLevelFacts("gmem", self._dev_int("memory.hbm.capacity"), "device",
                                     self._dev("memory.hbm.owner")),
            F.ExplicitMemoryLevelFacts("smem", self._arch_int("memory.shared.per_cta"), "cta",
                                     self._arch("memory.shared.owner")),
            F.ExplicitMemoryLevelFacts("rmem", self._arch_int("memory.register.bytes_per_sm"),
                                     "sm", self._arch("memory.register.owner")),
            F.ExplicitMemoryLevelFacts("tmem", self._arch_int("memory.tensor.per_cta"), "cta",
                                     self._arch("memory.tensor.owner")),
        )
        implicit = (
            # L1's usable size is the shared block minus the program's smem peak:
            # it depends on the program, so it carries no fixed capacity.
            F.ImplicitMemoryLevelFacts("l1", None, "sm"),
            F.ImplicitMemoryLevelFacts("l2", self._dev_int("memory.l2.capacity"), "device"),
        )
        relations = (
            F.MemoryLevelRelation(F.MemoryRelationKind.CACHES, "l1", "l2"),
            F.MemoryLevelRelation(F.MemoryRelationKind.CACHES, "l2", "gmem"),
            F.MemoryLevelRelation(F.MemoryRelationKind.SHARES_CAPACITY_WITH, "l1", "smem",
                                self._arch_int("memory.unified_l1_shared.per_sm")),
        )
        return F.MemoryHierarchyFacts(explicit, implicit, relations)

    def _throughput(self, query: object) -> Any:
        F = facts_module()
        self._no_query(F.ThroughputFacts, query)
        return F.ThroughputFacts(self._dense_peaks(), self._dev_int("memory.hbm.bandwidth"), "gmem")

    def _performance_service(self, query: object) -> Any:
        F = facts_module()
        self._no_query(F.PerformanceServiceFacts, query)
        sms = self.sm_count
        unit_flops = tuple((dt, rate // sms) for dt, rate in self._dense_peaks())
        unit_ops = tuple(
            (kind, value) for kind in SERVICE_KINDS
            if (value := self._dev_int(f"service.{kind}")) is not None
        )
        bandwidth = self._dev_int("memory.hbm.bandwidth")
        unit_bandwidth = (("gmem", bandwidth // sms),) if bandwidth is not None else ()
        return F.PerformanceServiceFacts(unit_flops, unit_ops, unit_bandwidth, "cta")

    def _parallel_capacity(self, query: object) -> Any:
        F = facts_module()
        self._no_query(F.ParallelCapacityFacts, query)
        return F.ParallelCapacityFacts("cta", self.sm_count)

    def _estimate(self, query: object) -> Any:
        """What the estimate family reads: the sustained rates and latencies of the
        ``estimate.*`` facts beside the peaks, occupancy limits from the
        architecture. The tensor rows are the dense peaks of every dtype the
        architecture runs through its tensor cores (all but f32)."""
        F = facts_module()
        self._no_query(F.EstimateFacts, query)
        peaks = dict(self._dense_peaks())
        tensor = tuple((dt, rate) for dt, rate in peaks.items() if dt != "f32")
        shared_per_clock = self._arch_int("estimate.shared_bytes_per_clock_per_sm")
        clock = self._dev_int("compute.effective_clock")
        shared_bw = shared_per_clock * clock if shared_per_clock and clock else None
        return F.EstimateFacts(
            sm_count=self.sm_count,
            tensor_flops_per_second=tensor,
            core_flops_per_second=peaks["f32"],
            special_ops_per_second_per_sm=self._dev_int("service.special"),
            integer_ops_per_second_per_sm=self._dev_int("service.integer"),
            tensor_efficiency_ppm=self._dev_int("estimate.tensor.efficiency"),
            hbm_bandwidth=self._dev_int("memory.hbm.bandwidth"),
            hbm_efficiency_ppm=self._dev_int("estimate.hbm.efficiency"),
            l2_capacity=self._dev_int("memory.l2.capacity"),
            l2_bandwidth=self._dev_int("estimate.l2.bandwidth"),
            dram_latency_ns=self._dev_int("estimate.dram.latency"),
            shared_bandwidth_per_sm=shared_bw,
            graph_gap_ns=self._dev_int("estimate.launch.graph_gap"),
            stream_interval_ns=self._dev_int("estimate.launch.stream_interval"),
            shared_per_sm=self._arch_int("memory.shared.per_sm"),
            registers_per_sm=self._arch_int("memory.register.bytes_per_sm"),
            max_ctas_per_sm=self._arch_int("compute.max_resident_ctas_per_sm"),
            max_threads_per_sm=self._arch_int("compute.max_threads_per_sm"),
        )

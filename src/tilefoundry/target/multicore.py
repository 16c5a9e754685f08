"""``MultiCoreTarget``: a multi-core accelerator whose cores exchange tiles
directly (the inter-tile design thread's machine).

``MultiCoreTarget()`` is the ``ibm.spyre`` architecture document plus the
``ibm.spyre_32core`` device document: 32 cores as one topology level
(``core``), each owning a scratchpad. It projects only what those documents
state: the core limit and the core-to-core exchange bandwidth (unavailable,
with the documents' reason). Families needing more refuse with one line
(``memory: MultiCoreTarget (multicore): no Facts projection for ...``).
"""
from __future__ import annotations

from typing import Any, ClassVar

from tilefoundry.ir.frozen import frozen_dataclass
from tilefoundry.target.document_target import DocumentTarget, facts_module
from tilefoundry.target.registry import register_target

__all__ = ["MultiCoreTarget"]


@register_target
@frozen_dataclass(repr=False)
class MultiCoreTarget(DocumentTarget):
    """A multi-core accelerator, selected by device document id."""

    device: str = "ibm.spyre_32core"

    name: ClassVar[str] = "multicore"
    topology_levels: ClassVar[tuple[str, ...]] = ("core",)
    symbolic_extents: ClassVar[bool] = False
    family: ClassVar[str] = "multicore"

    def _max_static_extent(self, level: str) -> int | None:
        return self.device_document.int_value("compute.core_count")

    def _facts_projections(self) -> dict[type, Any]:
        F = facts_module()
        table = super()._facts_projections()
        table[F.ExchangeFacts] = self._exchange
        return table

    def _exchange(self, query: object) -> Any:
        F = facts_module()
        self._no_query(F.ExchangeFacts, query)
        fact = self.architecture_document.fact("interconnect.core.bandwidth")
        return F.ExchangeFacts("core", fact.value, fact.conditions if fact.value is None else "")

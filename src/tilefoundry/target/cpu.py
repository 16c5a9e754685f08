"""``CpuTarget()``: a host CPU stating no facts (companions.md §6.7).

No documents, no Facts projections, no topology levels: every declared level
is refused, and every Facts request fails at once. Only the target-free
compute-cost family can run on it.
"""
from __future__ import annotations

from typing import Any, ClassVar

from tilefoundry.ir.frozen import frozen_dataclass
from tilefoundry.target.base import Target
from tilefoundry.target.registry import register_target

__all__ = ["CpuTarget"]


@register_target
@frozen_dataclass(repr=False)
class CpuTarget(Target):
    """The host CPU, identity ``cpu``."""

    name: ClassVar[str] = "cpu"
    topology_levels: ClassVar[tuple[str, ...]] = ()

    def __repr__(self) -> str:
        return "CpuTarget()"

    @property
    def documents(self) -> tuple:
        return ()

    def _facts_projections(self) -> dict[type, Any]:
        return {}

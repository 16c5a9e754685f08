"""Targets: immutable values naming a machine, read by analysis through Facts.

Importing this package is cheap: names are loaded on first access (PEP 562)
and hardware documents are parsed on first use, so ``import tilefoundry.target``
costs about a millisecond and ``from tilefoundry.target import CudaTarget``
loads only the modules that class needs.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    # base contract and its errors
    "Target": "tilefoundry.target.base",
    "TargetError": "tilefoundry.target.base",
    "NoFactsProjectionError": "tilefoundry.target.base",
    "AnalyzerUnavailableError": "tilefoundry.target.base",
    "TopologyValidationError": "tilefoundry.target.base",
    "UnknownTargetError": "tilefoundry.target.base",
    "STANDARD_ANALYZERS": "tilefoundry.target.base",
    # Facts aggregates
    "TopologyLimitFacts": "tilefoundry.target.facts",
    "MemoryRelationKind": "tilefoundry.target.facts",
    "ExplicitMemoryLevelFacts": "tilefoundry.target.facts",
    "ImplicitMemoryLevelFacts": "tilefoundry.target.facts",
    "MemoryLevelRelation": "tilefoundry.target.facts",
    "MemoryHierarchyFacts": "tilefoundry.target.facts",
    "ThroughputFacts": "tilefoundry.target.facts",
    "PerformanceServiceFacts": "tilefoundry.target.facts",
    "ParallelCapacityFacts": "tilefoundry.target.facts",
    "EstimateFacts": "tilefoundry.target.facts",
    # registration, and the targets there are
    "register_target": "tilefoundry.target.registry",
    "registered_targets": "tilefoundry.target.catalog",
    "available_targets": "tilefoundry.target.catalog",
    "resolve_identity": "tilefoundry.target.catalog",
    # concrete targets
    "CudaTarget": "tilefoundry.target.cuda",
    "AmxTarget": "tilefoundry.target.amx.target",
    "CpuTarget": "tilefoundry.target.cpu",
    "MultiCoreTarget": "tilefoundry.target.multicore",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tilefoundry.target' has no attribute '{name}'")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from tilefoundry.target.amx.target import AmxTarget
    from tilefoundry.target.base import (
        STANDARD_ANALYZERS, AnalyzerUnavailableError, NoFactsProjectionError, Target,
        TargetError, TopologyValidationError, UnknownTargetError)
    from tilefoundry.target.cpu import CpuTarget
    from tilefoundry.target.cuda import CudaTarget
    from tilefoundry.target.multicore import MultiCoreTarget
    from tilefoundry.target.facts import (
        ExplicitMemoryLevelFacts, ImplicitMemoryLevelFacts, MemoryHierarchyFacts,
        MemoryLevelRelation, MemoryRelationKind, ParallelCapacityFacts, ExchangeFacts,
        PerformanceServiceFacts, ThroughputFacts, TopologyLimitFacts, EstimateFacts)
    from tilefoundry.target.catalog import available_targets, registered_targets, resolve_identity
    from tilefoundry.target.registry import register_target

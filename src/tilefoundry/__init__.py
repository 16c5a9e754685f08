"""TileFoundry: static analysis of tile-level tensor programs.

The package root stays light: every public name (authoring.md §1.1) is
resolved on first access through module ``__getattr__``, so ``import
tilefoundry`` imports nothing heavy (no islpy, ortools or numpy).
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"  # keep equal to pyproject's [project] version

# public name -> (module path, attribute)
_LAZY = {
    "func": ("tilefoundry.dsl.decorators", "func"),
    "module": ("tilefoundry.dsl.decorators", "module"),
    "DType": ("tilefoundry.ir.dtype", "DType"),
    "DimVar": ("tilefoundry.ir.dim", "DimVar"),
    "ceildiv": ("tilefoundry.ir.dim", "ceildiv"),
    "DimVarRangePat": ("tilefoundry.ir.function", "DimVarRangePat"),
    "Pattern": ("tilefoundry.ir.function", "Pattern"),
    "Function": ("tilefoundry.ir.function", "Function"),
    "Module": ("tilefoundry.ir.module", "Module"),
    "Topology": ("tilefoundry.ir.shard", "Topology"),
    "Mesh": ("tilefoundry.ir.shard", "Mesh"),
    "Layout": ("tilefoundry.ir.shard", "Layout"),
    "ComposedLayout": ("tilefoundry.ir.shard", "ComposedLayout"),
    "LayoutBase": ("tilefoundry.ir.types.shard", "LayoutBase"),
    "IntTuple": ("tilefoundry.ir.types.shard", "IntTuple"),
    "ShardLayout": ("tilefoundry.ir.shard", "ShardLayout"),
    "ShardAttr": ("tilefoundry.ir.shard", "ShardAttr"),
    "Split": ("tilefoundry.ir.shard", "Split"),
    "Partial": ("tilefoundry.ir.shard", "Partial"),
    "Broadcast": ("tilefoundry.ir.shard", "Broadcast"),
    "Dynamic": ("tilefoundry.ir.shard", "Dynamic"),
    "S": ("tilefoundry.ir.shard", "S"),
    "P": ("tilefoundry.ir.shard", "P"),
    "B": ("tilefoundry.ir.shard", "B"),
    "TensorType": ("tilefoundry.ir.tensor_type", "TensorType"),
    "TupleType": ("tilefoundry.ir.tensor_type", "TupleType"),
    "Type": ("tilefoundry.ir.tensor_type", "Type"),
    "Expr": ("tilefoundry.ir.expr", "Expr"),
    "Var": ("tilefoundry.ir.expr", "Var"),
    "Constant": ("tilefoundry.ir.expr", "Constant"),
    "Call": ("tilefoundry.ir.expr", "Call"),
    "Op": ("tilefoundry.ir.expr", "Op"),
    "Tuple": ("tilefoundry.ir.expr", "Tuple"),
    "StorageKind": ("tilefoundry.ir.storage", "StorageKind"),
    "VerifyError": ("tilefoundry.errors", "VerifyError"),
    "TileFoundryError": ("tilefoundry.errors", "TileFoundryError"),
    "AnalysisError": ("tilefoundry.errors", "AnalysisError"),
    "SelectionError": ("tilefoundry.errors", "SelectionError"),
    "ArgumentError": ("tilefoundry.errors", "ArgumentError"),
    "load_selection": ("tilefoundry.dsl.loader", "load_selection"),
    # the Python API (docs/api.md)
    "analyze": ("tilefoundry.api", "analyze"),
    "run": ("tilefoundry.execution", "run"),
    "check": ("tilefoundry.execution", "check"),
    "load": ("tilefoundry.api", "load"),
    "place": ("tilefoundry.placer", "place"),
    "load_module_file": ("tilefoundry.dsl.loader", "load_module_file"),
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    spec = _LAZY.get(name)
    if spec is None:
        raise AttributeError(f"module 'tilefoundry' has no attribute {name!r}")
    value = getattr(importlib.import_module(spec[0]), spec[1])
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

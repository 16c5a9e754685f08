"""The authoring surface (authoring.md §1.1): what model files star-import.

``from tilefoundry.dsl import *`` binds exactly ``__all__`` — never ``range``,
``tile``, ``tuple`` or ``len``. The kind enums come from ``tilefoundry.ops`` on
first access (module ``__getattr__``), keeping this import light.
"""
from __future__ import annotations

from tilefoundry.dsl import T, storage, tf  # noqa: F401
from tilefoundry.dsl.annotations import ConstTensor, Tensor, where  # noqa: F401
from tilefoundry.dsl.decorators import func, module  # noqa: F401
from tilefoundry.ir.dim import DimVar, ceildiv  # noqa: F401
from tilefoundry.ir.function import DimVarRangePat, Pattern  # noqa: F401
from tilefoundry.ir.shard import B, Broadcast, Mesh, P, Partial, S, Split, Topology  # noqa: F401

__all__ = [
    "tf", "T", "ConstTensor", "Tensor", "func", "Pattern", "DimVarRangePat", "DimVar", "ceildiv",
    "Mesh", "Topology", "Split", "Partial", "Broadcast", "S", "P", "B",
    "ReduceKind", "UnaryKind", "BinaryKind",
]

_ENUMS = ("ReduceKind", "UnaryKind", "BinaryKind")


def __getattr__(name: str):
    if name in _ENUMS:
        import tilefoundry.ops as ops

        value = getattr(ops, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tilefoundry.dsl' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_ENUMS))

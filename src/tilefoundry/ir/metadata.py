"""Immutable expression metadata: at most one record per class per node,
outside equality, hash and repr (companions §3.2)."""
from __future__ import annotations

from tilefoundry.ir.immutable import ImmutableValue

from dataclasses import dataclass


class IRMetadata(ImmutableValue):
    """Base of every record attached to an expression or function."""


@dataclass(frozen=True)
class BindingMetadata(IRMetadata):
    """The name a value is bound to in the authored program or the inlined view."""

    name: str


@dataclass(frozen=True)
class SourceSpanMetadata(IRMetadata):
    """Where a node was written: file, 1-based line and column, and where it ends."""

    file: str
    line: int
    column: int
    end_line: int | None = None
    end_column: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class ExecutionDomainMetadata(IRMetadata):
    """Enclosing ``with Mesh`` scopes, outermost first."""

    scopes: tuple

    def at(self, level: str):
        for mesh in reversed(self.scopes):
            if any(t.name == level for t in mesh.topologies):
                return mesh
        return None


class MetadataHolder:
    """Mixin: a per-node map class -> record, never part of equality."""

    __slots__ = ()

    def get_metadata(self, cls):
        return self._metadata.get(cls)

    def with_metadata(self, record: IRMetadata):
        """Attach a record (replacing the one of its class)."""
        self._metadata[type(record)] = record
        return self

    @property
    def metadata(self) -> dict:
        return dict(self._metadata)


def locator(node) -> str:
    """``<file>:<line>:<col>: binding=<name> op=<Op>`` (companions §3.2)."""
    span = node.get_metadata(SourceSpanMetadata)
    binding = node.get_metadata(BindingMetadata)
    name = binding.name if binding else "<unnamed>"
    op = getattr(getattr(node, "op", None), "class_name", type(node).__name__)
    text = f"binding={name} op={op}"
    return f"{span}: {text}" if span else text

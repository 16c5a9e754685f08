"""Immutable expression metadata: at most one record per class per node,
outside equality, hash and repr (companions §3.2)."""
from __future__ import annotations

from tilefoundry.ir.frozen import frozen_dataclass
from tilefoundry.ir.immutable import ImmutableValue


class IRMetadata(ImmutableValue):
    """Base of every record attached to an expression or function."""


@frozen_dataclass
class BindingMetadata(IRMetadata):
    """The name a value is bound to in the authored program or the inlined view."""

    name: str


@frozen_dataclass
class AuthoredNameMetadata(IRMetadata):
    """On an analysed view's node: the name the authored program bound its value
    to. The view renames every call ``v<k>`` (companions §3.1), a name the user
    never wrote, so a refusal about a value reads this one."""

    name: str


@frozen_dataclass
class CallPathMetadata(IRMetadata):
    """On an analysed view's primitive: the Function calls it was inlined through,
    outermost first, each named as written (a child Module by the attribute it is
    called through, ``layer3``; a sibling kernel by its name, ``attention``). The
    view flattens calls; this keeps which call of the entry a statement belongs to
    (``analyze --breakdown``)."""

    path: tuple

    @property
    def call(self) -> str:
        """The entry's own call this statement belongs to."""
        return self.path[0]


@frozen_dataclass
class SourceSpanMetadata(IRMetadata):
    """Where a node was written: file, 1-based line and column, and where it ends."""

    file: str
    line: int
    column: int
    end_line: int | None = None
    end_column: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@frozen_dataclass
class ExecutionDomainMetadata(IRMetadata):
    """Enclosing ``with Mesh`` scopes, outermost first, and where each was
    opened (``file:line:col`` of its ``with``, or ``""``), one per scope."""

    scopes: tuple
    sites: tuple = ()

    def site_of(self, mesh) -> str | None:
        """Where the ``with`` opening ``mesh`` was written, if recorded."""
        for scope, site in zip(self.scopes, self.sites):
            if scope == mesh and site:
                return site
        return None

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

    def records_of(self, classes) -> list:
        """This node's records of ``classes``, in that order, leaving out a
        class it holds none of (one call where a renderer asks for several)."""
        return [record for record in map(self._metadata.get, classes) if record is not None]

    def with_metadata(self, record: IRMetadata):
        """Attach a record (replacing the one of its class)."""
        self._metadata[type(record)] = record
        return self

    @property
    def metadata(self) -> dict:
        return dict(self._metadata)


def value_name(node) -> str:
    """How a refusal names a value: the name the user bound it to where the
    program names it (``AuthoredNameMetadata``), else the view's ``v<k>`` the
    typed program prints, else ``<unnamed>``."""
    authored = node.get_metadata(AuthoredNameMetadata)
    if authored is not None:
        return authored.name
    binding = node.get_metadata(BindingMetadata)
    return binding.name if binding else "<unnamed>"


def locator(node) -> str:
    """``<file>:<line>:<col>: binding=<name> op=<Op>`` (companions §3.2)."""
    span = node.get_metadata(SourceSpanMetadata)
    name = value_name(node)
    op = getattr(getattr(node, "op", None), "class_name", type(node).__name__)
    text = f"binding={name} op={op}"
    return f"{span}: {text}" if span else text

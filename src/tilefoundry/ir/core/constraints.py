"""Schedule constraints recorded by ``y: where(...)`` (authoring.md §3.4)."""
from __future__ import annotations

from tilefoundry.ir.frozen import frozen_dataclass
from tilefoundry.ir.metadata import IRMetadata


@frozen_dataclass
class WhereMetadata(IRMetadata):
    """``layout``: tuple of entries (``None`` = wildcard ``_``, an int/dim, or
    ``(extent, topology_name)`` for ``extent @ topo``); ``bindings``: tuple of
    ``(topology_name, "B" | "P:<reduction>")``; ``mesh``/``storage`` as given;
    ``location``: ``file:line:col`` of the annotation."""

    layout: tuple | None = None
    bindings: tuple = ()
    mesh: object = None
    storage: object = None
    location: str = ""

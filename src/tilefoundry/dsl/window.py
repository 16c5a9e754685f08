"""The loop window of ``for w in tile(E, step)`` (authoring.md §5.5, §5.6)."""
from __future__ import annotations


class Window:
    """``w`` of ``for w in tile(E, step)``: a window ``[w + offset, w + offset + step)``."""

    __slots__ = ("var", "step", "extent", "offset")

    def __init__(self, var, step, extent, offset=0):
        self.var, self.step, self.extent, self.offset = var, step, extent, offset

    def moved(self, offset: int) -> "Window":
        return Window(self.var, self.step, self.extent, self.offset + offset)

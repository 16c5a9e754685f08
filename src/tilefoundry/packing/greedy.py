"""A first-fit pass, largest buffer first, tried before any search.

Why: each node of either search costs about buffers x sections, so a large
input with room to spare (thousands of buffers, capacity well above the live
peak) spends its whole time limit in the first few hundred nodes, although
almost any arrangement fits. First fit by decreasing size (each buffer at the
lowest address where it meets no buffer already placed that is live at the
same time) settles such inputs in a pass of ``n`` steps. It proves nothing when
it fails, so a failure only hands the question to the search; a packing it
finds passes the validator like any other and is recorded as settled by
``greedy``. On the tight MiniMalloc cases it fails within milliseconds.
"""
from __future__ import annotations

__all__ = ["first_fit"]


def first_fit(buffers, capacity: int, deadline: float | None = None):
    """Offsets (one per buffer, input order) of a first-fit packing within
    ``capacity``, or None when one buffer finds no room below it or the
    ``deadline`` (``time.perf_counter``) passes: a step costs the buffers
    placed so far, so a huge input all live at once could otherwise outlast
    the time limit."""
    import time

    import numpy as np

    starts = np.array([b.start for b in buffers], dtype=np.int64)
    ends = np.array([b.end for b in buffers], dtype=np.int64)
    sizes = np.array([b.size for b in buffers], dtype=np.int64)
    offsets = [0] * len(buffers)  # a zero-byte buffer meets nothing at offset 0
    placed = _Placed(len(buffers))
    # largest first (longest lifetime among equals): the big ones shape the
    # packing, the small ones fill the gaps they leave
    for step, k in enumerate(np.lexsort((starts, starts - ends, -sizes)).tolist()):
        size = int(sizes[k])
        if size == 0:
            break  # the rest are zero-byte too
        if deadline is not None and not step % 256 and time.perf_counter() > deadline:
            return None
        at = placed.lowest_gap(int(starts[k]), int(ends[k]), size)
        if at + size > capacity:
            return None
        placed.add(at, size, int(starts[k]), int(ends[k]))
        offsets[k] = at
    return offsets


class _Placed:
    """The buffers placed so far, kept in address order (insertion shifts the
    tail in place), so that the ones live beside a new buffer come out already
    sorted by bottom: a first-fit step is a few passes over them, no sort."""

    def __init__(self, n: int):
        import numpy as np

        self.count = 0
        self.bottom, self.top, self.start, self.end = (np.empty(n, dtype=np.int64) for _ in range(4))

    def lowest_gap(self, start: int, end: int, size: int) -> int:
        """The lowest address at which ``size`` bytes meet no placed buffer
        live over [start, end): in bottom order, the gap before range i starts
        at the highest top of the ranges before it."""
        import numpy as np

        m = self.count
        beside = (self.start[:m] < end) & (self.end[:m] > start)
        bottoms, tops = self.bottom[:m][beside], self.top[:m][beside]
        if not bottoms.size:
            return 0
        floors = np.concatenate(([0], np.maximum.accumulate(tops)))
        ceilings = np.append(bottoms, np.iinfo(np.int64).max)
        return int(floors[np.argmax(ceilings - floors >= size)])  # the last gap is open-ended

    def add(self, at: int, size: int, start: int, end: int) -> None:
        import numpy as np

        m = self.count
        i = int(np.searchsorted(self.bottom[:m], at))
        for column, value in ((self.bottom, at), (self.top, at + size), (self.start, start),
                              (self.end, end)):
            column[i + 1:m + 1] = column[i:m]
            column[i] = value
        self.count = m + 1

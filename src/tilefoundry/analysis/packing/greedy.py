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


def first_fit(buffers, capacity: int):
    """Offsets (one per buffer, input order) of a first-fit packing within
    ``capacity``, or None when one buffer finds no room below it."""
    import numpy as np

    n = len(buffers)
    # the tables in start order, so that the buffers live beside one are a
    # window of them: started before it ends, and not before its start less
    # the longest lifetime
    by_start = sorted(range(n), key=lambda k: buffers[k].start)
    starts = np.array([buffers[k].start for k in by_start], dtype=np.int64)
    ends = np.array([buffers[k].end for k in by_start], dtype=np.int64)
    sizes = np.array([buffers[k].size for k in by_start], dtype=np.int64)
    longest = int((ends - starts).max(initial=0))
    # largest first (longest lifetime among equals): the big ones shape the
    # packing, the small ones fill the gaps they leave
    order = np.lexsort((starts, starts - ends, -sizes))
    offsets = np.zeros(n, dtype=np.int64)
    placed = np.zeros(n, dtype=bool)
    for k in order.tolist():
        size = int(sizes[k])
        if size == 0:
            continue  # a zero-byte buffer meets nothing at offset 0
        first = int(np.searchsorted(starts, starts[k] - longest, side="right"))
        last = int(np.searchsorted(starts, ends[k], side="left"))
        window = slice(first, last)
        beside = first + np.flatnonzero(placed[window] & (ends[window] > starts[k]))
        at = _lowest_gap(offsets[beside], offsets[beside] + sizes[beside], size)
        if at + size > capacity:
            return None
        offsets[k] = at
        placed[k] = True
    result = [0] * n
    for position, k in enumerate(by_start):
        result[k] = int(offsets[position])
    return result


def _lowest_gap(bottoms, tops, size: int) -> int:
    """The lowest address at which ``size`` bytes meet none of the ranges
    [bottom, top): in bottom order, the gap before range i starts at the
    highest top of the ranges before it."""
    import numpy as np

    if not bottoms.size:
        return 0
    by_bottom = np.argsort(bottoms)
    bottoms, tops = bottoms[by_bottom], tops[by_bottom]
    floors = np.concatenate(([0], np.maximum.accumulate(tops)))
    ceilings = np.append(bottoms, np.iinfo(np.int64).max)
    first = int(np.argmax(ceilings - floors >= size))  # the last gap is open-ended
    return int(floors[first])

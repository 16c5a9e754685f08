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

    starts = [b.start for b in buffers]
    ends = [b.end for b in buffers]
    sizes = [b.size for b in buffers]
    offsets = [0] * len(buffers)  # a zero-byte buffer meets nothing at offset 0
    placed = _Slotted.made(starts, ends, sizes) or _Placed(starts, ends)
    # largest first (longest lifetime among equals, then earliest; a stable
    # sort keeps input order past that): the big ones shape the packing, the
    # small ones fill the gaps they leave
    order = sorted(range(len(buffers)), key=lambda k: (-sizes[k], starts[k] - ends[k], starts[k]))
    for step, k in enumerate(order):
        size = sizes[k]
        if size == 0:
            break  # the rest are zero-byte too
        if deadline is not None and not step % 256 and time.perf_counter() > deadline:
            return None
        at = placed.lowest_gap(k, size)
        if at + size > capacity:
            return None
        placed.add(k, at, size)
        offsets[k] = at
    return offsets


def _lowest_floor(rows, size: int) -> int:
    """The lowest address below, between or above ``rows`` ((bottom, top, ...)
    in bottom order, all live beside the buffer) where ``size`` bytes fit: the
    gap before a row starts at the highest top of the rows before it."""
    floor = 0
    for row in rows:
        if row[0] - floor >= size:
            return floor
        floor = max(floor, row[1])
    return floor  # the last gap is open-ended


class _Slotted:
    """The placed buffers filed by time slot (the spans between consecutive
    distinct starts and ends): a buffer meets exactly the buffers filed in
    one of its slots, so a step reads the few live beside it, not every one
    placed. A whole model is thousands of short lifetimes, where this costs a
    few list reads a step instead of a numpy pass over everything placed."""

    SLOTS_PER_BUFFER = 16  # beyond this many slots a buffer on average, numpy's pass is cheaper

    def __init__(self, ranges: list, slots: int):
        self.ranges = ranges
        self.filed: list[list] = [[] for _ in range(slots)]

    @classmethod
    def made(cls, starts, ends, sizes):
        """The filing for these lifetimes, or None where ``_Placed`` is the
        better (or the only exact) pass: long lifetimes, or an empty one with
        bytes (it meets every buffer live across its instant, which no slot
        holds)."""
        if not starts or any(start >= end and size > 0 for start, end, size in zip(starts, ends, sizes)):
            return None
        times = sorted({*starts, *ends})
        slot_of = {time: slot for slot, time in enumerate(times)}
        ranges = [(slot_of[start], slot_of[end]) for start, end in zip(starts, ends)]
        if sum(high - low for low, high in ranges) > cls.SLOTS_PER_BUFFER * len(starts) + 4096:
            return None
        return cls(ranges, len(times))

    def lowest_gap(self, k: int, size: int) -> int:
        low, high = self.ranges[k]
        beside = {}
        for slot in self.filed[low:high]:
            for row in slot:
                beside[row[2]] = row
        return _lowest_floor(sorted(beside.values()), size)

    def add(self, k: int, at: int, size: int) -> None:
        row = (at, at + size, k)
        low, high = self.ranges[k]
        for slot in self.filed[low:high]:
            slot.append(row)


class _Placed:
    """The buffers placed so far, kept in address order (insertion shifts the
    tail in place), so that the ones live beside a new buffer come out already
    sorted by bottom: a first-fit step is a few numpy passes over them, no sort."""

    def __init__(self, starts, ends):
        import numpy as np

        n = len(starts)
        self.starts, self.ends = np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)
        self.count = 0
        self.bottom, self.top, self.start, self.end = (np.empty(n, dtype=np.int64) for _ in range(4))

    def lowest_gap(self, k: int, size: int) -> int:
        """The lowest address at which ``size`` bytes meet no placed buffer
        live over buffer k's lifetime (``_lowest_floor``, as array passes)."""
        import numpy as np

        m, start, end = self.count, self.starts[k], self.ends[k]
        beside = (self.start[:m] < end) & (self.end[:m] > start)
        bottoms, tops = self.bottom[:m][beside], self.top[:m][beside]
        if not bottoms.size:
            return 0
        floors = np.concatenate(([0], np.maximum.accumulate(tops)))
        ceilings = np.append(bottoms, np.iinfo(np.int64).max)
        return int(floors[np.argmax(ceilings - floors >= size)])  # the last gap is open-ended

    def add(self, k: int, at: int, size: int) -> None:
        import numpy as np

        m = self.count
        i = int(np.searchsorted(self.bottom[:m], at))
        for column, value in ((self.bottom, at), (self.top, at + size), (self.start, self.starts[k]),
                              (self.end, self.ends[k])):
            column[i + 1:m + 1] = column[i:m]
            column[i] = value
        self.count = m + 1
